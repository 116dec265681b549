package engine

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/decide"
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
	Render func(event string, input []byte, r HookResponse) json.RawMessage
	// Blocking reports whether the host waits for the answer to its event
	// and can block it. An unknown event counts as blocking.
	Blocking func(event string) bool
	// Asks, when set, reports whether the host prompts its user for an ask
	// at event (hostAsks: the hook's word that it does); where it does not,
	// an ask is answered and recorded as deny. Nil: it always does.
	Asks func(event string, hostAsks bool) bool
}

// Mapped is a host input mapped to AARTS.
type Mapped struct {
	Native string // the host's event name
	Event  []byte // the AARTS hook event; nil when there is nothing to judge
	// Resolved, for a host event that reports how the host resolved a
	// call it prompted for (Claude Code's PermissionDenied), says which
	// call and how; the engine records it against its ask, if it asked.
	Resolved *HostResolution
}

// HostResolution is how a host resolved, in its own prompt, a call an
// engine may have asked about.
type HostResolution struct {
	SessionID  string
	TurnID     string // the call's turn (Claude Code's tool_use_id)
	Resolution string // approved or denied
}

// Hosts are the host adapters, by name.
var Hosts = map[string]*Host{
	"claude-code": {Name: "claude-code", Map: mapClaudeCode, Render: renderClaudeCode, Blocking: claudeCodeBlocking},
	"cursor":      {Name: "cursor", Map: mapCursor, Render: renderCursor, Blocking: cursorBlocking, Asks: cursorAsks},
	"copilot":     {Name: "copilot", Map: mapCopilot, Render: renderCopilot, Blocking: copilotBlocking, Asks: copilotAsks},
	"gemini":      {Name: "gemini", Map: mapGemini, Render: renderGemini, Blocking: geminiBlocking, Asks: geminiAsks},
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
		if a := action.AnalyzeTool(native, input, cwd); a.Tool == aarts.ToolPackageInstall {
			tool = a.Tool
		}
	}
	e["tool_name"] = tool
	e["artifacts"] = action.InputArtifacts(input)
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

// hostReason is the reason a host shows for r.
func hostReason(r HookResponse) string {
	if reason := strings.Join(r.Reasons, "; "); reason != "" {
		return "agentledger: " + reason
	}
	return "agentledger: " + r.ReasonCode
}

// HostNamed returns the adapter of a host, or nil.
func HostNamed(name string) *Host { return Hosts[name] }

// ClaudeCodeInput is what Claude Code writes on a command hook's stdin.
type ClaudeCodeInput struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	HookEventName  string `json:"hook_event_name"`
	// PromptID names the user prompt being processed (Claude Code
	// 2.1.196+; absent before the first one): the turn of events that are
	// not a tool call.
	PromptID           string          `json:"prompt_id,omitempty"`
	ToolName           string          `json:"tool_name,omitempty"`
	ToolInput          json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID          string          `json:"tool_use_id,omitempty"`
	ToolResponse       json.RawMessage `json:"tool_response,omitempty"`
	Prompt             string          `json:"prompt,omitempty"`
	Source             string          `json:"source,omitempty"`
	Model              string          `json:"model,omitempty"`
	Reason             string          `json:"reason,omitempty"`
	Trigger            string          `json:"trigger,omitempty"`
	CustomInstructions string          `json:"custom_instructions,omitempty"`
	StopHookActive     bool            `json:"stop_hook_active,omitempty"`
	// Error, IsInterrupt and DurationMs are PostToolUseFailure's: what
	// went wrong with a call that ran (or could not start).
	Error         string `json:"error,omitempty"`
	IsInterrupt   bool   `json:"is_interrupt,omitempty"`
	DurationMs    int64  `json:"duration_ms,omitempty"`
	LastAssistant string `json:"last_assistant_message,omitempty"`
	// CompactSummary is PostCompact's: the summary the conversation goes
	// on from.
	CompactSummary string `json:"compact_summary,omitempty"`
}

