package adapter

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// TestCursorMapping maps every Cursor event the adapter handles, in
// Cursor's own shapes, to the AARTS event the engine judges: hook point,
// canonical tool, native tool, and what the analysis reads from the call.
func TestCursorMapping(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name, in         string
		hook, tool, nat  string
		commands, paths  []string
		hosts            []string
		mcpServer, input string
	}{
		{name: "shell", in: cursorIn("beforeShellExecution", `,"command":"go test ./...","cwd":"/workspace/shop"`),
			hook: "PreToolUse", tool: "shell", nat: "Shell", commands: []string{"go"}},
		{name: "shell after", in: cursorIn("afterShellExecution", `,"command":"ls","cwd":"/workspace/shop","output":"main.go\n","duration":12`),
			hook: "PostToolUse", tool: "shell", nat: "Shell", commands: []string{"ls"}},
		{name: "mcp, input as an object", in: cursorIn("beforeMCPExecution", `,"tool_name":"create_issue","tool_input":{"title":"x","body":"see https://evil.example/a"},"url":"https://api.githubcopilot.com/mcp/"`),
			hook: "PreToolUse", tool: "mcp_call", nat: "mcp__api.githubcopilot.com__create_issue", hosts: []string{"evil.example"}, mcpServer: "api.githubcopilot.com"},
		{name: "mcp, input as a JSON string", in: cursorIn("beforeMCPExecution", `,"tool_name":"query","tool_input":"{\"query\":\"DROP DATABASE shop\"}","command":"npx -y @acme/db-mcp"`),
			hook: "PreToolUse", tool: "mcp_call", nat: "mcp__db-mcp__query", mcpServer: "db-mcp", input: `{"query":"DROP DATABASE shop"}`},
		{name: "mcp after", in: cursorIn("afterMCPExecution", `,"tool_name":"query","tool_input":{"query":"select 1"},"command":"uvx pg-mcp","result_json":"{\"rows\":[1]}"`),
			hook: "PostToolUse", tool: "mcp_call", nat: "mcp__pg-mcp__query", mcpServer: "pg-mcp"},
		{name: "read file", in: cursorIn("beforeReadFile", `,"file_path":"/workspace/shop/.env","content":"API_KEY=AKIAIOSFODNN7EXAMPLE","attachments":[]`),
			hook: "PreToolUse", tool: "file_read", nat: "read_file", paths: []string{"/workspace/shop/.env"}},
		{name: "edit after", in: cursorIn("afterFileEdit", `,"file_path":"/workspace/shop/main.go","edits":[{"old_string":"a","new_string":"b"}]`),
			hook: "PostToolUse", tool: "file_edit", nat: "edit_file", paths: []string{"/workspace/shop/main.go"}},
		{name: "generic tool", in: cursorIn("preToolUse", `,"tool_name":"Write","tool_input":{"file_path":"/etc/cron.d/x","contents":"* * * * * root sh"},"tool_use_id":"tu_1"`),
			hook: "PreToolUse", tool: "file_write", nat: "Write", paths: []string{"/etc/cron.d/x"}},
		{name: "prompt", in: cursorIn("beforeSubmitPrompt", `,"prompt":"fix the failing test","attachments":[]`), hook: "PreUserInput"},
		{name: "stop", in: cursorIn("stop", `,"status":"completed","loop_count":0`), hook: "PreOutputDeliver"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := mapCursor([]byte(tt.in), at, false)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := aarts.ParseEvent(m.Event)
			if err != nil {
				t.Fatalf("not a valid AARTS event: %v\n%s", err, m.Event)
			}
			if ev.HookPoint != tt.hook || ev.SessionID != "c0ffee00-1111-2222-3333-444455556666" || ev.HostID != "cursor" || ev.String("adapter") != "cursor" {
				t.Fatalf("mapped to %s session %s host %s: %s", ev.HookPoint, ev.SessionID, ev.HostID, m.Event)
			}
			if tt.tool == "" {
				return
			}
			a := checkAction(t, ev, tt.tool, tt.nat, tt.commands, tt.paths)
			for _, h := range tt.hosts {
				if !slices.Contains(a.Hosts, h) {
					t.Errorf("hosts %v lack %s", a.Hosts, h)
				}
			}
			if a.MCPServer != tt.mcpServer {
				t.Errorf("mcp server %q, want %q", a.MCPServer, tt.mcpServer)
			}
			if tt.input != "" {
				got, _ := json.Marshal(ev.ToolInput)
				if string(got) != tt.input {
					t.Errorf("tool_input %s, want %s", got, tt.input)
				}
			}
			// What Cursor is about to hand the agent is judged with the call
			// (the record seals the secrets in it: TestCursorReadIsSealed).
			if tt.name == "read file" && !strings.Contains(string(m.Event), `"read_content":"API_KEY=AKIAIOSFODNN7EXAMPLE"`) {
				t.Errorf("the file's content is not in the event: %s", m.Event)
			}
		})
	}
}

