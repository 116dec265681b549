package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/internal/apitest"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/receipt"
)

func deleteEvent(session string, sec int) []byte {
	ts := time.Date(2026, 11, 22, 9, 0, sec, 0, time.UTC).Format(time.RFC3339Nano)
	return []byte(`{"hook_point":"PreToolUse","session_id":"` + session + `","timestamp":"` + ts + `","host_id":"claude-code","aarts_version":"0.1","cwd":"/workspace/shop","turn_id":"t","tool_name":"file_delete","tool_name_native":"Delete","artifacts":[],"tool_input":{"file_path":"/workspace/shop/old.txt"}}`)
}

func TestStepUpTimesOutToRecordedDeny(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st, WithPendingTimeout(200*time.Millisecond))
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
	if _, err := e.Resolve(ctx, "acme", step.PendingID, "approved", step.Record.ActionSHA256, receipt.Authenticated{Principal: "late"}); err != ErrNoPending {
		t.Fatalf("resolving after the timeout: got %v, want ErrNoPending", err)
	}
	checkChains(t, st)
}

// signingDecider is decider with a fresh record key; it returns the
// keyring that verifies it.
func signingDecider(t *testing.T, manifestFile string) (*decide.Decider, receipt.Keyring) {
	t.Helper()
	d := decider(t, manifestFile)
	return d, apitest.Sign(t, d)
}

// checkRecords checks every signed record of the store with ring and
// returns the records of one type in a session.
func checkRecords(t *testing.T, st *store.Store, ring receipt.Keyring, k ledger.SessionKey, eventType string) []*ledger.Envelope {
	t.Helper()
	return apitest.Records(t, st, ring, k, eventType)
}

