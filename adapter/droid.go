package adapter

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// Factory's Droid CLI (0.225.2) runs command hooks of Claude Code's shape
// (session_id, hook_event_name, tool_name, tool_input on stdin; no id of
// the call), with tools of its own: Execute (shell), Create, Edit,
// ApplyPatch, Read; an MCP tool is SERVER___TOOL. What Droid carries out,
// as measured:
//   - PreToolUse: a deny (permissionDecision, or exit 2); an allow skips
//     its own permission check (only an explicit allow is given); input to
//     run with (updatedInput, merged into the call's). An ask falls through
//     to its own check, whatever that allows, so it is answered and
//     recorded as a deny held for an approver.
//   - PostToolUse: nothing (a top-level block is ignored: the model sees
//     the result), so the event is a notice.
//   - UserPromptSubmit: a block.
// A hook that cannot start, crashes or times out lets the call run: the
// project's wrapper blocks instead (exit 2) when agentledger is missing.
// A sub-agent is a session of its own, whose SessionStart names its
// caller (calling_session_id, kept in the event's environment).

// droidHost is the adapter's name.
const droidHost = "droid"

func mapDroid(native []byte, at time.Time, autoApprove bool) (Mapped, error) {
	in, err := parseClaudeLike(droidHost, native)
	if err != nil {
		return Mapped{}, err
	}
	host := ""
	if server, tool, ok := strings.Cut(in.ToolName, "___"); ok && server != "" && tool != "" && !strings.HasPrefix(in.ToolName, "mcp__") {
		host, in.ToolName = in.ToolName, "mcp__"+server+"__"+tool
	}
	if in.ToolUseID == "" && in.ToolName != "" {
		// Droid names no call: its tool and arguments, which the call and
		// its result share, are its turn.
		var args any
		_ = json.Unmarshal(in.ToolInput, &args)
		in.ToolUseID = callTurn(in.ToolName, args)
	}
	e, err := in.event(droidHost, at)
	if e != nil && host != "" {
		e["tool_name_host"] = host // agentledger extension: Droid's own name for it
	}
	if e != nil {
		// Droid names no sub-agent in a call's input (a sub-agent is a
		// session of its own): no provenance is claimed either way.
		delete(e, "is_sub_agent")
	}
	if env, ok := e["environment"].(map[string]any); ok && in.CallingSessionID != "" {
		// A sub-agent's session: Droid reports no spawn its caller's
		// session could bound it by, so the caller is named, not inherited
		// from.
		env["calling_session_id"] = in.CallingSessionID
	}
	return mapped(in.HookEventName, e, err, autoApprove)
}

// droidBlocking: the Droid events whose answer agentledger uses to stop
// something.
func droidBlocking(event string) bool {
	switch event {
	case "PreToolUse", "UserPromptSubmit":
		return true
	}
	return false
}

// droidAsks: Droid's own check decides what an ask falls through to; an
// ask is answered and recorded as a deny.
func droidAsks(string, bool) bool { return false }

// renderDroid renders an answer as Droid reads it on stdout.
func renderDroid(event string, _ []byte, r Answer) json.RawMessage {
	out := map[string]any{}
	switch event {
	case "PreToolUse":
		hso := map[string]any{"hookEventName": "PreToolUse"}
		switch {
		case r.Decision != aarts.Allow:
			hso["permissionDecision"], hso["permissionDecisionReason"] = aarts.Deny, Reason(r)
		case r.HostAnswer == aarts.Allow:
			hso["permissionDecision"] = aarts.Allow
		}
		if r.Decision == aarts.Allow && r.Rewrite != nil {
			hso["updatedInput"] = r.Rewrite
		}
		if len(hso) > 1 {
			out = map[string]any{"hookSpecificOutput": hso}
		}
	case "UserPromptSubmit":
		if r.Decision != aarts.Allow {
			out = map[string]any{"decision": "block", "reason": Reason(r)}
		}
	}
	b, _ := json.Marshal(out)
	return b
}
