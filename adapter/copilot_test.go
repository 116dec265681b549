package adapter

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// TestCopilotMapping maps Copilot's inputs, in both of its formats
// (camelCase without an event name, snake_case with hook_event_name), to
// the AARTS event the engine judges.
func TestCopilotMapping(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name, in, event, hook, tool, nat string
		binaries, paths                  []string
	}{
		{"bash, camelCase", `{"sessionId":"s-1","timestamp":1763892000000,"cwd":"/workspace/shop","toolName":"bash","toolArgs":{"command":"go test ./...","description":"run tests"}}`,
			"preToolUse", "PreToolUse", "shell", "bash", []string{"go"}, nil},
		{"bash, args as a JSON string", `{"sessionId":"s-1","timestamp":1763892000000,"cwd":"/workspace/shop","toolName":"bash","toolArgs":"{\"command\":\"ls -la\"}"}`,
			"preToolUse", "PreToolUse", "shell", "bash", []string{"ls"}, nil},
		{"create, snake_case", `{"hook_event_name":"PreToolUse","session_id":"s-1","timestamp":"2026-11-23T10:00:00Z","cwd":"/workspace/shop","tool_name":"create","tool_input":{"path":"/workspace/shop/new.go","file_text":"package x"}}`,
			"preToolUse", "PreToolUse", "file_write", "create", nil, []string{"/workspace/shop/new.go"}},
		{"view after", `{"sessionId":"s-1","timestamp":1763892000000,"cwd":"/workspace/shop","toolName":"view","toolArgs":{"path":"/workspace/shop/main.go"},"toolResult":{"resultType":"success","textResultForLlm":"package main"}}`,
			"postToolUse", "PostToolUse", "file_read", "view", nil, []string{"/workspace/shop/main.go"}},
		{"tool failure", `{"sessionId":"s-1","timestamp":1763892000000,"cwd":"/workspace/shop","toolName":"bash","toolArgs":{"command":"make"},"error":"exit 2"}`,
			"postToolUseFailure", "PostToolUse", "shell", "bash", []string{"make"}, nil},
		{"prompt", `{"sessionId":"s-1","timestamp":1763892000000,"cwd":"/workspace/shop","prompt":"fix the test"}`, "userPromptSubmitted", "PreUserInput", "", "", nil, nil},
		{"session start", `{"sessionId":"s-1","timestamp":1763892000000,"cwd":"/workspace/shop","source":"startup","initialPrompt":"hi"}`, "sessionStart", "SessionStart", "", "", nil, nil},
		{"session end", `{"hook_event_name":"SessionEnd","session_id":"s-1","timestamp":"2026-11-23T10:00:00Z","cwd":"/w","reason":"complete"}`, "sessionEnd", "SessionEnd", "", "", nil, nil},
		{"stop", `{"sessionId":"s-1","timestamp":1763892000000,"cwd":"/w","transcriptPath":"/t","stopReason":"end_turn"}`, "agentStop", "PreOutputDeliver", "", "", nil, nil},
		{"compaction", `{"sessionId":"s-1","timestamp":1763892000000,"cwd":"/w","transcriptPath":"/t","trigger":"auto"}`, "preCompact", "PreCompact", "", "", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := mapCopilot([]byte(tt.in), at, false)
			if err != nil {
				t.Fatal(err)
			}
			if m.Native != tt.event {
				t.Fatalf("event %q, want %q", m.Native, tt.event)
			}
			ev, err := aarts.ParseEvent(m.Event)
			if err != nil {
				t.Fatalf("not a valid AARTS event: %v\n%s", err, m.Event)
			}
			if ev.HookPoint != tt.hook || ev.SessionID != "s-1" || ev.HostID != "copilot" || ev.String("adapter") != "copilot" {
				t.Fatalf("mapped to %s: %s", ev.HookPoint, m.Event)
			}
			if tt.tool == "" {
				return
			}
			checkAction(t, ev, tt.tool, tt.nat, tt.binaries, tt.paths)
		})
	}
}

// TestCopilotMalformed: input the adapter cannot read is an error.
func TestCopilotMalformed(t *testing.T) {
	for _, in := range []string{
		`not json`,
		`{}`,
		`{"sessionId":"s","timestamp":1}`,
		`{"sessionId":"s","toolName":"bash","toolArgs":"rm -rf /"}`,
		`{"sessionId":"s","toolName":"bash","toolArgs":[1]}`,
		`{"hook_event_name":"PreToolUse","session_id":"s","tool_input":{}}`,
	} {
		if m, err := mapCopilot([]byte(in), time.Now(), false); err == nil {
			t.Errorf("%s: mapped to %s, want an error", in, m.Event)
		}
	}
}

