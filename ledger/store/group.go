package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Group commit. On a single-node file stream an atomic batch costs a few
// milliseconds whatever its size (the server stages it in a file store of
// its own), so one batch per decision is the slowest way to store the
// engine's event+verdict pairs. Instead, runs that sessions hand in while a
// batch is in flight wait together and go as the next batch: one atomic
// batch holds many sessions' runs, each asserting its own subject's last
// sequence, and every run still lands whole or not at all.

// groupWorkers is how many batches may be in flight at once.
const groupWorkers = 1

// groupQueue is how many runs may wait for a batch.
const groupQueue = 4096

// groupReq is a run waiting for a group commit, and where its answer goes.
type groupReq struct {
	run
	bytes int
	done  chan groupResult
}

type groupResult struct {
	seq uint64
	err error
}

// grouper collects runs of different sessions into shared atomic batches.
type grouper struct {
	s    *Store
	reqs chan *groupReq
	stop chan struct{}
	wg   sync.WaitGroup
	// mu guards closed: a run is handed in under the read lock, so once
	// close has set closed no run can arrive after the queue is drained.
	mu     sync.RWMutex
	closed bool
	// shared counts the batches that held runs of more than one session.
	shared atomic.Int64
}

func newGrouper(s *Store) *grouper {
	g := &grouper{s: s, reqs: make(chan *groupReq, groupQueue), stop: make(chan struct{})}
	for range groupWorkers {
		g.wg.Add(1)
		go g.loop()
	}
	return g
}

// close stops the workers once no batch is in flight; runs still queued
// are answered with ErrUnavailable.
func (g *grouper) close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	g.mu.Unlock()
	close(g.stop)
	g.wg.Wait()
	for {
		select {
		case r := <-g.reqs:
			r.done <- groupResult{err: ErrUnavailable}
		default:
			return
		}
	}
}

// commit stores r's envelopes, consecutive envelopes of one session, after
// the message at stream sequence expect of its subject, and returns the
// stream sequence of the last. The caller holds the session's lock, so no
// two runs of one session are ever in one batch. It waits for the answer
// even when ctx ends: the envelopes may be in a batch already, and the
// caller must learn whether they landed.
func (g *grouper) commit(ctx context.Context, r run) (uint64, error) {
	req := &groupReq{run: r, done: make(chan groupResult, 1)}
	for _, e := range r.envs {
		req.bytes += len(e.Bytes())
	}
	// The workers run until closed is set, so a full queue drains while
	// this waits under the read lock.
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return 0, ErrUnavailable
	}
	select {
	case g.reqs <- req:
	case <-ctx.Done():
		g.mu.RUnlock()
		return 0, ctx.Err()
	}
	g.mu.RUnlock()
	res := <-req.done
	return res.seq, res.err
}

func (g *grouper) loop() {
	defer g.wg.Done()
	var carry *groupReq
	for {
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-g.reqs:
			case <-g.stop:
				return
			}
		}
		group, n, size := []*groupReq{first}, len(first.envs), first.bytes
	drain:
		for n < maxBatch {
			select {
			case r := <-g.reqs:
				if n+len(r.envs) > maxBatch || size+r.bytes > maxBatchBytes {
					carry = r
					break drain
				}
				group, n, size = append(group, r), n+len(r.envs), size+r.bytes
			default:
				break drain
			}
		}
		if g.s.commitGroup(group) {
			g.shared.Add(1)
		}
	}
}

// commitGroup stores a group and answers each of its runs. One run goes
// the way it would alone (one plain publish for one envelope). Several go
// as one atomic batch; when that fails on a run's expected sequence (another
// writer moved a session) or on a duplicate, each run is stored on its own,
// so only the runs at fault see the conflict. It reports whether the group
// went as one shared batch.
func (s *Store) commitGroup(group []*groupReq) bool {
	ctx := context.Background()
	if len(group) > 1 && !s.noBatch.Load() {
		runs := make([]run, len(group))
		for i, r := range group {
			runs[i] = r.run
		}
		seqs, err := s.publishBatch(ctx, runs)
		switch {
		case err == nil:
			for i, r := range group {
				r.done <- groupResult{seq: seqs[i]}
			}
			return true
		case errors.Is(err, errBatchUnsupported):
			s.noBatch.Store(true)
		case !errors.Is(err, ErrConflict):
			// Unreachable or timed out: the batch landed whole or not at
			// all, and each caller reads its head back to learn which.
			for _, r := range group {
				r.done <- groupResult{err: err}
			}
			return false
		}
	}
	for _, r := range group {
		seq, err := s.store(ctx, r.run)
		r.done <- groupResult{seq: seq, err: err}
	}
	return false
}
