package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/replay"
)

// TestMonitorMode (issue 24): over recorded scenarios — Claude Code's own
// hook inputs and an AARTS session of destructive commands — every event
// is judged and recorded, every verdict recorded enforced false, every
// answer carries no permission decision (Claude Code's output has none; the
// AARTS answer is allow with host answer none and the verdict under
// "monitored"), and replay exact over the monitored sessions reports what
// enforcing would have stopped.
func TestMonitorMode(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	d := decider(t, "coding-agent.json")
	e := newEngine(t, d, st, WithMonitor(true))
	ctx := context.Background()
	lines := func(path string) [][]byte {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out [][]byte
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				out = append(out, []byte(l))
			}
		}
		return out
	}
	monitored := map[string]int{}
	for _, body := range lines("../fixtures/scenarios/hosts/claude-code.ndjson") {
		r := e.Answer(ctx, Request{Host: "claude-code", Body: body})
		if r.ReasonCode == ReasonInputRejected || r.ReasonCode == ReasonEngineFailure {
			t.Fatalf("claude-code: %+v", r)
		}
		out := string(r.HostOutput)
		for _, decision := range []string{"permissionDecision", `"decision"`, "updatedInput", `"continue":false`} {
			if strings.Contains(out, decision) {
				t.Errorf("Claude Code was given a decision in monitor mode (%s): %s", decision, out)
			}
		}
		if r.Monitored != nil {
			monitored[r.Monitored.Decision]++
		}
	}
	for _, body := range lines("../fixtures/scenarios/destructive-commands.ndjson") {
		r := e.Answer(ctx, Request{Body: body})
		if r.Decision != aarts.Allow || r.HostAnswer != aarts.HostAnswerNone || r.PendingID != "" {
			t.Errorf("AARTS answer in monitor mode: %s %s %s", r.Decision, r.HostAnswer, r.PendingID)
		}
		if r.Monitored != nil {
			monitored[r.Monitored.Decision]++
		}
	}
	// Bad input is recorded and given no decision either.
	bad := e.Answer(ctx, Request{Host: "claude-code", Body: []byte(`{"session_id":"host-claude-code","hook_event_name":"PreToolUse","x":1,"x":2}`)})
	if bad.ReasonCode != ReasonInputRejected || bad.Decision != aarts.Allow || bad.HostAnswer != aarts.HostAnswerNone || strings.Contains(string(bad.HostOutput), "permissionDecision") {
		t.Errorf("rejected input in monitor mode: %s %s %s %s", bad.ReasonCode, bad.Decision, bad.HostAnswer, bad.HostOutput)
	}
	if monitored[aarts.Deny] == 0 {
		t.Fatalf("no monitored deny in the scenarios: %v", monitored)
	}
	// The engine's status says what was judged, and that it was not
	// enforced: a monitored deny is not shown as an allow.
	statusDenies := 0
	for _, a := range e.Status().Recent {
		if a.ReasonCode == ReasonMonitored || (a.Decision != aarts.Allow && !a.Monitored && a.ReasonCode != ReasonInputRejected) {
			t.Errorf("status shows a monitored answer as enforced or by its answer: %+v", a)
		}
		if a.Decision == aarts.Deny {
			statusDenies++
		}
	}
	if statusDenies == 0 {
		t.Errorf("the status's last decisions hold no monitored deny: %+v", e.Status().Recent)
	}
	if pend := e.Pending(context.Background(), ledger.DefaultTenant); len(pend) != 0 {
		t.Errorf("%d asks wait for an approver in monitor mode", len(pend))
	}
	var blocks int
	var reports []*replay.SessionReport
	for _, session := range []string{"host-claude-code", "cleanup-gone-wrong"} {
		chain := readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: session})
		var verdicts, rejections, denies, posts, completed int
		for _, env := range chain {
			if env.EventType() == ledger.EventRejected {
				rejections++
				if !strings.Contains(string(env.Payload()), `"answered":"none"`) {
					t.Errorf("%s seq %d: a rejection in monitor mode recorded as %s", session, env.Seq(), env.Payload())
				}
			}
			if env.EventType() != ledger.EventVerdict {
				continue
			}
			verdicts++
			var v aarts.VerdictRecord
			if err := json.Unmarshal(env.Payload(), &v); err != nil {
				t.Fatal(err)
			}
			if v.Verdict.Decision == aarts.Deny {
				denies++
			}
			if v.HookPoint == "PostToolUse" {
				posts++
				if v.Completes != nil {
					completed++
				}
			}
			if v.IsEnforced() || v.HostAnswer != aarts.HostAnswerNone {
				t.Errorf("%s seq %d: recorded enforced %v, host answer %q", session, env.Seq(), v.IsEnforced(), v.HostAnswer)
			}
		}
		// Folded as judged: every monitored denial counts, as enforcing
		// would have made it count; every call that ran is bound to its
		// result.
		snap, err := e.Snapshot(ctx, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: session})
		if err != nil || snap.Snapshot.DeniedCount != denies {
			t.Errorf("%s: denied count %d, %d denials recorded (%v)", session, snap.Snapshot.DeniedCount, denies, err)
		}
		if posts != completed {
			t.Errorf("%s: %d of %d results bound to the call they complete", session, completed, posts)
		}
		if verdicts == 0 || session == "host-claude-code" && rejections != 1 {
			t.Fatalf("%s: %d verdicts and %d rejections recorded", session, verdicts, rejections)
		}
		rep := replay.Exact(ctx, d, chain)
		if !rep.Identical || rep.Fault != "" {
			t.Errorf("%s: replay of the monitored session: identical %v, fault %q, diffs %v", session, rep.Identical, rep.Fault, rep.Diffs)
		}
		blocks += len(rep.WouldBlock)
		reports = append(reports, rep)
	}
	var text strings.Builder
	if err := replay.Render(&text, "text", replay.NewReport(reports, d.Policy.Digest())); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "monitor mode: enforcing would have stopped") {
		t.Errorf("the report does not say what enforcing would have stopped:\n%s", text.String())
	}
	// The page draws would-be asks as asks, not as denies.
	var page strings.Builder
	if err := replay.Render(&page, "html", replay.NewReport(reports, d.Policy.Digest())); err != nil {
		t.Fatal(err)
	}
	for _, decision := range []string{aarts.Ask, aarts.Deny} {
		if monitored[decision] > 0 && !strings.Contains(page.String(), `<rect class="`+decision+`"`) {
			t.Errorf("the page's chart of would-be blocks has no %s bar (monitored %v)", decision, monitored)
		}
	}
	t.Logf("monitored verdicts %v; replay: %d would-be blocks", monitored, blocks)
	if blocks != monitored[aarts.Deny]+monitored[aarts.Ask] {
		t.Errorf("replay reports %d would-be blocks, the engine monitored %v", blocks, monitored)
	}
}