// TestHTTPApprovals: a host token cannot resolve its own ask (403); an
// approver lists what waits with its action context (GET /v1/pending),
// must name the asked action, cannot say who it is in the body, cannot
// reach another tenant's ask; its resolution is recorded and signed with
// the approver token's identity; allow_always then holds for the session.
func TestHTTPApprovals(t *testing.T) {
	st := openStore(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	clock := WithClock(func() time.Time { return time.Date(2026, 11, 22, 9, 0, 3, 0, time.UTC) })
	d, ring := signingDecider(t, "coding-agent.json")
	srv := httptest.NewServer(Handler(ServerConfig{Engine: newEngine(t, d, st, clock), Store: st,
		Tokens: tokensFor(t, "token-acme", "acme", "approver-acme", "acme/approver", "approver-beta", "beta/approver", "auditor-acme", "acme/auditor")}))
	t.Cleanup(srv.Close)
	code, body := call(t, srv, "POST", "/v1/hooks", "token-acme", deleteEvent("h", 1))
	var resp HookResponse
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Decision != "ask" || resp.PendingID == "" {
		t.Fatalf("ask: %d %s", code, body)
	}
	if code, _ := call(t, srv, "POST", "/v1/hooks", "approver-acme", deleteEvent("h", 2)); code != 403 {
		t.Fatalf("an approver sending hook events: got %d, want 403", code)
	}
	if code, _ := call(t, srv, "GET", "/v1/pending", "token-acme", nil); code != 403 {
		t.Fatalf("a host listing approvals: got %d, want 403", code)
	}
	code, body = call(t, srv, "GET", "/v1/pending", "auditor-acme", nil)
	var list struct {
		Pending []PendingApproval `json:"pending"`
	}
	if code != 200 || json.Unmarshal(body, &list) != nil || len(list.Pending) != 1 {
		t.Fatalf("pending: %d %s", code, body)
	}
	p := list.Pending[0]
	if p.PendingID != resp.PendingID || p.Session != "h" || p.Tool != "file_delete" || p.ActionSHA256 == "" ||
		!strings.Contains(string(body), `"tool_input":{"file_path":"/workspace/shop/old.txt"}`) {
		t.Fatalf("pending context: %s", body)
	}
	if code, body := call(t, srv, "GET", "/v1/pending", "approver-beta", nil); code != 200 || string(body) != "{\"pending\":[]}\n" {
		t.Fatalf("another tenant's approver sees: %d %s", code, body)
	}
	res := func(resolution, action string) []byte {
		return []byte(`{"pending_id":"` + resp.PendingID + `","resolution":"` + resolution + `","action_sha256":"` + action + `"}`)
	}
	if code, body := call(t, srv, "POST", "/v1/resolutions", "token-acme", res("approved", p.ActionSHA256)); code != 403 {
		t.Fatalf("the host approving its own ask: got %d %s, want 403", code, body)
	}
	if code, _ := call(t, srv, "POST", "/v1/resolutions", "approver-beta", res("approved", p.ActionSHA256)); code != 404 {
		t.Fatalf("other tenant's approver: got %d, want 404", code)
	}
	if code, body := call(t, srv, "POST", "/v1/resolutions", "approver-acme", res("maybe", p.ActionSHA256)); code != 400 {
		t.Fatalf("bad resolution: %d %s", code, body)
	}
	withBy := []byte(`{"pending_id":"` + resp.PendingID + `","resolution":"approved","action_sha256":"` + p.ActionSHA256 + `","by":"ceo@acme.example"}`)
	if code, body := call(t, srv, "POST", "/v1/resolutions", "approver-acme", withBy); code != 400 || !strings.Contains(string(body), "by") {
		t.Fatalf("a resolver named in the body: got %d %s, want 400", code, body)
	}
	other := strings.Repeat("0", 64)
	if code, body := call(t, srv, "POST", "/v1/resolutions", "approver-acme", res("approved", other)); code != 409 {
		t.Fatalf("a resolution of another action: got %d %s, want 409", code, body)
	}
	code, body = call(t, srv, "POST", "/v1/resolutions", "approver-acme", res("allow_always", p.ActionSHA256))
	if code != 200 || !strings.Contains(string(body), `"resolution":"allow_always"`) {
		t.Fatalf("resolve: %d %s", code, body)
	}
	if code, _ := call(t, srv, "POST", "/v1/resolutions", "approver-acme", res("allow_always", p.ActionSHA256)); code != 404 {
		t.Fatalf("resolving twice: got %d, want 404", code)
	}
	recs := checkRecords(t, st, ring, ledger.SessionKey{Tenant: "acme", Session: "h"}, ledger.EventResolution)
	var rec aarts.ResolutionRecord
	if len(recs) != 1 || ledger.DecodeExact(recs[0].Payload(), &rec) != nil {
		t.Fatalf("resolution records: %v", recs)
	}
	if rec.By != "approver@acme.example" || rec.AuthenticatedBy != "token:approver-acme" || rec.ActionSHA256 != p.ActionSHA256 || rec.Sig == nil {
		t.Fatalf("resolution record: %s", recs[0].Payload())
	}
	// allow_always remembered: the next delete is allowed.
	code, body = call(t, srv, "POST", "/v1/hooks", "token-acme", deleteEvent("h", 5))
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Decision != "allow" {
		t.Fatalf("after allow_always: %d %s", code, body)
	}
	checkChains(t, st)
}

// TestAFailedResolutionStillTimesOut: a resolution that could not be
// recorded leaves the approval open, and it still times out into a
// recorded deny (its timer was stopped while the resolution was tried).
func TestAFailedResolutionStillTimesOut(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st, WithPendingTimeout(400*time.Millisecond))
	step, err := e.Decide(ctx, "acme", deleteEvent("f", 1))
	if err != nil || step.PendingID == "" {
		t.Fatalf("%v %q", err, step.PendingID)
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Resolve(gone, "acme", step.PendingID, "approved", step.Record.ActionSHA256, receipt.Authenticated{Principal: "a"}); err == nil || errors.Is(err, ErrNoPending) {
		t.Fatalf("a resolution with a dead context: %v", err)
	}
	st2, err := e.WaitPending(ctx, "acme", step.PendingID, 10*time.Second)
	if err != nil || st2.Status != "timeout" {
		t.Fatalf("after a failed resolution: %+v %v", st2, err)
	}
}

// TestADueApprovalIsRetriedLater: an approval whose resolution could not be
// recorded waits for its deadline, and once due is tried again after a
// second, doubling to a minute — never at once, which spun as long as the
// record failed (a test's closed store kept a package's timers busy).
func TestADueApprovalIsRetriedLater(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	p := &pendingItem{info: PendingApproval{ExpiresUnixMs: now.Add(90 * time.Second).UnixMilli()}}
	if got := p.retryWait(now); got != 90*time.Second {
		t.Fatalf("before its deadline: %s", got)
	}
	var got []time.Duration
	for range 9 {
		got = append(got, p.retryWait(now.Add(2*time.Minute)))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute, time.Minute}
	if !slices.Equal(got, want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
}
