package adapter

import (
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// TestGeminiMapping maps every Gemini CLI event the adapter handles, in
// the shapes Gemini CLI sends, to the AARTS event the engine judges.
func TestGeminiMapping(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name, in, hook, tool, nat string
		binaries, paths, hosts    []string
		field, value              string // a field of the AARTS event and its value
	}{
		{"shell", geminiIn("BeforeTool", `,"tool_name":"run_shell_command","tool_input":{"command":"go test ./...","description":"run the tests","dir_path":"."}`),
			"PreToolUse", "shell", "run_shell_command", []string{"go"}, nil, nil, "", ""},
		{"write", geminiIn("BeforeTool", `,"tool_name":"write_file","tool_input":{"file_path":"/workspace/shop/notes.md","content":"# notes"}`),
			"PreToolUse", "file_write", "write_file", nil, []string{"/workspace/shop/notes.md"}, nil, "", ""},
		{"replace", geminiIn("BeforeTool", `,"tool_name":"replace","tool_input":{"file_path":"/workspace/shop/main.go","old_string":"a","new_string":"b"}`),
			"PreToolUse", "file_edit", "replace", nil, []string{"/workspace/shop/main.go"}, nil, "", ""},
		{"read", geminiIn("BeforeTool", `,"tool_name":"read_file","tool_input":{"file_path":"/workspace/shop/.env"}`),
			"PreToolUse", "file_read", "read_file", nil, []string{"/workspace/shop/.env"}, nil, "", ""},
		{"web fetch", geminiIn("BeforeTool", `,"tool_name":"web_fetch","tool_input":{"prompt":"summarize https://docs.example.com/api"}`),
			"PreToolUse", "web_request", "web_fetch", nil, nil, nil, "", ""},
		{"mcp", geminiIn("BeforeTool", `,"tool_name":"github__create_issue","tool_input":{"repo":"acme/shop","title":"bug"},"mcp_context":{"server_name":"github","tool_name":"create_issue","command":"npx","args":["-y","@modelcontextprotocol/server-github"]}`),
			"PreToolUse", "mcp_call", "mcp__github__create_issue", nil, nil, nil, "", ""},
		{"mcp over http", geminiIn("BeforeTool", `,"tool_name":"search","tool_input":{"q":"x"},"mcp_context":{"server_name":"docs","tool_name":"search","url":"https://mcp.docs.example/mcp"}`),
			"PreToolUse", "mcp_call", "mcp__docs__search", nil, nil, nil, "", ""},
		{"after shell", geminiIn("AfterTool", `,"tool_name":"run_shell_command","tool_input":{"command":"ls"},"tool_response":{"llmContent":"a.go\nb.go","returnDisplay":"a.go\nb.go"}`),
			"PostToolUse", "shell", "run_shell_command", []string{"ls"}, nil, nil, "", ""},
		{"after failure", geminiIn("AfterTool", `,"tool_name":"run_shell_command","tool_input":{"command":"make"},"tool_response":{"llmContent":"","returnDisplay":"","error":{"message":"exit 2","type":"execution_failed"}}`),
			"PostToolUse", "shell", "run_shell_command", []string{"make"}, nil, nil, "", ""},
		{"prompt", geminiIn("BeforeAgent", `,"prompt":"fix the failing test"`), "PreUserInput", "", "", nil, nil, nil, "raw_input", "fix the failing test"},
		{"response", geminiIn("AfterAgent", `,"prompt":"fix it","prompt_response":"Done: the test passes.","stop_hook_active":false`), "PreOutputDeliver", "", "", nil, nil, nil, "output_text", "Done: the test passes."},
		{"model request", geminiIn("BeforeModel", `,"llm_request":{"model":"gemini-2.5-pro","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello"}],"config":{"temperature":0}}`),
			"PreLLMRequest", "", "", nil, nil, nil, "model_id", "gemini-2.5-pro"},
		{"model response", geminiIn("AfterModel", `,"llm_request":{"model":"gemini-2.5-pro","messages":[]},"llm_response":{"candidates":[{"content":{"role":"model","parts":["Hel","lo"]},"finishReason":"STOP"}],"usageMetadata":{"totalTokenCount":9}}`),
			"PostLLMResponse", "", "", nil, nil, nil, "response_text", "Hello"},
		{"session start", geminiIn("SessionStart", `,"source":"startup"`), "SessionStart", "", "", nil, nil, nil, "", ""},
		{"session end", geminiIn("SessionEnd", `,"reason":"exit"`), "SessionEnd", "", "", nil, nil, nil, "reason", "exit"},
		{"compress", geminiIn("PreCompress", `,"trigger":"auto"`), "PreCompact", "", "", nil, nil, nil, "compaction_reason", "token_limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := mapGemini([]byte(tt.in), at, false)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := aarts.ParseEvent(m.Event)
			if err != nil {
				t.Fatalf("not a valid AARTS event: %v\n%s", err, m.Event)
			}
			if ev.HookPoint != tt.hook || ev.SessionID != "g-1" || ev.HostID != "gemini-cli" || ev.String("adapter") != "gemini-cli" {
				t.Fatalf("mapped to %s: %s", ev.HookPoint, m.Event)
			}
			if tt.field != "" && ev.String(tt.field) != tt.value {
				t.Errorf("%s = %q, want %q", tt.field, ev.String(tt.field), tt.value)
			}
			if tt.tool == "" {
				return
			}
			checkAction(t, ev, tt.tool, tt.nat, tt.binaries, tt.paths)
			if tt.tool == aarts.ToolMCPCall {
				srv, _ := ev.Field("mcp_server").(map[string]any)
				if srv["name"] == "" || srv["command"] == "" && srv["url"] == "" {
					t.Errorf("mcp_server %v: want the server's name and how it is reached", srv)
				}
			}
		})
	}
	// Events AARTS has no hook point for are not judged.
	for _, event := range []string{"Notification", "BeforeToolSelection"} {
		m, err := mapGemini([]byte(geminiIn(event, `,"notification_type":"ToolPermission","message":"m","details":{}`)), at, false)
		if err != nil || m.Event != nil || m.Native != event {
			t.Errorf("%s: %+v, %v: want nothing to judge", event, m, err)
		}
	}
}

