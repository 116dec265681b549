package adapter

import (
	"encoding/json"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// Codex CLI's command hooks (0.124.0+, on by default) take Claude Code's
// shape: the same members on stdin, the same hookSpecificOutput on stdout,
// plus turn_id on every event after SessionStart and PermissionRequest
// before Codex prompts its user. What Codex does with an answer differs,
// and the answers here are what it carries out:
//   - PreToolUse: a deny, or an allow that rewrites the input. An ask, or
//     an allow without new input, fails there and lets the call run, so an
//     ask is answered (and recorded) as a deny, and an allow as nothing:
//     Codex's own approval policy applies.
//   - PermissionRequest: allow (only an explicit one: it answers the
//     prompt for the user), deny (an ask too), or nothing (an allow that
//     rests on nothing explicit: the user is prompted).
//   - PostToolUse: a block, whose reason the model sees instead of the
//     result.
// Codex refuses an answer with any member outside its schema, so the
// answers carry nothing else.
//   - UserPromptSubmit: a block.
//   - PreCompact, Stop, SessionStart, SessionEnd, SubagentStart,
//     SubagentStop, PostCompact: recorded; agentledger stops nothing there.

// ParseCodex reads a Codex CLI hook input, naming what is missing.
func ParseCodex(stdin []byte) (*ClaudeCodeInput, error) { return parseClaudeLike("codex", stdin) }

func mapCodex(native []byte, at time.Time, autoApprove bool) (Mapped, error) {
	in, err := ParseCodex(native)
	if err != nil {
		return Mapped{}, err
	}
	return mapClaudeLike("codex", in, at, autoApprove)
}

// codexBlocking: the Codex events whose answer agentledger uses to stop
// something.
func codexBlocking(event string) bool {
	switch event {
	case "SessionStart", "SessionEnd", "Stop", "StopFailure", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact":
		return false
	}
	return true
}

// codexAllows: at PreToolUse Codex takes an allow only together with the
// input to run (an allow alone fails there, and its own approval policy
// decides); at PermissionRequest an allow answers its prompt.
func codexAllows(event string) bool { return event != "PreToolUse" }

// codexAsks: an ask is never Codex's to carry out. At PreToolUse it fails
// and lets the call run; at PermissionRequest, where Codex prompts its
// user for its own reasons, agentledger's ask would be that prompt, whose
// answer Codex never reports (a later result may be the approved call or
// another). Both are answered, and recorded, as a deny.
func codexAsks(string, bool) bool { return false }

// renderCodex renders an answer as Codex reads it on stdout.
func renderCodex(event string, _ []byte, r Answer) json.RawMessage {
	reason := Reason(r)
	var out any = map[string]any{}
	switch event {
	case "PreToolUse":
		switch {
		case r.Decision == aarts.Allow && r.Rewrite != nil && r.HostAnswer == aarts.Allow:
			// Codex runs an allow only with the input it is to run with.
			out = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PreToolUse", "permissionDecision": aarts.Allow, "updatedInput": r.Rewrite}}
		case r.Decision != aarts.Allow || r.Rewrite != nil:
			if r.Decision == aarts.Allow {
				reason = "agentledger: this call would run only with rewritten input the user approves, and Codex cannot ask here"
			}
			out = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PreToolUse", "permissionDecision": aarts.Deny, "permissionDecisionReason": reason}}
		}
	case "PermissionRequest":
		switch {
		case r.Decision != aarts.Allow:
			out = permissionDecision("deny", reason)
		case r.Decision == aarts.Allow && r.HostAnswer == aarts.Allow && r.Rewrite == nil:
			out = permissionDecision("allow", "")
		}
	case "PostToolUse":
		if r.Decision != aarts.Allow {
			// The reason replaces the result the model sees (Codex 0.169.0
			// refuses an answer with updatedToolOutput whole).
			out = map[string]any{"decision": "block", "reason": withheldText(r)}
		}
	case "UserPromptSubmit":
		if r.Decision != aarts.Allow {
			out = map[string]any{"decision": "block", "reason": reason}
		}
	default:
		if r.Decision != aarts.Allow && codexBlocking(event) {
			// An event whose name could not be read.
			out = map[string]any{"decision": "block", "reason": reason}
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// permissionDecision is the answer to a PermissionRequest (Claude Code's
// and Codex's shape).
func permissionDecision(behavior, message string) map[string]any {
	d := map[string]any{"behavior": behavior}
	if message != "" {
		d["message"] = message
	}
	return map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PermissionRequest", "decision": d}}
}
