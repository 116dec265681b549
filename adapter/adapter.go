// Package adapter maps each agent host's native hook input to the AARTS
// hook event the engine decides on, and renders the engine's answer in the
// host's native shape: one mapping core (this file) and one file per host.
// It does no I/O; the engine, the conformance suite and the MCP gateway
// share it.
package adapter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/action"
)

// Host is a host adapter: it maps the host's native hook input to the
// AARTS event the engine decides on, and renders the answer in the host's
// native shape.
type Host struct {
	Name string
	// Map maps one native input, received at at. Mapped.Event is nil for
	// a host event AARTS has no hook point for (nothing to judge).
	Map func(native []byte, at time.Time, autoApprove bool) (Mapped, error)
	// Render is the host's answer for r to its event named event ("" when
	// the name could not be read); input is the host's input as received
	// (a host whose answer depends on what it sent reads it).
	Render func(event string, input []byte, a Answer) json.RawMessage
	// Blocking reports whether the host waits for the answer to its event
	// and can block it. An unknown event counts as blocking.
	Blocking func(event string) bool
	// Notice reports whether event is a notice: the host goes on whatever
	// the answer, and Render gives it no decision there (a sub-agent
	// start, a session start). Its verdict is recorded with no host answer
	// and holds nothing for an approver. An input whose event cannot be told is no notice.
	Notice func(event string) bool
	// Allows, when set, reports whether the host carries out an allow
	// that brings no new input at event (switching its own approval off);
	// where it does not, such an allow gives it no decision, and is
	// recorded so. Nil: it does.
	Allows func(event string) bool
	// Asks, when set, reports whether the host prompts its user for an ask
	// at event (hostAsks: the hook's word that it does); where it does not,
	// an ask is answered and recorded as deny. Nil: it always does.
	Asks func(event string, hostAsks bool) bool
	// Defers, when set, reports whether, in a run no one attends, the
	// host can defer the call of input (its event named event): stop it
	// and end the run for its caller to resume once someone has decided.
	// Where it cannot, an unattended ask is a deny.
	Defers func(event string, input []byte) bool
	// Spawner, when set, finds in the host's own record of a sub-agent
	// (read: a file of it, on the engine's machine) the sub-agent that
	// started the one input is of: the spawner's session, "" when the
	// host started it from its own session; recorded is false where the
	// host keeps no record of it (yet).
	Spawner func(input []byte, read func(path string) ([]byte, error)) (spawner string, recorded bool)
}

// Mapped is a host input mapped to AARTS.
type Mapped struct {
	Native string // the host's event name
	Event  []byte // the AARTS hook event; nil when there is nothing to judge
}

// Hosts are the host adapters, by name.
var Hosts = map[string]*Host{
	"claude-code": {Name: "claude-code", Map: mapClaudeCode, Render: renderClaudeCode, Blocking: claudeCodeBlocking, Notice: notBlocking(claudeCodeBlocking), Asks: claudeCodeAsks, Defers: claudeCodeDefers, Spawner: claudeCodeSpawner},
	"cursor":      {Name: "cursor", Map: mapCursor, Render: renderCursor, Blocking: cursorBlocking, Notice: notBlocking(cursorBlocking, "postToolUse"), Asks: cursorAsks},
	"copilot":     {Name: "copilot", Map: mapCopilot, Render: renderCopilot, Blocking: copilotBlocking, Notice: notBlocking(copilotBlocking, "postToolUse", "PostToolUse"), Asks: copilotAsks},
	"gemini":      {Name: "gemini", Map: mapGemini, Render: renderGemini, Blocking: geminiBlocking, Notice: notBlocking(geminiBlocking), Asks: geminiAsks},
	qwenHost:      {Name: qwenHost, Map: mapQwen, Render: renderQwen, Blocking: qwenBlocking, Notice: notBlocking(qwenBlocking), Allows: func(e string) bool { return e != "PreToolUse" }, Asks: func(string, bool) bool { return false }},
	droidHost:     {Name: droidHost, Map: mapDroid, Render: renderDroid, Blocking: droidBlocking, Notice: notBlocking(droidBlocking), Asks: droidAsks},
	clineHost: {Name: clineHost, Map: mapCline, Render: renderCline, Blocking: clineBlocking, Notice: notBlocking(clineBlocking),
		Allows: func(e string) bool { return e != "tool_call" }, Asks: func(string, bool) bool { return false }},
	opencodeHost: opencodeHostFor(opencodeHost),
	kiloHost:     opencodeHostFor(kiloHost),
	"codex":      {Name: "codex", Map: mapCodex, Render: renderCodex, Blocking: codexBlocking, Notice: notBlocking(codexBlocking), Allows: codexAllows, Asks: codexAsks},
}