// TestGeminiMalformed: input the adapter cannot read is an error.
func TestGeminiMalformed(t *testing.T) {
	for _, in := range []string{
		`not json`,
		`{}`,
		`[{"session_id":"g"}]`,
		`{"session_id":"g-1","cwd":"/w"}`,
		`{"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls"}}`,
		geminiIn("BeforeTool", `,"tool_input":{"command":"ls"}`),
		geminiIn("BeforeTool", `,"tool_name":"run_shell_command","tool_input":"rm -rf /"`),
		geminiIn("BeforeTool", `,"tool_name":"run_shell_command","tool_input":[1,2]`),
		geminiIn("AfterTool", `,"tool_name":"run_shell_command","tool_input":7`),
		geminiIn("BeforeAgent", ``),
		geminiIn("BeforeModel", ``),
		geminiIn("AfterModel", `,"llm_request":{"model":"m","messages":[]}`),
		geminiIn("BeforeModel", `,"llm_request":{"model":"m","messages":"all of them"}`),
		geminiIn("BeforeTool", `,"tool_name":"x","tool_input":{},"mcp_context":"github"`),
	} {
		if m, err := mapGemini([]byte(in), time.Now(), false); err == nil {
			t.Errorf("%s: mapped to %s, want an error", in, m.Event)
		}
	}
}

