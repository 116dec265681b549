package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/fleet"
	"github.com/agentledger/agentledger/internal/natstest"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/receipt"
)

// TestFleetApprovalOnAnotherEngine: an ask held for an approver by the
// engine owning its session is seen, waited on and approved through the
// other engine of the fleet; the approval releases the call once, on
// whichever engine the agent sends it again.
func TestFleetApprovalOnAnotherEngine(t *testing.T) {
	owner, other := fleetOfTwo(t, natstest.JetStream(t))
	session := sessionsOf(owner, "approve", 1)[0]
	ctx := context.Background()
	codex := func(e *Engine, id string) HookResponse {
		body := fmt.Sprintf(`{"session_id":%q,"turn_id":"turn-1","transcript_path":null,"cwd":"/workspace/shop","hook_event_name":"PreToolUse","model":"gpt-5","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"rm -rf build"},"tool_use_id":%q}`, session, id)
		return e.Answer(ctx, Request{Host: "codex", Body: []byte(body), Size: int64(len(body))})
	}
	asked := codex(other, "call_1")
	if asked.Decision != aarts.Ask || asked.PendingID == "" || asked.Engine != "a" {
		t.Fatalf("asked through b: %s pending %q engine %q", asked.Decision, asked.PendingID, asked.Engine)
	}
	list := other.Pending(ctx, ledger.DefaultTenant)
	if len(list) != 1 || list[0].PendingID != asked.PendingID {
		t.Fatalf("b's list of open approvals: %+v", list)
	}
	st, err := other.WaitPending(ctx, ledger.DefaultTenant, asked.PendingID, 0)
	if err != nil || st.Status != "open" {
		t.Fatalf("poll through b: %+v %v", st, err)
	}
	if _, err := other.Resolve(ctx, ledger.DefaultTenant, asked.PendingID, "approved", strings.Repeat("0", 64), receipt.Authenticated{Principal: "ana", By: "token"}); err == nil {
		t.Fatal("an approval naming another action was taken")
	}
	waited := make(chan PendingStatus, 1)
	go func() {
		st, _ := other.WaitPending(ctx, ledger.DefaultTenant, asked.PendingID, 20*time.Second)
		waited <- st
	}()
	res, err := other.Resolve(ctx, ledger.DefaultTenant, asked.PendingID, "approved", list[0].ActionSHA256, receipt.Authenticated{Principal: "ana", By: "token"})
	if err != nil || res.Resolution != "approved" {
		t.Fatalf("approve through b: %+v %v", res, err)
	}
	if st := <-waited; st.Status != "approved" {
		t.Fatalf("the long poll through b: %+v", st)
	}
	if again := codex(other, "call_2"); again.Decision != aarts.Allow || again.Engine != "a" {
		t.Fatalf("the approved call sent again through b: %s (%s) by %q", again.Decision, again.ReasonCode, again.Engine)
	}
	if third := codex(owner, "call_3"); third.Decision != aarts.Ask {
		t.Fatalf("a third time: %s, want asked again (released once)", third.Decision)
	}
}

// TestFleetForwarderDecidesNothing: a front end that joins the fleet as a
// forwarder (the MCP gateway with --fleet) owns no partition and passes
// every call to the engine owning it.
func TestFleetForwarderDecidesNothing(t *testing.T) {
	url := natstest.JetStream(t)
	fleetOfTwo(t, url)
	st, err := store.Open(context.Background(), store.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m, err := fleet.Join(context.Background(), st, fleet.Config{ID: "gateway", Partitions: 8, Forwarder: true, Key: testFleetKey})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	front, err := New(decider(t, "coding-agent.json"), st, WithFleet(m))
	if err != nil {
		t.Fatal(err)
	}
	if err := front.StartFleet(st); err != nil {
		t.Fatal(err)
	}
	by := map[string]int{}
	for i := range 24 {
		step, err := front.Decide(context.Background(), ledger.DefaultTenant, fleetCall(fmt.Sprintf("front-%d", i%6), i))
		if err != nil {
			t.Fatal(err)
		}
		by[step.Engine]++
	}
	if by["a"] == 0 || by["b"] == 0 || by["gateway"] != 0 || len(m.Owned()) != 0 {
		t.Fatalf("decided by %v; the forwarder owns %v", by, m.Owned())
	}
}

// TestFleetApprovalOutlivesItsPartition: asks held by an engine whose
// partitions then move to a new member (the fleet grows) stay good: an
// approval given on any engine is recorded by the session's new owner and
// releases the call there.
func TestFleetApprovalOutlivesItsPartition(t *testing.T) {
	url := natstest.JetStream(t)
	a, b := fleetOfTwo(t, url)
	ctx := context.Background()
	sessions := sessionsOf(b, "moving", 24)
	codex := func(e *Engine, session, id string) HookResponse {
		body := fmt.Sprintf(`{"session_id":%q,"turn_id":"turn-1","transcript_path":null,"cwd":"/workspace/shop","hook_event_name":"PreToolUse","model":"gpt-5","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"rm -rf build"},"tool_use_id":%q}`, session, id)
		return e.Answer(ctx, Request{Host: "codex", Body: []byte(body), Size: int64(len(body))})
	}
	asks := map[string]HookResponse{}
	for _, s := range sessions {
		asks[s] = codex(a, s, "call_1")
		if asks[s].PendingID == "" || asks[s].Engine != "b" {
			t.Fatalf("%s: %+v", s, asks[s])
		}
	}
	c := fleetEngine(t, url, "c")
	waitSpread(t, a, b, c)
	moved := 0
	for _, s := range sessions {
		if _, err := c.Fleet().Owner(ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: s}); err != nil {
			continue
		}
		moved++
		var action string
		for _, p := range a.Pending(ctx, ledger.DefaultTenant) {
			if p.PendingID == asks[s].PendingID {
				action = p.ActionSHA256
			}
		}
		if action == "" {
			t.Fatalf("%s: the ask b holds is not listed after its partition moved to c", s)
		}
		res, err := a.Resolve(ctx, ledger.DefaultTenant, asks[s].PendingID, "approved", action, receipt.Authenticated{Principal: "ana", By: "token"})
		if err != nil || res.Resolution != "approved" {
			t.Fatalf("%s: approve after the move: %+v %v", s, res, err)
		}
		if again := codex(a, s, "call_2"); again.Decision != aarts.Allow || again.Engine != "c" {
			t.Fatalf("%s: the approved call sent again: %s (%s) by %q", s, again.Decision, again.ReasonCode, again.Engine)
		}
	}
	if moved == 0 {
		t.Fatal("no session's partition moved to the new engine")
	}
}