// TestCopilotRender: only preToolUse is answered; an allow without an
// explicit allow gives no decision (Copilot's own flow applies).
func TestCopilotRender(t *testing.T) {
	resp := func(decision, host string, directives map[string]any) Answer {
		rw, _ := directives["tool_input"].(map[string]any)
		return Answer{Decision: decision, Reasons: []string{"because"}, Rewrite: rw, ReasonCode: "X", HostAnswer: host}
	}
	for _, tt := range []struct {
		event string
		r     Answer
		want  string
	}{
		{"preToolUse", resp("allow", "none", nil), `{}`},
		{"PreToolUse", resp("allow", "allow", nil), `{"permissionDecision":"allow"}`},
		{"preToolUse", resp("deny", "deny", nil), `{"permissionDecision":"deny","permissionDecisionReason":"agentledger: because"}`},
		{"PreToolUse", resp("deny", "deny", nil), `{"permissionDecision":"deny","permissionDecisionReason":"agentledger: because"}`},
		{"preToolUse", resp("ask", "ask", nil), `{"permissionDecision":"ask","permissionDecisionReason":"agentledger: because"}`},
		{"preToolUse", resp("allow", "ask", map[string]any{"tool_input": map[string]any{"command": "ls"}}), `{"modifiedArgs":{"command":"ls"},"permissionDecision":"ask","permissionDecisionReason":"agentledger: because"}`},
		{"postToolUse", resp("deny", "deny", nil), `{"additionalContext":"agentledger withheld this tool result: agentledger: because","modifiedResult":{"resultType":"success","textResultForLlm":"agentledger withheld this tool result: agentledger: because"}}`},
		{"postToolUse", resp("allow", "none", nil), `{}`},
		{"userPromptSubmitted", resp("deny", "deny", nil), `{}`},
		{"", resp("ask", "", nil), `{"permissionDecision":"deny","permissionDecisionReason":"agentledger: because"}`},
	} {
		if got := string(renderCopilot(tt.event, nil, tt.r)); got != tt.want {
			t.Errorf("%s %s/%s: %s\nwant %s", tt.event, tt.r.Decision, tt.r.HostAnswer, got, tt.want)
		}
	}
}

// TestCopilotMCPToolNames: Copilot names an MCP server's tool
// "<server>-<tool>"; agentledger reads it as mcp__<server>__<tool>, the
// longest server Copilot brings itself first, else up to the last hyphen.
// Copilot's own tools keep their names.
func TestCopilotMCPToolNames(t *testing.T) {
	for name, want := range map[string][2]string{
		"github-mcp-server-get_issue": {"mcp__github-mcp-server__get_issue", "github-mcp-server"},
		"playwright-browser_navigate": {"mcp__playwright__browser_navigate", "playwright"},
		"my-db-run_query":             {"mcp__my-db__run_query", "my-db"},
		"bash":                        {"bash", ""},
		"str_replace_editor":          {"str_replace_editor", ""},
		"gh-advisory-database":        {"gh-advisory-database", ""},
		"trailing-":                   {"trailing-", ""},
	} {
		native, server := copilotTool(name)
		if native != want[0] || server != want[1] {
			t.Errorf("%s: %s (%s), want %s (%s)", name, native, server, want[0], want[1])
		}
	}
	m, err := mapCopilot([]byte(`{"sessionId":"s","timestamp":1,"cwd":"/w","toolName":"github-mcp-server-create_issue","toolArgs":{"title":"x"}}`), time.Now(), false)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := aarts.ParseEvent(m.Event)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ToolName != aarts.ToolMCPCall || ev.ToolNameNative != "mcp__github-mcp-server__create_issue" || ev.String("tool_name_host") != "github-mcp-server-create_issue" {
		t.Errorf("mapped to %s %s (host %q)", ev.ToolName, ev.ToolNameNative, ev.String("tool_name_host"))
	}
}

// TestHostTurns: a prompt (Copilot, Gemini CLI) names its turn by the
// host's own time stamp — the same input received at two times names one
// turn, in either of the stamp's forms — and by the time it was received
// only when the host gave none.
func TestHostTurns(t *testing.T) {
	turnOf := func(m Mapped) string {
		var e map[string]any
		if err := json.Unmarshal(m.Event, &e); err != nil {
			t.Fatal(err)
		}
		s, _ := e["turn_id"].(string)
		return s
	}
	first, later := time.Date(2026, 12, 3, 4, 0, 0, 0, time.UTC), time.Date(2026, 12, 3, 4, 0, 5, 0, time.UTC)
	for _, c := range []struct {
		host, in string
	}{
		{"copilot", `{"hook_event_name":"UserPromptSubmit","session_id":"s-1","timestamp":"2026-12-03T03:55:30.045Z","cwd":"/w","prompt":"do the task"}`},
		{"copilot", `{"sessionId":"s-1","timestamp":1796270130045,"cwd":"/w","prompt":"do the task"}`},
		{"gemini", `{"hook_event_name":"BeforeAgent","session_id":"s-1","transcript_path":"/t","cwd":"/w","timestamp":"2026-12-03T03:55:30.045Z","prompt":"do the task"}`},
	} {
		h := Hosts[c.host]
		a, errA := h.Map([]byte(c.in), first, false)
		b, errB := h.Map([]byte(c.in), later, false)
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v %v", c.host, errA, errB)
		}
		if got := turnOf(a); got != "t20261203T035530.045000000" || turnOf(b) != got {
			t.Errorf("%s %s: turns %q and %q, want the host's time stamp's", c.host, c.in, got, turnOf(b))
		}
	}
	none, err := Hosts["copilot"].Map([]byte(`{"sessionId":"s-1","cwd":"/w","prompt":"hi"}`), first, false)
	if err != nil || turnOf(none) != clockTurn(first) {
		t.Errorf("no time stamp: turn %q %v, want the time received", turnOf(none), err)
	}
}
