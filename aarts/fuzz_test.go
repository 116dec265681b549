package aarts

import (
	"encoding/json"
	"testing"
)

// FuzzParseEvent: any input either fails with a *ValidationError or an
// error, or parses into an event whose hook point is known and whose
// re-encoded form parses again to the same hook point, session and tool.
func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{
		`{"hook_point":"PreToolUse","session_id":"s","timestamp":"2026-11-22T09:00:00Z","host_id":"claude-code","aarts_version":"0.1","turn_id":"t","tool_name":"shell","tool_name_native":"Bash","tool_input":{"command":"ls"},"artifacts":[]}`,
		`{"hook_point":"PreLLMRequest","session_id":"s","timestamp":"2026-11-22T09:00:00Z","host_id":"x","aarts_version":"0.1","turn_id":"t","full_prompt":[{"role":"user","content":"hi"}]}`,
		`{"hook_point":"SessionStart","session_id":"s","timestamp":"2026-11-22T09:00:00Z","host_id":"x","aarts_version":"0.1"}`,
		`{"hook_point":"PostToolUse"}`, `[]`, `{}`, `nul`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := ParseEvent(data)
		if err != nil {
			if ev != nil {
				t.Fatal("an error with an event")
			}
			return
		}
		if !IsHookPoint(ev.HookPoint) || ev.SessionID == "" {
			t.Fatalf("accepted an event with hook point %q, session %q", ev.HookPoint, ev.SessionID)
		}
		again, err := json.Marshal(ev.Raw)
		if err != nil {
			t.Fatal(err)
		}
		ev2, err := ParseEvent(again)
		if err != nil {
			t.Fatalf("re-encoded event no longer parses: %v\n%s", err, again)
		}
		if ev2.HookPoint != ev.HookPoint || ev2.SessionID != ev.SessionID || ev2.NativeTool() != ev.NativeTool() {
			t.Fatalf("re-parse changed the event: %+v vs %+v", ev2, ev)
		}
	})
}
