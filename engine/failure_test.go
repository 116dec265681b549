package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// TestFailurePolicyAndEngineFailureRecord stops the store under a running
// engine: the host is answered deny (fail-closed), and once the store is
// back the failure is recorded as an EngineFailure before the next event.
func TestFailurePolicyAndEngineFailureRecord(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	srv, err := store.Open(ctx, store.Config{DataDir: dir, Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	client, err := store.Open(ctx, store.Config{URL: srv.ClientURL(), Timeout: 300 * time.Millisecond, RetryFor: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	h := httptest.NewServer(Handler(ServerConfig{Engine: newEngine(t, decider(t, "coding-agent.json"), client), Store: client,
		Tokens: tokensFor(t, "tok", "acme"), Timeout: 3 * time.Second}))
	defer h.Close()
	if code, body := call(t, h, "POST", "/v1/hooks", "tok", hookEvent("f", 0)); code != 200 {
		t.Fatalf("before the outage: %d %s", code, body)
	}
	srv.Close()
	code, body := call(t, h, "POST", "/v1/hooks", "tok", hookEvent("f", 2))
	var resp HookResponse
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Decision != "deny" || resp.ReasonCode != "ENGINE_FAILURE" {
		t.Fatalf("during the outage: %d %s", code, body)
	}
	srv, err = store.Open(ctx, store.Config{DataDir: dir, Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var ok bool
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		code, body := call(t, h, "POST", "/v1/hooks", "tok", hookEvent("f", 4))
		var r HookResponse
		if code == 200 && json.Unmarshal(body, &r) == nil && r.ReasonCode != "ENGINE_FAILURE" {
			ok = true
			break
		}
	}
	if !ok {
		t.Fatal("the engine never recovered")
	}
	var types []string
	srv.ReadSession(ctx, ledger.SessionKey{Tenant: "acme", Session: "f"}, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, e.EventType())
		if e.EventType() == ledger.EventEngineFailure {
			var f Failure
			if err := json.Unmarshal(e.Payload(), &f); err != nil || f.Answered != "deny" || len(f.Event) == 0 {
				t.Fatalf("failure record: %s", e.Payload())
			}
		}
		return nil
	})
	// The event before the outage, one EngineFailure per failed attempt
	// (at least the one the test made), then the event that went through.
	n := len(types)
	if n < 5 || types[0] != "PreToolUse" || types[1] != "Verdict" || types[2] != "EngineFailure" ||
		types[n-2] != "PreToolUse" || types[n-1] != "Verdict" {
		t.Fatalf("recorded %v", types)
	}
	for _, ty := range types[2 : n-2] {
		if ty != "EngineFailure" {
			t.Fatalf("recorded %v", types)
		}
	}
	checkChains(t, srv)
}

// TestRebuildRecordsALostVerdict: a hook event left without its verdict (a
// crash between two publishes) is followed by an EngineFailure before the
// session goes on.
func TestRebuildRecordsALostVerdict(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	defer st.Close()
	env, err := ledger.Seal(ledger.Head{}, ledger.Event{TenantID: "acme", SessionID: "lost", EventType: "PreToolUse",
		TsUnixMs: 1763802000000, Payload: hookEvent("lost", 0)}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendSealed(ctx, []*ledger.Envelope{env}); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	if _, err := e.Decide(ctx, "acme", hookEvent("lost", 2)); err != nil {
		t.Fatal(err)
	}
	var types []string
	st.ReadSession(ctx, ledger.SessionKey{Tenant: "acme", Session: "lost"}, func(m store.Msg) error {
		e, _ := ledger.Decode(m.Data, ledger.Limits{})
		types = append(types, e.EventType())
		return nil
	})
	if strings.Join(types, ",") != "PreToolUse,EngineFailure,PreToolUse,Verdict" {
		t.Fatalf("recorded %v", types)
	}
}

// TestOneFailOpenContract: the failure policy answers the same on every
// transport and at every host, and never allow. Fail-closed it denies;
// under fail-open it asks (STEP_UP): the AARTS API answers ask, and each
// host's hook gives that host's own form of an ask — Claude Code's and
// Cursor's prompt; a deny where no one can be prompted (Codex, Gemini
// CLI's BeforeTool, Copilot's non-interactive preToolUse, an unattended
// Claude Code run) — whether the engine failed (an outage of its store)
// or could not be reached at all (the hook's own answer).
func TestOneFailOpenContract(t *testing.T) {
	calls := map[string]string{
		"claude-code": `{"session_id":"s","transcript_path":"/t","cwd":"/w","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t1"}`,
		"codex":       `{"session_id":"s","turn_id":"u","transcript_path":null,"cwd":"/w","hook_event_name":"PreToolUse","model":"m","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"c1"}`,
		"cursor":      `{"conversation_id":"s","generation_id":"g","hook_event_name":"beforeShellExecution","command":"ls","cwd":"/w","workspace_roots":["/w"]}`,
		"gemini":      `{"session_id":"s","transcript_path":"/t","cwd":"/w","hook_event_name":"BeforeTool","timestamp":"2026-11-20T10:00:00Z","tool_name":"run_shell_command","tool_input":{"command":"ls"}}`,
		"copilot":     `{"sessionId":"s","timestamp":1763632800000,"cwd":"/w","toolName":"bash","toolArgs":"{\"command\":\"ls\"}"}`,
	}
	// What each host is answered under fail-open: its form of an ask.
	forms := map[string]string{"claude-code": aarts.Ask, "cursor": aarts.Ask, "codex": aarts.Deny, "gemini": aarts.Deny, "copilot": aarts.Deny}
	rendered := func(host string, out []byte) string {
		for _, d := range []string{aarts.Ask, aarts.Deny, aarts.Allow} {
			for _, f := range []string{`"permissionDecision":"` + d + `"`, `"permission":"` + d + `"`, `"decision":"` + d + `"`} {
				if strings.Contains(string(out), f) {
					return d
				}
			}
		}
		if host == "codex" && strings.Contains(string(out), `"decision":"block"`) || strings.Contains(string(out), `"continue":false`) {
			return aarts.Deny
		}
		return "none"
	}

	// No engine could be reached: the hook's own answer.
	for _, failOpen := range []bool{false, true} {
		r := FailureResponse(failOpen, false, errors.New("connection refused"))
		want := map[bool]string{false: aarts.Deny, true: aarts.Ask}[failOpen]
		if r.Decision != want || r.ReasonCode != ReasonEngineFailure {
			t.Errorf("fail-open %v, no engine: %s %s, want %s", failOpen, r.Decision, r.ReasonCode, want)
		}
		for host, in := range calls {
			form := aarts.Deny
			if failOpen {
				form = forms[host]
			}
			if got := rendered(host, HostOutput(host, []byte(in), r)); got != form {
				t.Errorf("fail-open %v, no engine: %s gets %s (%s), want %s", failOpen, host, got, HostOutput(host, []byte(in), r), form)
			}
		}
	}

	if out := HostOutput("claude-code", []byte(calls["claude-code"]), FailureResponse(true, true, errors.New("connection refused"))); rendered("claude-code", out) != aarts.Deny {
		t.Errorf("unattended Claude Code, no engine, under fail-open: host gets %s, want a deny (no one to prompt)", out)
	}

	// The engine fails: its store is down.
	ctx := context.Background()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	srv, err := store.Open(ctx, store.Config{DataDir: t.TempDir(), Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	client, err := store.Open(ctx, store.Config{URL: srv.ClientURL(), Timeout: 300 * time.Millisecond, RetryFor: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	h := httptest.NewServer(Handler(ServerConfig{Engine: newEngine(t, decider(t, "coding-agent.json"), client, WithFailOpen(true)), Store: client,
		Tokens: tokensFor(t, "host-acme", "acme"), Timeout: 5 * time.Second}))
	defer h.Close()
	srv.Close()
	code, body := call(t, h, "POST", "/v1/hooks", "host-acme", hookEvent("f", 2))
	var api HookResponse
	if code != 200 || json.Unmarshal(body, &api) != nil || api.Decision != aarts.Ask || api.AARMDecision != aarts.AARMStepUp || api.ReasonCode != ReasonEngineFailure {
		t.Fatalf("AARTS API, engine failure under fail-open: %d %s, want ask STEP_UP", code, body)
	}
	for host, in := range calls {
		r := hostHook(t, h, host, in, false)
		if r.Decision != aarts.Ask || r.ReasonCode != ReasonEngineFailure || rendered(host, r.HostOutput) != forms[host] {
			t.Errorf("%s, engine failure under fail-open: %s %s, host gets %s, want %s", host, r.Decision, r.ReasonCode, r.HostOutput, forms[host])
		}
	}
	if r := hostHook(t, h, "claude-code", calls["claude-code"], true); rendered("claude-code", r.HostOutput) != aarts.Deny {
		t.Errorf("unattended Claude Code, engine failure under fail-open: host gets %s, want a deny (no one to prompt)", r.HostOutput)
	}
}
