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

// TestFailOpenNeverAllows: the failure policy never answers allow on any
// API. Fail-closed it denies; under fail-open the AARTS API gets an ask
// (which a caller that cannot ask treats as a deny) with host answer
// "none", and a host adapter renders it as no decision.
func TestFailOpenNeverAllows(t *testing.T) {
	pre := `{"session_id":"s","transcript_path":"/t","cwd":"/w","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t1"}`
	for _, tt := range []struct {
		failOpen              bool
		decision, host, rendr string
	}{
		{false, aarts.Deny, "", `"permissionDecision":"deny"`},
		{true, aarts.Ask, aarts.HostAnswerNone, `{}`},
	} {
		r := FailureResponse(tt.failOpen, errors.New("connection refused"))
		if r.Decision != tt.decision || r.HostAnswer != tt.host || r.ReasonCode != ReasonEngineFailure {
			t.Errorf("fail-open %v: %s/%q/%s, want %s/%q", tt.failOpen, r.Decision, r.HostAnswer, r.ReasonCode, tt.decision, tt.host)
		}
		if out := string(HostOutput("claude-code", []byte(pre), r)); !strings.Contains(out, tt.rendr) {
			t.Errorf("fail-open %v: Claude Code gets %s, want %s", tt.failOpen, out, tt.rendr)
		}
	}
}
