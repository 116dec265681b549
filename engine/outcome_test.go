package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/receipt"
)

// TestOutcomeBoundToItsReceipt (AARM R5.5): the verdict and the signed
// receipt of a call's result name the verdict (and receipt) that let the
// call run, and a digest of the result as recorded; the record checker
// holds them to each other. A result whose call was never judged (no
// PreToolUse) names none; a denied call's turn is not one the host runs.
func TestOutcomeBoundToItsReceipt(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	d, ring := signingDecider(t, "coding-agent.json")
	e := newEngine(t, d, st)
	cc := func(event, extra string) {
		t.Helper()
		r := e.Answer(context.Background(), Request{Host: "claude-code", Body: []byte(`{"session_id":"outcome","transcript_path":"/t","cwd":"/workspace/shop","permission_mode":"default","hook_event_name":"` + event + `"` + extra + `}`)})
		if r.ReasonCode == ReasonInputRejected || r.ReasonCode == ReasonEngineFailure {
			t.Fatalf("%s: %s %v", event, r.ReasonCode, r.Reasons)
		}
	}
	ran := `,"tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":"toolu_o1"`
	cc("PreToolUse", ran)
	cc("PostToolUse", ran+`,"tool_response":{"stdout":"ok\n","stderr":"","interrupted":false}`)
	cc("PostToolUse", `,"tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_never_asked","tool_response":{"stdout":""}`)

	k := ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "outcome"}
	verdicts := checkRecords(t, st, ring, k, ledger.EventVerdict)
	all := readSession(t, st, k)
	var records []aarts.VerdictRecord
	for _, v := range verdicts {
		var r aarts.VerdictRecord
		if err := json.Unmarshal(v.Payload(), &r); err != nil {
			t.Fatal(err)
		}
		records = append(records, r)
	}
	if len(records) != 3 {
		t.Fatalf("%d verdicts", len(records))
	}
	pre, post, stray := records[0], records[1], records[2]
	if pre.Completes != nil {
		t.Errorf("the PreToolUse verdict completes %+v", pre.Completes)
	}
	if c := post.Completes; c == nil || c.EventSeq != pre.ForSeq || c.VerdictSeq != verdicts[0].Seq() || c.VerdictHash != verdicts[0].Hash() {
		t.Fatalf("result completes %+v, want the PreToolUse verdict at seq %d (%s)", post.Completes, verdicts[0].Seq(), verdicts[0].Hash())
	}
	if post.OutcomeSHA256 != decide.OutcomeDigest(all[post.ForSeq]) || post.OutcomeSHA256 == "" {
		t.Errorf("outcome digest %q", post.OutcomeSHA256)
	}
	var rc receipt.Receipt
	if err := json.Unmarshal(post.Receipt, &rc); err != nil || rc.Outcome == nil || rc.Outcome.Completes != verdicts[0].Hash() || rc.Outcome.ResultSHA256 != post.OutcomeSHA256 {
		t.Errorf("receipt outcome %+v", rc.Outcome)
	}
	if stray.Completes != nil {
		t.Errorf("a result no PreToolUse asked about completes %+v", stray.Completes)
	}
}
