package engine

import (
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// FuzzClaudeCodeInput: any stdin is either refused with an error or maps to
// nothing (an event AARTS has no hook point for) or to an AARTS event that
// passes the engine's own validation.
func FuzzClaudeCodeInput(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"s","transcript_path":"/t","cwd":"/w","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}`,
		`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Write","tool_input":{"file_path":"a","content":"b"},"tool_response":{"success":true}}`,
		`{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"hi"}`,
		`{"session_id":"s","hook_event_name":"SessionStart","source":"startup"}`,
		`{"session_id":"s","hook_event_name":"Stop","stop_hook_active":false}`,
		`{"session_id":"s","hook_event_name":"PreCompact","trigger":"auto"}`,
		`{"session_id":"s","hook_event_name":"Notification","message":"x"}`,
		`{"hook_event_name":"PreToolUse"}`, `not json`, `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"ls"}`,
	} {
		f.Add([]byte(s))
	}
	at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, stdin []byte) {
		in, err := ParseClaudeCode(stdin)
		if err != nil {
			return
		}
		ev, ok, err := in.AARTS(at)
		if err != nil || !ok {
			return
		}
		if _, err := aarts.ParseEvent(ev); err != nil {
			// The adapter may pass on what the host sent (an empty
			// prompt, say); the engine must then refuse it cleanly, as
			// ParseEvent just did. Anything else is a mapping bug.
			if _, isValidation := err.(*aarts.ValidationError); !isValidation {
				t.Fatalf("mapped event is not even JSON-valid: %v\n%s", err, ev)
			}
		}
	})
}
