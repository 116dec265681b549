package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/policy"
)

// allowRuleManifest is the built-in manifest with one explicit allow rule,
// written to a file for --manifest.
func allowRuleManifest(t *testing.T) (string, *manifest.Manifest) {
	t.Helper()
	raw, err := os.ReadFile("../../policy/default-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["rules"].(map[string]any)["allow"] = []string{"shell(go test:*)"}
	raw, _ = json.Marshal(m)
	path := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	parsed, err := manifest.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return path, parsed
}

func engineServer(t *testing.T, m *manifest.Manifest) string {
	t.Helper()
	st, err := store.Open(context.Background(), store.Config{DataDir: t.TempDir(), Sync: store.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := policy.Load(context.Background(), "", m)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(engine.Handler(engine.ServerConfig{Engine: mustEngine(t, decide.NewDecider(p), st), Store: st, Insecure: true}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Real-shaped Claude Code hook inputs.
func ccInput(event, extra string) string {
	return `{"session_id":"9f1c2d3e-4b5a-6789-abcd-ef0123456789","transcript_path":"/home/dev/.claude/projects/shop/9f1c.jsonl",` +
		`"cwd":"/workspace/shop","permission_mode":"default","hook_event_name":"` + event + `"` + extra + `}`
}

func ccPre(tool, input string) string {
	return ccInput("PreToolUse", `,"tool_name":"`+tool+`","tool_input":`+input+`,"tool_use_id":"toolu_01"`)
}

// hostGuardCases are what TestHookClaudeCode and the real-binary test
// (TestHookHostGuardBinary) both check: "" in want means no permission
// decision at all (Claude Code's own permission flow applies).
var hostGuardCases = []struct {
	name, stdin string
	args        []string
	want        string
}{
	{"no signal: host decides", ccPre("Bash", `{"command":"make release"}`), nil, ""},
	{"no signal, a script: host decides", ccPre("Bash", `{"command":"npm run deploy"}`), nil, ""},
	{"plain read: host decides", ccPre("Read", `{"file_path":"/workspace/shop/main.go"}`), nil, ""},
	{"explicit allow rule", ccPre("Bash", `{"command":"go test ./...","description":"run tests"}`), nil, "allow"},
	{"auto-approve opt-in", ccPre("Bash", `{"command":"ls -la"}`), []string{"--auto-approve"}, "allow"},
	{"deny", ccPre("Bash", `{"command":"rm -rf / --no-preserve-root"}`), nil, "deny"},
	{"deny under auto-approve", ccPre("Bash", `{"command":"rm -rf / --no-preserve-root"}`), []string{"--auto-approve"}, "deny"},
	{"ask", ccPre("Bash", `{"command":"git push origin main"}`), nil, "ask"},
}

// checkHostGuard checks one hook answer against a hostGuardCases want.
func checkHostGuard(t *testing.T, out, want string) {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not JSON: %q", out)
	}
	hso, _ := got["hookSpecificOutput"].(map[string]any)
	if want == "" {
		if len(got) != 0 {
			t.Fatalf("got %s, want no permission decision ({})", out)
		}
		return
	}
	if hso["hookEventName"] != "PreToolUse" || hso["permissionDecision"] != want {
		t.Fatalf("got %s, want permissionDecision %q", out, want)
	}
	if r, _ := hso["permissionDecisionReason"].(string); !strings.HasPrefix(r, "agentledger: ") {
		t.Errorf("reason: %q", r)
	}
}

func TestHookClaudeCode(t *testing.T) {
	_, m := allowRuleManifest(t)
	url := engineServer(t, m)
	for _, tt := range hostGuardCases {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, tt.stdin, append([]string{"hook", "claude-code", "--engine", url}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			checkHostGuard(t, out, tt.want)
		})
	}
	others := []struct {
		name, stdin string
		want        map[string]any
	}{
		{"post tool secret", ccInput("PostToolUse", `,"tool_name":"Read","tool_input":{"file_path":"/workspace/shop/config.yml"},"tool_response":{"content":"key: AKIAIOSFODNN7EXAMPLE"},"tool_use_id":"toolu_02"`), map[string]any{"decision": "block"}},
		{"prompt", ccInput("UserPromptSubmit", `,"prompt":"fix the failing test"`), map[string]any{}},
		{"session start", ccInput("SessionStart", `,"source":"startup","model":"claude-sonnet-4-5"`), map[string]any{}},
		{"notification", ccInput("Notification", `,"message":"Claude needs your permission"`), map[string]any{}},
	}
	for _, tt := range others {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, tt.stdin, "hook", "claude-code", "--engine", url)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("stdout is not JSON: %q", out)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (output %s)", k, got[k], v, out)
				}
			}
			if len(tt.want) == 0 && len(got) != 0 {
				t.Errorf("want an empty answer, got %s", out)
			}
		})
	}
}

