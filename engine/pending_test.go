package engine

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

func deleteEvent(session string, sec int) []byte {
	ts := time.Date(2026, 11, 22, 9, 0, sec, 0, time.UTC).Format(time.RFC3339Nano)
	return []byte(`{"hook_point":"PreToolUse","session_id":"` + session + `","timestamp":"` + ts + `","host_id":"claude-code","aarts_version":"0.1","cwd":"/workspace/shop","turn_id":"t","tool_name":"file_delete","tool_name_native":"Delete","artifacts":[],"tool_input":{"file_path":"/workspace/shop/old.txt"}}`)
}

func TestStepUpTimesOutToRecordedDeny(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := New(decider(t, "coding-agent.json"), st, WithPendingTimeout(200*time.Millisecond))
	step, err := e.Decide(ctx, "acme", deleteEvent("p", 1))
	if err != nil {
		t.Fatal(err)
	}
	if step.Decision.AARMDecision != aarts.AARMStepUp || step.PendingID == "" || len(step.PendingID) < 26 {
		t.Fatalf("got %s %q", step.Decision.AARMDecision, step.PendingID)
	}
	k := ledger.SessionKey{Tenant: "acme", Session: "p"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := e.Snapshot(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Snapshot.Pending) == 0 {
			if s.Snapshot.DeniedCount != 1 {
				t.Fatalf("timeout not counted as a denial: %+v", s.Snapshot)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the STEP_UP never timed out")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var last *ledger.Envelope
	st.ReadSession(ctx, k, func(m store.Msg) error {
		last, _ = ledger.Decode(m.Data, ledger.Limits{})
		return nil
	})
	var rec aarts.ResolutionRecord
	if last == nil || last.EventType() != ledger.EventResolution || json.Unmarshal(last.Payload(), &rec) != nil ||
		rec.Resolution != "timeout" || rec.ForSeq != step.Envelope.Seq() {
		t.Fatalf("last envelope: %v %+v", last, rec)
	}
	if _, err := e.Resolve(ctx, "acme", step.PendingID, "approved", "late"); err != ErrNoPending {
		t.Fatalf("resolving after the timeout: got %v, want ErrNoPending", err)
	}
	checkChains(t, st)
}

func TestHTTPResolutions(t *testing.T) {
	st := openStore(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	clock := WithClock(func() time.Time { return time.Date(2026, 11, 22, 9, 0, 3, 0, time.UTC) })
	srv := httptest.NewServer(Handler(ServerConfig{Engine: New(decider(t, "coding-agent.json"), st, clock), Store: st,
		Tokens: tokensFor(t, "token-acme", "acme", "token-beta", "beta")}))
	t.Cleanup(srv.Close)
	code, body := call(t, srv, "POST", "/v1/hooks", "token-acme", deleteEvent("h", 1))
	var resp HookResponse
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Decision != "ask" || resp.PendingID == "" {
		t.Fatalf("ask: %d %s", code, body)
	}
	res := []byte(`{"pending_id":"` + resp.PendingID + `","resolution":"allow_always","by":"alice"}`)
	if code, _ := call(t, srv, "POST", "/v1/resolutions", "token-beta", res); code != 404 {
		t.Fatalf("other tenant resolving: got %d, want 404", code)
	}
	if code, body := call(t, srv, "POST", "/v1/resolutions", "token-acme", []byte(`{"pending_id":"`+resp.PendingID+`","resolution":"maybe"}`)); code != 400 {
		t.Fatalf("bad resolution: %d %s", code, body)
	}
	code, body = call(t, srv, "POST", "/v1/resolutions", "token-acme", res)
	if code != 200 || !strings.Contains(string(body), `"resolution":"allow_always"`) {
		t.Fatalf("resolve: %d %s", code, body)
	}
	if code, _ := call(t, srv, "POST", "/v1/resolutions", "token-acme", res); code != 404 {
		t.Fatalf("resolving twice: got %d, want 404", code)
	}
	// allow_always remembered: the next delete is allowed.
	code, body = call(t, srv, "POST", "/v1/hooks", "token-acme", deleteEvent("h", 5))
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Decision != "allow" {
		t.Fatalf("after allow_always: %d %s", code, body)
	}
	checkChains(t, st)
}
