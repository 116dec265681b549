package adapter

import (
	"encoding/json"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// Qwen Code's command hooks (0.24.4; a Gemini CLI fork whose hooks take
// Claude Code's shape: session_id, hook_event_name, tool_name, tool_input,
// tool_use_id on stdin; Gemini CLI's tool names, MCP tools as
// mcp__SERVER__TOOL; a sub-agent's calls carry its agent_id under the
// parent's session_id). What Qwen Code carries out, as measured:
//   - PreToolUse: a block (permissionDecision deny, or exit 2). Its hook
//     runs after its own approval, so an allow switches nothing off (an
//     allow gives it no decision, and is recorded so), and an ask, which it
//     carries out as a block headless, is answered and recorded as a deny
//     held for an approver. It ignores updatedInput: a rewrite is a deny.
//   - UserPromptSubmit: a block.
//   - PostToolUse: nothing that keeps the result from the model (it may
//     only stop the run), so the event is a notice: a secret in a result
//     is sealed in the record and reaches the model.
//   - The rest are recorded; agentledger stops nothing there.
// A hook that cannot start, crashes or times out lets the call run: the
// project's wrapper blocks instead (exit 2) when agentledger is missing.

// qwenHost is the adapter's name.
const qwenHost = "qwen-code"

func mapQwen(native []byte, at time.Time, autoApprove bool) (Mapped, error) {
	in, err := parseClaudeLike(qwenHost, native)
	if err != nil {
		return Mapped{}, err
	}
	return mapClaudeLike(qwenHost, in, at, autoApprove)
}

// qwenBlocking: the Qwen Code events whose answer agentledger uses to stop
// something.
func qwenBlocking(event string) bool {
	switch event {
	case "PreToolUse", "UserPromptSubmit":
		return true
	}
	return false
}

// renderQwen renders an answer as Qwen Code reads it on stdout.
func renderQwen(event string, _ []byte, r Answer) json.RawMessage {
	out := map[string]any{}
	switch event {
	case "PreToolUse":
		if r.Decision != aarts.Allow || r.Rewrite != nil {
			reason := Reason(r)
			if r.Decision == aarts.Allow {
				reason = "agentledger: this call would run only with rewritten input, which Qwen Code cannot apply"
			}
			out = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PreToolUse", "permissionDecision": aarts.Deny, "permissionDecisionReason": reason}}
		}
	case "UserPromptSubmit":
		if r.Decision != aarts.Allow {
			out = map[string]any{"decision": "block", "reason": Reason(r)}
		}
	}
	b, _ := json.Marshal(out)
	return b
}