// TestCursorMalformed: input the adapter cannot read is an error (the
// engine denies and records it), never a guess.
func TestCursorMalformed(t *testing.T) {
	for _, in := range []string{
		`not json`,
		`[]`,
		`{"conversation_id":"c1"}`,
		`{"hook_event_name":"beforeShellExecution"}`,
		cursorIn("beforeShellExecution", ``),
		cursorIn("beforeMCPExecution", `,"tool_input":{}`),
		cursorIn("beforeMCPExecution", `,"tool_name":"q","tool_input":"not json"`),
		cursorIn("beforeMCPExecution", `,"tool_name":"q","tool_input":"[1,2]"`),
		cursorIn("preToolUse", `,"tool_name":"Shell","tool_input":42`),
		cursorIn("beforeReadFile", `,"content":"x"`),
	} {
		if m, err := mapCursor([]byte(in), time.Now(), false); err == nil {
			t.Errorf("%s: mapped to %s, want an error", in, m.Event)
		}
	}
}

// TestCursorRender: Cursor's answer for each decision. An allow without
// an explicit allow gives no permission (Cursor's own flow applies).
func TestCursorRender(t *testing.T) {
	resp := func(decision, host string, directives map[string]any) Answer {
		rw, _ := directives["tool_input"].(map[string]any)
		return Answer{Decision: decision, Reasons: []string{"because"}, Rewrite: rw, ReasonCode: "X", HostAnswer: host}
	}
	rewrite := map[string]any{"tool_input": map[string]any{"command": "ls"}}
	for _, tt := range []struct {
		event string
		r     Answer
		want  string
	}{
		{"beforeShellExecution", resp("allow", "none", nil), `{}`},
		{"beforeShellExecution", resp("allow", "allow", nil), `{"permission":"allow"}`},
		{"beforeShellExecution", resp("deny", "deny", nil), `{"agent_message":"agentledger: because","permission":"deny","user_message":"agentledger: because"}`},
		{"beforeMCPExecution", resp("ask", "ask", nil), `{"agent_message":"agentledger: because","permission":"ask","user_message":"agentledger: because"}`},
		{"beforeReadFile", resp("ask", "deny", nil), `{"agent_message":"agentledger: because","permission":"deny","user_message":"agentledger: because"}`},
		{"beforeReadFile", resp("allow", "none", nil), `{}`},
		{"preToolUse", resp("allow", "ask", rewrite), `{"agent_message":"agentledger: because","permission":"ask","updated_input":{"command":"ls"},"user_message":"agentledger: because"}`},
		{"beforeShellExecution", resp("allow", "ask", rewrite), `{"agent_message":"agentledger: this call's input would have to be rewritten, which Cursor cannot do here","permission":"deny","user_message":"agentledger: this call's input would have to be rewritten, which Cursor cannot do here"}`},
		{"beforeSubmitPrompt", resp("allow", "none", nil), `{"continue":true}`},
		{"beforeSubmitPrompt", resp("deny", "deny", nil), `{"continue":false,"user_message":"agentledger: because"}`},
		{"afterShellExecution", resp("deny", "deny", nil), `{}`},
		{"", resp("deny", "", nil), `{"agent_message":"agentledger: because","continue":false,"permission":"deny","user_message":"agentledger: because"}`},
	} {
		if got := string(renderCursor(tt.event, nil, tt.r)); got != tt.want {
			t.Errorf("%s %s/%s: %s\nwant %s", tt.event, tt.r.Decision, tt.r.HostAnswer, got, tt.want)
		}
	}
}

// cursorIn is a real-shaped Cursor hook input: the fields every event
// carries, then the event's own.
func cursorIn(event, extra string) string {
	return `{"hook_event_name":"` + event + `","conversation_id":"c0ffee00-1111-2222-3333-444455556666","generation_id":"gen-7",` +
		`"workspace_roots":["/workspace/shop"],"model":"claude-4.5-sonnet","cursor_version":"2.0.77","user_email":"dev@example.com"` + extra + `}`
}
