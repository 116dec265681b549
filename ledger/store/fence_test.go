package store

import (
	"context"
	"errors"
	"testing"

	"github.com/agentledger/agentledger/internal/natstest"
	"github.com/agentledger/agentledger/ledger"
)

// TestFenceStopsTheOldOwner: two writers of one partition, each with its
// own fence. Once the second has fenced the partition, the first one's
// pairs are refused whole (ErrFenced, nothing stored) while the second's
// land; the fence messages stay outside the ledger: readers, the Merkle
// log and verification see only envelopes, also when a fence is the
// stream's last message.
func TestFenceStopsTheOldOwner(t *testing.T) {
	ctx := context.Background()
	url := natstest.JetStream(t)
	old, next := openURL(t, url), openURL(t, url)
	if err := old.EnableFences(ctx); err != nil {
		t.Fatal(err)
	}
	if err := next.EnableFences(ctx); err != nil {
		t.Fatal(err)
	}
	subj := old.FenceSubject(7)
	f1, err := old.PublishFence(ctx, subj, []byte(`{"engine":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := old.SetFencer(ctx, func(ledger.SessionKey, int) (Fence, error) { return Fence{Subject: subj, Seq: f1}, nil }); err != nil {
		t.Fatal(err)
	}
	k := ledger.SessionKey{Tenant: "acme", Session: "s"}
	pair := func(h ledger.Head, i int) []*ledger.Envelope {
		envs, err := sealChain(h, drafts(t, event("acme", "s", i), event("acme", "s", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		return envs
	}
	first := pair(ledger.Head{}, 0)
	if _, err := old.AppendSealed(ctx, first); err != nil {
		t.Fatalf("the owner's pair: %v", err)
	}
	f2, err := next.PublishFence(ctx, subj, []byte(`{"engine":"b"}`))
	if err != nil {
		t.Fatal(err)
	}
	stale := pair(first[1].Head(), 2)
	if _, err := old.AppendSealed(ctx, stale); !errors.Is(err, ErrFenced) || errors.Is(err, ErrConflict) {
		t.Fatalf("the fenced-out owner's pair: got %v, want ErrFenced (and not a conflict to retry)", err)
	}
	if got := readAll(t, old, k); len(got) != 2 {
		t.Fatalf("after the fenced pair: %d envelopes stored, want 2", len(got))
	}
	if err := next.SetFencer(ctx, func(ledger.SessionKey, int) (Fence, error) { return Fence{Subject: subj, Seq: f2}, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := next.AppendSealed(ctx, stale); err != nil {
		t.Fatalf("the new owner's pair: %v", err)
	}
	// A fence last in the stream: readers still end.
	if _, err := next.PublishFence(ctx, next.FenceSubject(8), []byte(`{"engine":"b"}`)); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := next.ReadStream(ctx, 0, func(Msg) error { n++; return nil }); err != nil || n != 4 {
		t.Fatalf("ReadStream: %d messages, %v; want the 4 envelopes", n, err)
	}
	var l LogState
	if err := next.CatchUp(ctx, &l); err != nil || l.Log.Size() != 4 {
		t.Fatalf("log: %d leaves, %v; want 4", l.Log.Size(), err)
	}
	r, err := next.Verify(ctx, Filter{}, ledger.Deep, nil)
	if err != nil || !r.OK() || r.Envelopes != 4 {
		t.Fatalf("verify: %v %v", err, r)
	}
	fences, err := next.Fences(ctx)
	if err != nil || len(fences) != 3 || fences[0].StreamSeq != f1 || fences[1].StreamSeq != f2 {
		t.Fatalf("fences: %+v %v", fences, err)
	}
	// A store opened later on the stream accepts it as it stands.
	openURL(t, url)

	// A store that cannot batch is refused a fencer; one that learned
	// the stream refuses batches stores no fenced pair plainly.
	plain, err := Open(ctx, Config{URL: url, NoAtomicBatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.SetFencer(ctx, func(ledger.SessionKey, int) (Fence, error) { return Fence{Subject: subj, Seq: f2}, nil }); err == nil {
		t.Fatal("a store without atomic batches took a fencer")
	}
	next.noBatch.Store(true)
	head := readAll(t, next, k)
	if _, err := next.AppendSealed(ctx, pair(stale[1].Head(), 4)); !errors.Is(err, ErrFenced) {
		t.Fatalf("a fenced pair on a store that cannot batch: %v, want ErrFenced", err)
	}
	if got := readAll(t, next, k); len(got) != len(head) {
		t.Fatalf("the fenced pair was stored plainly: %d envelopes, was %d", len(got), len(head))
	}
}