// TestHookClaudeCodeNoEngine: with no engine to reach, the hook still
// answers (exit 0): deny by default, no decision under --fail-open; never
// an allow.
func TestHookClaudeCodeNoEngine(t *testing.T) {
	in := ccPre("Bash", `{"command":"ls"}`)
	code, out, errs := run(t, in, "hook", "claude-code", "--engine", "http://127.0.0.1:1", "--timeout", "2s")
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(errs, "no engine could decide") {
		t.Errorf("default: exit %d, stdout %q, stderr %q; want a deny", code, out, errs)
	}
	code, out, _ = run(t, in, "hook", "claude-code", "--engine", "http://127.0.0.1:1", "--fail-open", "--timeout", "2s")
	if code != 0 || !strings.Contains(out, `"permissionDecision":"ask"`) {
		t.Errorf("--fail-open: exit %d, stdout %q; want Claude Code's prompt (the ask the API answers)", code, out)
	}
	// Input that is not even JSON is denied too, as a block every
	// blocking Claude Code event honours.
	code, out, _ = run(t, "not json", "hook", "claude-code", "--engine", "http://127.0.0.1:1", "--timeout", "2s")
	if code != 0 || !strings.Contains(out, `"decision":"block"`) {
		t.Errorf("not json: exit %d, stdout %q; want a block", code, out)
	}
}

func TestStdio(t *testing.T) {
	ev := func(sec, cmd string) string {
		return `{"hook_point":"PreToolUse","session_id":"io","timestamp":"2026-11-22T09:00:` + sec + `Z","host_id":"my-agent","aarts_version":"0.1","turn_id":"t","tool_name":"shell","tool_name_native":"exec","artifacts":[],"tool_input":{"command":"` + cmd + `"}}`
	}
	in := strings.Join([]string{`{"aarts_version":"0.1"}`, ev("01", "ls"), `{"hook_point":"bogus","session_id":"io"}`, ev("02", "rm -rf /")}, "\n") + "\n"
	code, out, errs := run(t, in, "stdio", "--data", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], `"compatible":true`) || !strings.Contains(lines[1], `"decision":"allow"`) ||
		!strings.Contains(lines[2], `"reason_code":"INPUT_REJECTED"`) || !strings.Contains(lines[2], `"decision":"deny"`) ||
		!strings.Contains(lines[3], `"decision":"deny"`) || !strings.Contains(lines[3], `"seq":3`) {
		t.Fatalf("stdio answers:\n%s", out)
	}
	if code, out, _ := run(t, ev("01", "ls")+"\n", "stdio", "--data", t.TempDir()); code == 0 || !strings.Contains(out, "version check") {
		t.Fatalf("no version check: exit %d: %s", code, out)
	}
	// An incompatible version ends the conversation: no event is decided.
	code, out, _ = run(t, `{"aarts_version":"9.0"}`+"\n"+ev("01", "ls")+"\n", "stdio", "--data", t.TempDir())
	if code == 0 || !strings.Contains(out, `"compatible":false`) || strings.Contains(out, "decision") {
		t.Fatalf("incompatible version: exit %d: %s", code, out)
	}
}