// notBlocking is a host's Notice: the events blocking says it cannot
// block, but for those named in acted (where the host still acts on a
// denial, replacing a tool's result).
func notBlocking(blocking func(string) bool, acted ...string) func(string) bool {
	return func(event string) bool {
		return event != "" && !blocking(event) && !slices.Contains(acted, event)
	}
}

// hostEvent starts the AARTS event an adapter maps a host input to: the
// session, the time it was received, the host and the working directory.
// "adapter" names the mapping, so that the verdict knows the host has a
// permission flow of its own (decide.HostAnswer).
func hostEvent(host, session, cwd string, now time.Time) map[string]any {
	return map[string]any{
		"session_id": session, "timestamp": now.UTC().Format(time.RFC3339Nano), "host_id": host,
		"aarts_version": aarts.Version, "cwd": cwd, "adapter": host,
	}
}

// setTool makes e a tool event: the hook point, the call's turn, its
// native tool name mapped through the taxonomy (and kept; a shell command
// that installs packages is package_install), its input and the artifacts
// it names (verbatim, AARTS §6.4.1).
func setTool(e map[string]any, hook, turn, native string, input any) {
	e["hook_point"] = hook
	e["turn_id"] = turn
	e["tool_name_native"] = native
	e["tool_input"] = input
	if raw, ok := input.(json.RawMessage); ok {
		_ = json.Unmarshal(raw, &input)
	}
	tool := aarts.StandardTool(native)
	if tool == aarts.ToolShell {
		// AARTS §7: package_install is derived from the shell command.
		cwd, _ := e["cwd"].(string)
		if action.InstallsPackages(native, input, cwd) {
			tool = aarts.ToolPackageInstall
		}
	}
	e["tool_name"] = tool
	e["artifacts"] = action.ToolArtifacts(native, input)
}

// setMCPServer records, with an MCP tool call, the server it goes to as
// the host configured it: its name, its URL or its command; the URL is a
// network_address artifact.
func setMCPServer(e map[string]any, name, url, command string) {
	e["mcp_server"] = map[string]any{"name": name, "url": url, "command": command}
	if url != "" {
		e["artifacts"] = append(e["artifacts"].([]aarts.Artifact), aarts.Artifact{Type: aarts.ArtifactNetworkAddress, Value: url, SourceField: "mcp_server.url"})
	}
}

// setCompact makes e a PreCompact event: the transcript about to be
// compacted, and why (a host's "manual" or "auto" trigger).
func setCompact(e map[string]any, turn, transcript, trigger string) {
	e["hook_point"] = "PreCompact"
	e["turn_id"] = turn
	e["context_before"] = transcript
	e["compaction_reason"] = map[string]string{"manual": "user_triggered", "auto": "token_limit"}[trigger]
}

// Reason is the reason a host shows for a.
func Reason(a Answer) string {
	if reason := strings.Join(a.Reasons, "; "); reason != "" {
		return "agentledger: " + reason
	}
	return "agentledger: " + a.ReasonCode
}

// Named returns the adapter of a host, or nil.
func Named(name string) *Host { return Hosts[name] }

// Answer is what a host is told about one of its events: the engine's
// verdict as a renderer reads it.
type Answer struct {
	// Decision is allow, deny or ask (aarts). An allow that rests on no
	// explicit allow (HostAnswer not allow) gives the host no decision.
	Decision string
	// HostAnswer is what a host with a permission flow of its own is
	// answered (aarts.VerdictRecord.HostAnswer).
	HostAnswer string
	Reasons    []string
	ReasonCode string
	// Rewrite, when set, is the tool input the call is to run with
	// instead (AARM MODIFY); a host that cannot replace input at the event
	// is answered deny.
	Rewrite map[string]any
	// Withheld, for a denied tool result, is what the model may see
	// instead.
	Withheld json.RawMessage
}

// WithheldNotice opens every string of a tool result withheld whole.
const WithheldNotice = "agentledger withheld this tool result: "

// callTurn is the turn of a call whose host names no call (Copilot, Gemini
// CLI): its tool and arguments, which the call and its result share.
func callTurn(tool string, args any) string {
	canon, _ := json.Marshal(args)
	sum := sha256.Sum256(append([]byte(tool+"\x00"), canon...))
	return "call-" + hex.EncodeToString(sum[:8])
}