// ParseClaudeCode reads a Claude Code hook input, naming what is missing.
func ParseClaudeCode(stdin []byte) (*ClaudeCodeInput, error) {
	var in ClaudeCodeInput
	if err := json.Unmarshal(bytes.TrimSpace(stdin), &in); err != nil {
		return nil, fmt.Errorf("claude code hook input is not a JSON object: %w", err)
	}
	switch {
	case in.SessionID == "":
		return nil, fmt.Errorf("claude code hook input: missing session_id")
	case in.HookEventName == "":
		return nil, fmt.Errorf("claude code hook input: missing hook_event_name")
	}
	if in.HookEventName == "PreToolUse" || in.HookEventName == "PostToolUse" || in.HookEventName == "PostToolUseFailure" {
		if in.ToolName == "" {
			return nil, fmt.Errorf("claude code %s input: missing tool_name", in.HookEventName)
		}
		if len(in.ToolInput) == 0 || in.ToolInput[0] != '{' {
			return nil, fmt.Errorf("claude code %s input: tool_input must be an object", in.HookEventName)
		}
	}
	return &in, nil
}

func mapClaudeCode(native []byte, at time.Time, autoApprove bool) (Mapped, error) {
	in, err := ParseClaudeCode(native)
	if err != nil {
		return Mapped{}, err
	}
	if in.HookEventName == "PermissionDenied" && in.ToolUseID != "" {
		return Mapped{Native: in.HookEventName, Resolved: &HostResolution{SessionID: in.SessionID, TurnID: in.ToolUseID, Resolution: "denied"}}, nil
	}
	ev, ok, err := in.AARTS(at)
	if err != nil || !ok {
		return Mapped{Native: in.HookEventName}, err
	}
	if autoApprove {
		var m map[string]any
		if err := json.Unmarshal(ev, &m); err != nil {
			return Mapped{}, err
		}
		m["auto_approve"] = true
		if ev, err = json.Marshal(m); err != nil {
			return Mapped{}, err
		}
	}
	return Mapped{Native: in.HookEventName, Event: ev}, nil
}

// claudeCodeBlocking: the Claude Code events whose answer can stop
// something (a tool call, a tool result reaching Claude, a prompt).
func claudeCodeBlocking(event string) bool {
	switch event {
	case "SessionStart", "SessionEnd", "Stop", "SubagentStop", "Notification", "PermissionDenied", "PostCompact":
		return false
	}
	return true
}

// AARTS maps a Claude Code hook input to the AARTS hook event the engine
// decides on, stamped at now: UserPromptSubmit is PreUserInput, Stop and
// SubagentStop are PreOutputDeliver (they end a turn, not the session), the
// tool names go through the taxonomy with the native name kept. ok is false
// for events AARTS has no hook point for (Notification).
func (in *ClaudeCodeInput) AARTS(now time.Time) (event []byte, ok bool, err error) {
	e := hostEvent("claude-code", in.SessionID, in.Cwd, now)
	turn := in.ToolUseID
	if turn == "" {
		turn = cmp.Or(in.PromptID, "turn")
	}
	switch in.HookEventName {
	case "PreToolUse":
		setTool(e, "PreToolUse", turn, in.ToolName, in.ToolInput)
		if in.PermissionMode != "" {
			// agentledger extension: whether the host will prompt at all.
			e["permission_mode"] = in.PermissionMode
		}
	case "PostToolUse":
		setTool(e, "PostToolUse", turn, in.ToolName, in.ToolInput)
		if len(in.ToolResponse) > 0 {
			e["tool_result"] = in.ToolResponse
		} else {
			e["tool_result"] = ""
		}
	case "PostToolUseFailure":
		// The call ran (or its process could not start) and failed: its
		// result is the error Claude receives as the tool's result.
		setTool(e, "PostToolUse", turn, in.ToolName, in.ToolInput)
		e["tool_result"] = map[string]any{"error": in.Error, "is_interrupt": in.IsInterrupt}
		e["tool_failed"] = true // agentledger extension: Claude Code's PostToolUseFailure
	case "UserPromptSubmit":
		e["hook_point"] = "PreUserInput"
		e["turn_id"] = turn
		e["raw_input"] = in.Prompt
		e["input_source"] = "keyboard"
	case "SessionStart":
		e["hook_point"] = "SessionStart"
		e["environment"] = map[string]any{"cwd": in.Cwd, "source": in.Source, "model": in.Model, "permission_mode": in.PermissionMode}
	case "SessionEnd":
		e["hook_point"] = "SessionEnd"
		e["reason"] = in.Reason
	case "Stop", "SubagentStop":
		e["hook_point"] = "PreOutputDeliver"
		e["turn_id"] = turn
		e["output_text"] = in.LastAssistant
	case "PreCompact":
		setCompact(e, turn, in.TranscriptPath, in.Trigger)
	case "PostCompact":
		// The conversation replaced by its summary: what the model goes on
		// from (the transcript before it stands by its path).
		e["hook_point"] = "PostCompact"
		e["turn_id"] = turn
		e["original_value"] = in.TranscriptPath
		e["modified_value"] = in.CompactSummary
		e["was_modified"] = true
		e["modifier_chain"] = []string{"claude-code:compact:" + in.Trigger}
	default:
		return nil, false, nil
	}
	raw, err := json.Marshal(e)
	return raw, true, err
}