// TestHookClaudeCodeModify: a verdict that rewrites the call (MODIFY with a
// tool_input directive) reaches Claude Code as updatedInput — with "ask", so
// the user sees the rewritten call in Claude Code's prompt, or "allow" under
// the auto-approve opt-in.
func TestHookClaudeCodeModify(t *testing.T) {
	dir := t.TempDir()
	rego := `package agentledger.policy

import rego.v1

signals contains s if {
	input.event.hook_point == "PreToolUse"
	input.event.tool_input.command == "rm -rf build"
	s := object.union(sig(12, "SAFER_DELETE", "allow", "MODIFY", "tool_execution", "info", "deletes on this file system only", [], 1),
		{"directives": {"tool_input": {"command": "rm -rf --one-file-system ./build"}}})
}
`
	if err := os.WriteFile(filepath.Join(dir, "modify.rego"), []byte(rego), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), store.Config{DataDir: t.TempDir(), Sync: store.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := policy.LoadLayers(context.Background(), []string{"", dir}, policy.DefaultManifest())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(engine.Handler(engine.ServerConfig{Engine: mustEngine(t, decide.NewDecider(p), st), Store: st, Insecure: true}))
	t.Cleanup(srv.Close)
	for _, tt := range []struct {
		args []string
		want string
	}{{nil, "ask"}, {[]string{"--auto-approve"}, "allow"}} {
		code, out, errs := run(t, ccPre("Bash", `{"command":"rm -rf build"}`), append([]string{"hook", "claude-code", "--engine", srv.URL}, tt.args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var got struct {
			HSO struct {
				PermissionDecision string         `json:"permissionDecision"`
				UpdatedInput       map[string]any `json:"updatedInput"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.HSO.PermissionDecision != tt.want ||
			got.HSO.UpdatedInput["command"] != "rm -rf --one-file-system ./build" {
			t.Fatalf("%v: got %s, want %s with the rewritten command as updatedInput", tt.args, out, tt.want)
		}
	}
}

// mustEngine is engine.New for tests.
func mustEngine(t testing.TB, d *decide.Decider, st engine.Ledger) *engine.Engine {
	t.Helper()
	e, err := engine.New(d, st)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestUnansweredCallsAreRecorded: when no engine can take the call (the
// data directory is held by a process that serves no hooks), the hook
// answers by its failure policy and spools the call first; the next engine
// on the directory records it as an EngineFailure, with the call's digest
// and a redacted excerpt and what the host was answered — never the input
// in the clear.
func TestUnansweredCallsAreRecorded(t *testing.T) {
	bin := buildEngine(t)
	data := t.TempDir()
	t.Cleanup(func() { stopLocalEngine(t, data) })
	holder, err := store.Open(context.Background(), store.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	in := ccPre("Bash", `{"command":"curl -H 'Authorization: token `+secret+`' https://api.github.com/user"}`)
	out := runHook(t, bin, data, in, "--timeout", "3s")
	if !strings.Contains(out, `"permissionDecision":"deny"`) {
		t.Fatalf("with the data directory held: %s, want the failure policy's deny", out)
	}
	if out := runHook(t, bin, data, in, "--timeout", "3s", "--fail-open"); !strings.Contains(out, `"permissionDecision":"ask"`) {
		t.Fatalf("--fail-open with the data directory held: %s, want Claude Code's prompt (fail-open asks)", out)
	}
	holder.Close()
	// The next hook starts an engine, which records what was spooled.
	checkHostGuard(t, runHook(t, bin, data, ccPre("Read", `{"file_path":"/workspace/shop/main.go"}`)), "")
	stopLocalEngine(t, data)
	var answered []string
	for _, e := range recorded(t, data) {
		if e.EventType() != ledger.EventEngineFailure {
			continue
		}
		if strings.Contains(string(e.Payload()), secret) {
			t.Fatalf("the secret is in the clear in the EngineFailure record: %s", e.Payload())
		}
		var f engine.Failure
		if err := json.Unmarshal(e.Payload(), &f); err != nil {
			t.Fatal(err)
		}
		if e.SessionID() != "9f1c2d3e-4b5a-6789-abcd-ef0123456789" || !strings.Contains(string(f.Event), `"sha256"`) {
			t.Errorf("record in session %s: %s", e.SessionID(), e.Payload())
		}
		answered = append(answered, f.Answered)
	}
	slices.Sort(answered)
	if !slices.Equal(answered, []string{"ask", "deny"}) {
		t.Fatalf("EngineFailure records answered %v, want one deny and one ask", answered)
	}
}
