package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/policy"
)

func engineServer(t *testing.T) string {
	t.Helper()
	st, err := store.Open(context.Background(), store.Config{DataDir: t.TempDir(), Sync: store.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := policy.Load(context.Background(), "", policy.DefaultManifest())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(engine.Handler(engine.ServerConfig{Engine: engine.New(engine.NewDecider(p), st), Store: st, Insecure: true}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Real-shaped Claude Code hook inputs.
func ccInput(event, extra string) string {
	return `{"session_id":"9f1c2d3e-4b5a-6789-abcd-ef0123456789","transcript_path":"/home/dev/.claude/projects/shop/9f1c.jsonl",` +
		`"cwd":"/workspace/shop","permission_mode":"default","hook_event_name":"` + event + `"` + extra + `}`
}

func TestHookClaudeCode(t *testing.T) {
	url := engineServer(t)
	pre := func(tool, input string) string {
		return ccInput("PreToolUse", `,"tool_name":"`+tool+`","tool_input":`+input+`,"tool_use_id":"toolu_01"`)
	}
	tests := []struct {
		name, stdin string
		want        map[string]any // fields of hookSpecificOutput, or top-level for others
		top         bool
	}{
		{"allow", pre("Bash", `{"command":"go test ./...","description":"run tests"}`), map[string]any{"hookEventName": "PreToolUse", "permissionDecision": "allow"}, false},
		{"deny", pre("Bash", `{"command":"rm -rf / --no-preserve-root"}`), map[string]any{"permissionDecision": "deny"}, false},
		{"ask", pre("Bash", `{"command":"git push origin main"}`), map[string]any{"permissionDecision": "ask"}, false},
		{"mcp tool", pre("mcp__github__create_issue", `{"title":"x"}`), map[string]any{"permissionDecision": "allow"}, false},
		{"post tool secret", ccInput("PostToolUse", `,"tool_name":"Read","tool_input":{"file_path":"/workspace/shop/config.yml"},"tool_response":{"content":"key: AKIAIOSFODNN7EXAMPLE"},"tool_use_id":"toolu_02"`), map[string]any{"decision": "block"}, true},
		{"prompt", ccInput("UserPromptSubmit", `,"prompt":"fix the failing test"`), map[string]any{}, true},
		{"session start", ccInput("SessionStart", `,"source":"startup","model":"claude-sonnet-4-5"`), map[string]any{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, tt.stdin, "hook", "claude-code", "--engine", url)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("stdout is not JSON: %q", out)
			}
			fields := got
			if !tt.top {
				fields, _ = got["hookSpecificOutput"].(map[string]any)
			}
			for k, v := range tt.want {
				if fields[k] != v {
					t.Errorf("%s = %v, want %v (output %s)", k, fields[k], v, out)
				}
			}
			if len(tt.want) == 0 && len(got) != 0 {
				t.Errorf("want an empty answer, got %s", out)
			}
			if !tt.top && !strings.HasPrefix(fields["permissionDecisionReason"].(string), "agentledger: ") {
				t.Errorf("reason: %v", fields["permissionDecisionReason"])
			}
		})
	}
}

func TestHookClaudeCodeFailures(t *testing.T) {
	for _, stdin := range []string{"not json", `{"hook_event_name":"PreToolUse"}`, ccInput("PreToolUse", `,"tool_input":{}`)} {
		code, out, errs := run(t, stdin, "hook", "claude-code", "--engine", "http://127.0.0.1:1")
		if code != 1 || out != "" || !strings.Contains(errs, "claude code") {
			t.Errorf("malformed %q: exit %d, stdout %q, stderr %q; want exit 1 (non-blocking) and a message", stdin, code, out, errs)
		}
	}
	in := ccInput("PreToolUse", `,"tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t"`)
	code, out, errs := run(t, in, "hook", "claude-code", "--engine", "http://127.0.0.1:1", "--timeout", "2s")
	if code != 0 || strings.TrimSpace(out) != "{}" || !strings.Contains(errs, "could not decide") {
		t.Errorf("fail open: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, _ = run(t, in, "hook", "claude-code", "--engine", "http://127.0.0.1:1", "--fail-closed", "--timeout", "2s")
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) {
		t.Errorf("fail closed: exit %d, stdout %q", code, out)
	}
}

// TestHookClaudeCodeInProcess decides and records without a running engine.
func TestHookClaudeCodeInProcess(t *testing.T) {
	data := t.TempDir()
	in := ccInput("PreToolUse", `,"tool_name":"Write","tool_input":{"file_path":".claude/settings.json","content":"{}"},"tool_use_id":"t"`)
	code, out, errs := run(t, in, "hook", "claude-code", "--data", data)
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "configuration") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	st, err := store.Open(context.Background(), store.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	infos, err := st.Sessions(context.Background(), store.Filter{})
	if err != nil || len(infos) != 1 || infos[0].Count != 2 {
		t.Fatalf("recorded: %+v %v, want the event and its verdict", infos, err)
	}
}

func TestStdio(t *testing.T) {
	ev := func(sec, cmd string) string {
		return `{"hook_point":"PreToolUse","session_id":"io","timestamp":"2026-11-22T09:00:` + sec + `Z","host_id":"my-agent","aarts_version":"0.1","turn_id":"t","tool_name":"shell","tool_name_native":"exec","artifacts":[],"tool_input":{"command":"` + cmd + `"}}`
	}
	in := strings.Join([]string{`{"aarts_version":"0.1"}`, ev("01", "ls"), `{"hook_point":"bogus"}`, ev("02", "rm -rf /")}, "\n") + "\n"
	code, out, errs := run(t, in, "stdio", "--data", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], `"compatible":true`) || !strings.Contains(lines[1], `"decision":"allow"`) ||
		!strings.Contains(lines[2], `"error":"line 3:`) || !strings.Contains(lines[3], `"decision":"deny"`) || !strings.Contains(lines[3], `"seq":2`) {
		t.Fatalf("stdio answers:\n%s", out)
	}
	if code, out, _ := run(t, ev("01", "ls")+"\n", "stdio", "--data", t.TempDir()); code == 0 || !strings.Contains(out, "version check") {
		t.Fatalf("no version check: exit %d: %s", code, out)
	}
}