// renderClaudeCode renders an answer as Claude Code expects it on stdout
// for the hook event. PreToolUse gets permissionDecision "allow" only when
// the recorded host answer is an explicit allow; any other allow (no
// explicit allow rule, a fail-open failure) gives no decision, so Claude
// Code's own permission flow still applies. A deny or ask maps as it is.
// PostToolUse and UserPromptSubmit get a block with its reason when denied;
// an event whose name could not be read, a block that every blocking event
// honours.
func renderClaudeCode(event string, input []byte, r HookResponse) json.RawMessage {
	reason := hostReason(r)
	var out any = map[string]any{}
	switch event {
	case "PreToolUse":
		decision := r.Decision
		rewrite := decide.RewrittenInput(r.Directives)
		if decision == aarts.Allow && rewrite != nil && r.HostAnswer == aarts.Ask {
			decision = aarts.Ask // the user approves the rewritten call
		}
		if decision == aarts.Allow && r.HostAnswer != aarts.Allow {
			break // no decision: Claude Code's own permission flow applies
		}
		hso := map[string]any{"hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": reason}
		if rewrite != nil && decision != aarts.Deny {
			hso["updatedInput"] = rewrite
		}
		out = map[string]any{"hookSpecificOutput": hso}
	case "PostToolUseFailure":
		// The error already reached Claude as the tool's result; a denial
		// says so next to it (Claude Code replaces no failed result).
		if r.Decision != aarts.Allow {
			out = map[string]any{"decision": "block", "reason": reason,
				"hookSpecificOutput": map[string]any{"hookEventName": "PostToolUseFailure", "additionalContext": reason}}
		}
	case "PostToolUse":
		if r.Decision != aarts.Allow { // no prompt here: ask is deny (AARTS §6.6)
			hso := map[string]any{"hookEventName": "PostToolUse", "additionalContext": withheldNotice + reason}
			if len(r.Withheld) > 0 {
				// The result Claude sees instead (Claude Code 2.1.121+ for
				// every tool; updatedMCPToolOutput before that, MCP only).
				hso["updatedToolOutput"] = r.Withheld
				if tool := probeToolName(input); strings.HasPrefix(tool, "mcp__") {
					hso["updatedMCPToolOutput"] = r.Withheld
				}
			}
			out = map[string]any{"decision": "block", "reason": reason, "hookSpecificOutput": hso}
		}
	case "UserPromptSubmit":
		if r.Decision != aarts.Allow {
			out = map[string]any{"decision": "block", "reason": reason}
		}
	default:
		if r.Decision != aarts.Allow && claudeCodeBlocking(event) {
			out = map[string]any{"decision": "block", "reason": reason}
		}
	}
	if event != "PreToolUse" && decide.RewrittenInput(r.Directives) != nil && claudeCodeBlocking(event) {
		// A rewrite Claude Code cannot apply at this event: deny instead.
		out = map[string]any{"decision": "block", "reason": "agentledger: this event's input would have to be rewritten, which Claude Code cannot do here"}
	}
	b, _ := json.Marshal(out)
	return b
}

// HostOutput is the line a hook of host prints for r: the host output the
// engine rendered, or, when r has none (no engine could be reached), r
// rendered for the host event named in input (as far as it can be read).
func HostOutput(host string, input []byte, r HookResponse) []byte {
	out := r.HostOutput
	if h := HostNamed(host); len(out) == 0 && h != nil {
		out = h.Render(ProbeHostEvent(input), input, renderable(r))
	}
	if len(out) == 0 {
		out = []byte("{}")
	}
	return append(bytes.Clone(out), '\n')
}

// probeToolName reads the tool_name of a host's input, or "".
func probeToolName(input []byte) string {
	var in struct {
		ToolName string `json:"tool_name"`
	}
	_ = json.Unmarshal(input, &in)
	return in.ToolName
}
