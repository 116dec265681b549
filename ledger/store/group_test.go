package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/ledger"
)

// TestGroupCommitSharesBatches appends event+verdict-sized runs from many
// sessions at once with atomic batches on: the runs share batches, every
// chain verifies, and the stream sequence each append returns is the one
// the stream holds (a wrong one would make the session's next append
// conflict, and the last one is compared with the stream's).
func TestGroupCommitSharesBatches(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{DataDir: t.TempDir(), Sync: SyncInterval, AtomicBatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const sessions, pairs = 24, 15
	lastSeq := make([]uint64, sessions)
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := ledger.SessionKey{Tenant: "acme", Session: fmt.Sprintf("g%d", i)}
			var head ledger.Head
			for p := range pairs {
				d0, err0 := ledger.Prepare(event("acme", k.Session, 2*p), ledger.Limits{})
				d1, err1 := ledger.Prepare(event("acme", k.Session, 2*p+1), ledger.Limits{})
				if err := errors.Join(err0, err1); err != nil {
					errs <- err
					return
				}
				envs, err := sealChain(head, []*ledger.Draft{d0, d1})
				if err != nil {
					errs <- err
					return
				}
				seq, err := s.AppendSealed(ctx, envs)
				if err != nil {
					errs <- fmt.Errorf("%s pair %d: %w", k, p, err)
					return
				}
				lastSeq[i], head = seq, envs[1].Head()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := s.shards[0].group.shared.Load(); n == 0 {
		t.Fatal("no batch held runs of more than one session")
	}
	r, err := s.Verify(ctx, Filter{}, ledger.Deep, nil)
	if err != nil || !r.OK() || r.Envelopes != sessions*pairs*2 {
		t.Fatalf("verify: %v %v (%d envelopes)", err, r.Err(), r.Envelopes)
	}
	for i := range sessions {
		m, err := s.shards[0].stream.GetLastMsgForSubject(ctx, s.Subject(ledger.SessionKey{Tenant: "acme", Session: fmt.Sprintf("g%d", i)}))
		if err != nil || m.Sequence != lastSeq[i] {
			t.Fatalf("session g%d: stream holds its last at %d, append said %d (%v)", i, m.Sequence, lastSeq[i], err)
		}
	}
}

// TestGroupConflictFailsOnlyItsRun puts a run that expects a stale head into
// a batch with good runs: the good runs are stored, only the stale one
// reports a conflict, and nothing of it lands.
func TestGroupConflictFailsOnlyItsRun(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{DataDir: t.TempDir(), Sync: SyncInterval, AtomicBatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stale := ledger.SessionKey{Tenant: "acme", Session: "stale"}
	if _, err := s.Append(ctx, event("acme", "stale", 0)); err != nil {
		t.Fatal(err)
	}
	var group []*groupReq
	for i := range 4 {
		k := ledger.SessionKey{Tenant: "acme", Session: fmt.Sprintf("ok%d", i)}
		envs, _ := sealChain(ledger.Head{}, drafts(t, event("acme", k.Session, 0), event("acme", k.Session, 1)))
		if i == 2 {
			// Expects the stale session to be empty; it holds one envelope.
			envs, _ = sealChain(ledger.Head{}, drafts(t, event("acme", "stale", 5), event("acme", "stale", 6)))
			k = stale
		}
		group = append(group, &groupReq{run: run{key: k, envs: envs}, done: make(chan groupResult, 1)})
	}
	s.commitGroup(group)
	for i, r := range group {
		res := <-r.done
		if got := errors.Is(res.err, ErrConflict); got != (i == 2) {
			t.Fatalf("run %d (%s): err %v", i, r.key, res.err)
		}
		want := 2
		if i == 2 {
			want = 1
		}
		if n := len(readAll(t, s, r.key)); n != want {
			t.Fatalf("%s holds %d envelopes, want %d", r.key, n, want)
		}
	}
}

// TestShortRunsPlainOnlyForTheSoleWriter: on the embedded server with no
// listener, an event+verdict pair goes as two publishes; once other
// processes can reach the stream, or when asked, as an atomic batch.
func TestShortRunsPlainOnlyForTheSoleWriter(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		cfg   Config
		plain bool
	}{
		{Config{}, true},
		{Config{AtomicBatch: true}, false},
		{Config{Listen: "127.0.0.1:0"}, false},
	} {
		c.cfg.DataDir = t.TempDir()
		s, err := Open(ctx, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := !s.batched(2, false); got != c.plain {
			t.Errorf("listen %q atomic %v: plain pair %v, want %v", c.cfg.Listen, c.cfg.AtomicBatch, got, c.plain)
		}
		if !s.batched(ShortRun, false) || !s.batched(2, true) {
			t.Errorf("listen %q: a run of %d or a bulk pair is not batched", c.cfg.Listen, ShortRun)
		}
		s.Close()
	}
}

// drafts prepares events for sealChain.
func drafts(t testing.TB, evs ...ledger.Event) []*ledger.Draft {
	t.Helper()
	out := make([]*ledger.Draft, len(evs))
	for i, ev := range evs {
		d, err := ledger.Prepare(ev, ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = d
	}
	return out
}

// TestCloseWhileAppending closes a store while sessions are handing runs to
// the group committer: every append returns (none waits forever on a run
// queued after the committer stopped), and an append after Close fails.
func TestCloseWhileAppending(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{DataDir: t.TempDir(), Sync: SyncInterval, AtomicBatch: true, RetryFor: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pair := func(k string, p int, head ledger.Head) []*ledger.Envelope {
		d0, _ := ledger.Prepare(event("acme", k, 2*p), ledger.Limits{})
		d1, _ := ledger.Prepare(event("acme", k, 2*p+1), ledger.Limits{})
		envs, _ := sealChain(head, []*ledger.Draft{d0, d1})
		return envs
	}
	var wg sync.WaitGroup
	started := make(chan struct{}, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := fmt.Sprintf("c%d", i)
			var head ledger.Head
			for p := 0; ; p++ {
				if p == 1 {
					started <- struct{}{}
				}
				envs := pair(k, p, head)
				if _, err := s.AppendSealed(ctx, envs); err != nil {
					return
				}
				head = envs[1].Head()
			}
		}()
	}
	for range 32 {
		<-started
	}
	s.Close()
	wg.Wait()
	if _, err := s.AppendSealed(ctx, pair("after", 0, ledger.Head{})); err == nil {
		t.Fatal("an append after Close succeeded")
	}
}