// TestGeminiRender: Gemini CLI's answers for every verdict at every kind
// of event; an ask and a rewrite Gemini CLI cannot apply are denies.
func TestGeminiRender(t *testing.T) {
	resp := func(decision, host string, directives map[string]any) Answer {
		rw, _ := directives["tool_input"].(map[string]any)
		return Answer{Decision: decision, Reasons: []string{"because"}, Rewrite: rw, ReasonCode: "X", HostAnswer: host}
	}
	rewrite := map[string]any{"tool_input": map[string]any{"command": "ls -la"}}
	call := []byte(geminiIn("BeforeTool", `,"tool_name":"run_shell_command","tool_input":{"command":"ls"}`))
	callWithDir := []byte(geminiIn("BeforeTool", `,"tool_name":"run_shell_command","tool_input":{"command":"ls","dir_path":"/"}`))
	deny := `{"decision":"deny","reason":"agentledger: because","systemMessage":"agentledger: because"}`
	for _, tt := range []struct {
		event string
		input []byte
		r     Answer
		want  string
	}{
		{"BeforeTool", call, resp("allow", "none", nil), `{}`},
		{"BeforeTool", call, resp("allow", "allow", nil), `{"decision":"allow"}`},
		{"BeforeTool", call, resp("deny", "deny", nil), deny},
		{"BeforeTool", call, resp("ask", "ask", nil), `{"decision":"deny","reason":"agentledger: because (approval needed; Gemini CLI cannot ask at this point)","systemMessage":"agentledger: because (approval needed; Gemini CLI cannot ask at this point)"}`},
		{"BeforeTool", call, resp("allow", "allow", rewrite), `{"decision":"allow","hookSpecificOutput":{"hookEventName":"BeforeTool","tool_input":{"command":"ls -la"}}}`},
		{"BeforeTool", call, resp("allow", "", rewrite), `{"hookSpecificOutput":{"hookEventName":"BeforeTool","tool_input":{"command":"ls -la"}}}`},
		{"BeforeTool", callWithDir, resp("allow", "allow", rewrite), `{"decision":"deny","reason":"agentledger: the rewritten call drops dir_path, which Gemini CLI cannot remove from a call","systemMessage":"agentledger: the rewritten call drops dir_path, which Gemini CLI cannot remove from a call"}`},
		{"AfterTool", nil, resp("allow", "", nil), `{}`},
		{"AfterTool", nil, resp("deny", "", nil), `{"decision":"deny","reason":"agentledger withheld this tool result: agentledger: because","systemMessage":"agentledger withheld this tool result: agentledger: because"}`},
		{"BeforeAgent", nil, resp("deny", "", nil), deny},
		{"BeforeAgent", nil, resp("ask", "", nil), deny},
		{"AfterAgent", nil, resp("deny", "", nil), deny},
		{"BeforeModel", nil, resp("deny", "", nil), deny},
		{"AfterModel", nil, resp("allow", "", nil), `{}`},
		{"SessionStart", nil, resp("deny", "", nil), `{}`},
		{"PreCompress", nil, resp("deny", "", nil), `{}`},
		{"", nil, resp("ask", "", nil), `{"decision":"deny","reason":"agentledger: because (approval needed; Gemini CLI cannot ask at this point)","systemMessage":"agentledger: because (approval needed; Gemini CLI cannot ask at this point)"}`},
		{"", nil, resp("deny", "", nil), deny},
	} {
		if got := string(renderGemini(tt.event, tt.input, tt.r)); got != tt.want {
			t.Errorf("%s %s/%s: %s\nwant %s", tt.event, tt.r.Decision, tt.r.HostAnswer, got, tt.want)
		}
	}
}

// geminiIn is a Gemini CLI hook input of event with the fields in rest.
func geminiIn(event, rest string) string {
	return `{"session_id":"g-1","transcript_path":"/home/dev/.gemini/tmp/abc/chats/session.json","cwd":"/workspace/shop","hook_event_name":"` +
		event + `","timestamp":"2026-11-23T10:00:00.000Z"` + rest + `}`
}
