package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/internal/natstest"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
)

// TestTamperWithTheLiveStream writes to the stream with a plain NATS
// client, bypassing the ledger code, and checks that verification names
// the session, seq and kind of every tampering; truncation and a rewritten
// suffix with valid hashes are found only against a checkpoint.
func TestTamperWithTheLiveStream(t *testing.T) {
	ctx := context.Background()
	// An operator's own server with no permissions at all: a plain NATS
	// client can write and delete stream messages behind the ledger's back.
	url := natstest.JetStream(t)
	st := openURL(t, url)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kinds := []string{"flip", "deleted", "reordered", "duplicated", "spliced", "rewritten", "truncated"}
	chains := map[string][]*ledger.Envelope{}
	for _, k := range append(kinds, "donor") {
		for i := 0; i < 5; i++ {
			e, err := st.Append(ctx, event("default", k, i))
			if err != nil {
				t.Fatal(err)
			}
			chains[k] = append(chains[k], e)
		}
	}
	var heads []checkpoint.Head
	for k, c := range chains {
		heads = append(heads, checkpoint.Head{Tenant: "default", Session: k, Seq: c[4].Seq(), Hash: c[4].Hash()})
	}
	var log LogState
	if err := st.CatchUp(ctx, &log); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.New(checkpoint.Origin("LEDGER", &log.Log), &log.Log, heads)
	if err != nil {
		t.Fatal(err)
	}

	// The stream denies message deletion, so the attacker (with the
	// server's admin rights) rewrites history wholesale: reads every
	// message, deletes the stream, recreates it and publishes a doctored
	// copy.
	type msg struct {
		subj string
		data []byte
	}
	var orig []msg
	if err := st.ReadAll(ctx, Filter{}, func(m Msg) error {
		orig = append(orig, msg{m.Subject, append([]byte(nil), m.Data...)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	subj := func(k string) string { return st.Subject(ledger.SessionKey{Tenant: "default", Session: k}) }
	reseal := func(k string, from int) []*ledger.Envelope {
		var out []*ledger.Envelope
		head := chains[k][from-1].Head()
		for i := from; i < 5; i++ {
			ev := event("default", k, i)
			ev.Payload = []byte(fmt.Sprintf(`{"forged":%d}`, i))
			e, err := ledger.Seal(head, ev, ledger.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
			head = e.Head()
		}
		return out
	}
	forged := reseal("rewritten", 3)
	var doctored []msg
	for _, m := range orig {
		e, err := ledger.Decode(m.data, ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		k, seq := e.SessionID(), e.Seq()
		switch {
		case k == "flip" && seq == 2:
			m.data = []byte(strings.Replace(string(m.data), "echo 2", "echo 7", 1))
		case k == "deleted" && seq == 2, k == "truncated" && seq == 4:
			continue
		case k == "reordered" && seq == 3:
			continue // stored after seq 4
		case k == "rewritten" && seq >= 3:
			m.data = forged[seq-3].Bytes()
		}
		doctored = append(doctored, m)
		switch {
		case k == "reordered" && seq == 4:
			doctored = append(doctored, msg{subj(k), chains[k][3].Bytes()})
		case k == "duplicated" && seq == 4:
			doctored = append(doctored, m)
		case k == "spliced" && seq == 4:
			doctored = append(doctored, msg{subj(k), chains["donor"][4].Bytes()})
		}
	}
	cfg := st.streamConfig(st.shards[0])
	st.Close()
	if err := js.DeleteStream(ctx, DefaultStream); err != nil {
		t.Fatal(err)
	}
	// nats-server removes a deleted stream's files after answering; on a
	// busy machine creating it again can meet them ("error creating store
	// for stream"), so the test tries again for a while.
	for try := 0; ; try++ {
		_, err := js.CreateStream(ctx, cfg)
		if err == nil {
			break
		}
		if try == 50 {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, m := range doctored {
		if _, err := js.Publish(ctx, m.subj, m.data); err != nil {
			t.Fatal(err)
		}
	}
	st = openURL(t, url)

	rep, err := st.Verify(ctx, Filter{}, ledger.Deep, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]map[ledger.FaultKind]uint64{}
	for _, f := range rep.Faults {
		if found[f.Session] == nil {
			found[f.Session] = map[ledger.FaultKind]uint64{}
		}
		found[f.Session][f.Kind] = f.Seq
	}
	for session, want := range map[string]struct {
		kind ledger.FaultKind
		seq  uint64
	}{
		"flip": {ledger.HashMismatch, 2}, "deleted": {ledger.SeqGap, 3}, "reordered": {ledger.SeqReorder, 3},
		"duplicated": {ledger.Duplicate, 4}, "spliced": {ledger.ForeignSession, 4},
	} {
		seq, ok := found[session][want.kind]
		if !ok || seq != want.seq {
			t.Errorf("%s: want %s at seq %d, got %v", session, want.kind, want.seq, found[session])
		}
	}
	for _, s := range []string{"rewritten", "truncated", "donor"} {
		if len(found[s]) != 0 {
			t.Errorf("%s: the chain alone should verify, got %v", s, found[s])
		}
	}
	faults, err := cp.Check(ctx, st.HashAt)
	if err != nil {
		t.Fatal(err)
	}
	byCP := map[string]ledger.FaultKind{}
	for _, f := range faults {
		byCP[f.Session] = f.Kind
	}
	if byCP["rewritten"] != checkpoint.Rewritten || byCP["truncated"] != checkpoint.Truncated {
		t.Fatalf("checkpoint faults: %v", faults)
	}
	// The log the checkpoint signs is not the doctored stream's.
	var now LogState
	if err := st.CatchUp(ctx, &now); err != nil {
		t.Fatal(err)
	}
	if f := cp.CheckLog(&now.Log); f == nil || f.Kind != checkpoint.LogRewritten {
		t.Fatalf("the doctored log against the checkpoint: %v", f)
	}
	if f := cp.CheckLog(&log.Log); f != nil {
		t.Fatalf("the genuine log against its checkpoint: %v", f)
	}
}
