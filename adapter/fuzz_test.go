package adapter

import (
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/hookwire"
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

// FuzzHostInput: for every host adapter, any input is refused with an
// error, maps to nothing, or maps to JSON the engine can validate; and the
// answer rendered for it, whatever the verdict, is a JSON object. Seeds are
// the conformance pack's inputs' shapes for each host.
func FuzzHostInput(f *testing.F) {
	for _, s := range []string{
		`{"hook_event_name":"beforeShellExecution","conversation_id":"c","generation_id":"g","workspace_roots":["/w"],"command":"ls"}`,
		`{"hook_event_name":"beforeMCPExecution","conversation_id":"c","tool_name":"q","tool_input":"{\"a\":1}","url":"https://m.example/mcp"}`,
		`{"sessionId":"s","timestamp":1,"cwd":"/w","toolName":"bash","toolArgs":"{\"command\":\"ls\"}"}`,
		`{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"create","tool_input":{"path":"/w/a"}}`,
		`{"session_id":"s","hook_event_name":"BeforeTool","tool_name":"x","tool_input":{},"mcp_context":{"server_name":"g","tool_name":"x","args":["-y"]}}`,
		`{"session_id":"s","hook_event_name":"AfterModel","llm_request":{"model":"m","messages":[]},"llm_response":{"candidates":[{"content":{"parts":["a"]}}]}}`,
		`{"session_id":"s","hook_event_name":"BeforeModel","llm_request":{"messages":[{"role":"user","content":"hi"}]}}`,
		`not json`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	verdicts := []Answer{
		{Decision: aarts.Deny},
		{Decision: aarts.Ask, HostAnswer: aarts.Ask},
		{Decision: aarts.Allow, Rewrite: map[string]any{"command": "ls"}, HostAnswer: aarts.Allow},
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		for name, h := range Hosts {
			m, err := h.Map(input, at, false)
			if err == nil && m.Event != nil {
				if _, err := aarts.ParseEvent(m.Event); err != nil {
					if _, isValidation := err.(*aarts.ValidationError); !isValidation {
						t.Fatalf("%s: mapped event is not JSON: %v\n%s", name, err, m.Event)
					}
				}
			}
			for _, r := range verdicts {
				out := h.Render(hookwire.Probe(input).HostEvent, input, r)
				if len(out) == 0 || out[0] != '{' {
					t.Fatalf("%s: answer %q is not a JSON object", name, out)
				}
			}
		}
	})
}
