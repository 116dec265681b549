package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/ledger"
)

// maxAttempts bounds how often one append re-links after losing the race for
// a session's head. Each loss means another writer made progress.
const maxAttempts = 1000

// Append seals ev onto its session's chain and stores it. It returns the
// envelope as stored. Input errors (*ledger.InputError) leave the store
// unchanged. When another writer appends to the same session first, Append
// re-reads the head, re-seals and retries; when an acknowledgement is lost,
// it reads the head back to learn whether the envelope landed.
func (s *Store) Append(ctx context.Context, ev ledger.Event) (*ledger.Envelope, error) {
	d, err := ledger.Prepare(ev, s.cfg.Limits)
	if err != nil {
		return nil, err
	}
	key := d.Key()
	unlock := s.lockSession(key)
	defer unlock()
	envs, err := s.commit(ctx, key, []*ledger.Draft{d}, new(int))
	if err != nil {
		return nil, err
	}
	return envs[0], nil
}

// AppendAll appends events of any sessions, keeping each session's events in
// their input order, and returns the envelopes in input order. Every event
// is validated before anything is stored: one bad event and nothing is
// appended. A session's events are stored in atomic batches, so each batch
// lands whole or not at all; sessions are stored concurrently, their
// batches shared (up to 1,000 envelopes each), and a failure stops the
// sessions not yet begun and reports how much was stored.
func (s *Store) AppendAll(ctx context.Context, evs []ledger.Event) ([]*ledger.Envelope, error) {
	envs, _, err := s.AppendAllCounted(ctx, evs)
	return envs, err
}

// AppendAllCounted is AppendAll that also says how many of the events were
// stored already, exactly as sealed now (a re-append of an input that is
// on record: those are not stored twice).
func (s *Store) AppendAllCounted(ctx context.Context, evs []ledger.Event) ([]*ledger.Envelope, int, error) {
	drafts := make([]*ledger.Draft, len(evs))
	for i, ev := range evs {
		d, err := ledger.Prepare(ev, s.cfg.Limits)
		if err != nil {
			return nil, 0, fmt.Errorf("event %d: %w", i, err)
		}
		drafts[i] = d
	}
	return s.AppendDrafts(ctx, drafts)
}

// appendWorkers bounds how many sessions AppendDrafts stores at once.
const appendWorkers = 64

// AppendDrafts is AppendAllCounted for prepared events (see
// ReadDrafts): nothing is validated or canonicalized again.
func (s *Store) AppendDrafts(ctx context.Context, drafts []*ledger.Draft) ([]*ledger.Envelope, int, error) {
	order := make([]ledger.SessionKey, 0, 1)
	bySession := make(map[ledger.SessionKey][]int)
	for i, d := range drafts {
		k := d.Key()
		if _, ok := bySession[k]; !ok {
			order = append(order, k)
		}
		bySession[k] = append(bySession[k], i)
	}
	out := make([]*ledger.Envelope, len(drafts))
	var (
		mu            sync.Mutex
		done, already int
		firstErr      error
		wg            sync.WaitGroup
	)
	next := make(chan ledger.SessionKey)
	for range min(appendWorkers, len(order)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				idx := bySession[k]
				group := make([]*ledger.Draft, len(idx))
				for j, i := range idx {
					group[j] = drafts[i]
				}
				n := 0
				unlock := s.lockSession(k)
				envs, err := s.commit(ctx, k, group, &n)
				unlock()
				mu.Lock()
				for j, e := range envs {
					out[idx[j]] = e
				}
				done, already = done+len(envs), already+n
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for _, k := range order {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		next <- k
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return out, already, fmt.Errorf("stored %d of %d events: %w", done, len(drafts), firstErr)
	}
	return out, already, nil
}

// commit stores evs, one session's events in order, on the session's chain.
// The caller holds the session lock. It seals against the cached head (a
// session this process has not seen is assumed new: its genesis asserts an
// empty subject, and an existing session answers with a conflict), stores,
// and on a conflict or a lost acknowledgement reads the head back: whatever
// of its own envelopes the head shows landed counts as stored, and the rest
// is re-sealed on the new head and retried. It returns what it stored, also
// on error.
func (s *Store) commit(ctx context.Context, key ledger.SessionKey, evs []*ledger.Draft, already *int) ([]*ledger.Envelope, error) {
	h, _ := s.cachedHead(key)
	start := time.Now()
	out := make([]*ledger.Envelope, 0, len(evs))
	for attempt := 0; len(evs) > 0; attempt++ {
		// Sealing validates; a bad event fails here, before any publish.
		envs, err := sealChain(h.head, evs[:min(len(evs), maxBatch)])
		if err != nil {
			return out, err
		}
		seq, err := s.commitRun(ctx, run{key: key, envs: envs, expect: h.streamSeq}, true)
		if err == nil {
			h = cachedHead{head: envs[len(envs)-1].Head(), streamSeq: seq}
			s.setHead(key, h)
			out, evs = append(out, envs...), evs[len(envs):]
			attempt = -1
			continue
		}
		if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrUnavailable) {
			return out, fmt.Errorf("append %s seq %d: %w", key, envs[0].Seq(), err)
		}
		if attempt >= maxAttempts {
			return out, fmt.Errorf("append %s: gave up after %d attempts: %w", key, attempt+1, err)
		}
		// Either another writer won, or an acknowledgement was lost. The
		// stored head tells which.
		fresh, herr := s.headAfterFailure(ctx, key, start)
		if herr != nil {
			return out, fmt.Errorf("append %s seq %d: %w (and reading the head back: %w)", key, envs[0].Seq(), err, herr)
		}
		if n := landed(envs, fresh.head); n > 0 {
			out, evs = append(out, envs[:n]...), evs[n:]
			if errors.Is(err, ErrConflict) {
				// The server refused the rest: what landed beyond what
				// this attempt stored was there before (a re-append).
				*already += max(n-storedBefore(err), 0)
			}
		} else if errors.Is(err, ErrConflict) && attempt > 2 {
			backoff(ctx, attempt)
		}
		h = fresh
	}
	return out, nil
}

// landed returns how many of envs are stored when the session's head is h:
// envs are consecutive, so the head being envs[i] means envs[:i+1] landed.
func landed(envs []*ledger.Envelope, h ledger.Head) int {
	for i := len(envs) - 1; i >= 0; i-- {
		if envs[i].Hash() == h.Hash {
			return i + 1
		}
	}
	return 0
}

// sealChain seals drafts one after another onto head, stopping where the
// envelopes would outgrow one batch.
func sealChain(head ledger.Head, drafts []*ledger.Draft) ([]*ledger.Envelope, error) {
	envs := make([]*ledger.Envelope, 0, len(drafts))
	size := 0
	for _, d := range drafts {
		e, err := d.Seal(head)
		if err != nil {
			return nil, err
		}
		if size += len(e.Bytes()); len(envs) > 0 && size > maxBatchBytes {
			break
		}
		envs = append(envs, e)
		head = e.Head()
	}
	return envs, nil
}

// store publishes envs, consecutive envelopes of one session, expecting the
// subject's last stream sequence to be expect: one envelope plainly, more as
// an atomic batch (or one by one where the server cannot batch). It returns
// the stream sequence of the last envelope.
func (s *Store) store(ctx context.Context, r run) (uint64, error) {
	if len(r.envs) > 1 && !s.noBatch.Load() {
		seqs, err := s.publishBatch(ctx, []run{r})
		if err == nil {
			return seqs[0], nil
		}
		if !errors.Is(err, errBatchUnsupported) {
			return 0, err
		}
		s.noBatch.Store(true)
	}
	return s.storePlain(ctx, r)
}

// storePlain publishes r's envelopes one after the other, each expecting
// the one before it. A fenced run of several is refused: its fence rides
// on an atomic batch only.
func (s *Store) storePlain(ctx context.Context, r run) (uint64, error) {
	key, envs, expect := r.key, r.envs, r.expect
	if r.fence != nil && len(envs) > 1 {
		return 0, fmt.Errorf("%w: a fenced run of %d envelopes needs atomic batches, which the stream refuses", ErrFenced, len(envs))
	}
	for i, e := range envs {
		seq, err := s.publish(ctx, key, e, expect)
		if err != nil {
			if i > 0 {
				// What was stored is made durable before anyone counts
				// it (a caller reads the head back).
				if derr := s.durable(ctx); derr != nil {
					return 0, derr
				}
				return 0, &partialError{stored: i, err: err}
			}
			return 0, err
		}
		expect = seq
	}
	if err := s.durable(ctx); err != nil {
		return 0, err
	}
	return expect, nil
}

// partialError is a failed run of which the first stored envelopes were
// published one by one and stored.
type partialError struct {
	stored int
	err    error
}

func (e *partialError) Error() string {
	return fmt.Sprintf("after %d envelopes: %v", e.stored, e.err)
}

func (e *partialError) Unwrap() error { return e.err }

// storedBefore says how many envelopes of a run a failed store stored.
func storedBefore(err error) int {
	var p *partialError
	if errors.As(err, &p) {
		return p.stored
	}
	return 0
}

// ShortRun is the length under which a run of envelopes (an engine's event
// and verdict) is stored one publish after the other on the embedded
// server when this process is its only writer (no Listen), unless
// Config.AtomicBatch says otherwise. A single-node file stream stages every
// atomic batch in a file store of its own, a fixed cost of a few
// milliseconds that a short run does not repay: measured on a 2-core
// machine, a batch of 2 envelopes took 2.5-7 ms and a plain synchronous
// publish 0.3 ms. Each publish still asserts the subject's last sequence,
// and with no other writer nothing can come between two of them; a crash
// can, and leaves the run's first part on the chain, which the engine
// records as an EngineFailure when it rebuilds the session. Where other
// writers can reach the stream (Listen, an external server), every run of
// several envelopes is an atomic batch.
const ShortRun = 16

// commitRun stores r: through the group committer, so that runs of
// sessions appending at the same time share one atomic batch, where it goes
// as an atomic batch (see batched); else one publish after the other. A
// bulk run (ledger append) is an atomic batch whatever its length.
func (s *Store) commitRun(ctx context.Context, r run, bulk bool) (uint64, error) {
	if !s.batched(len(r.envs), bulk || r.fence != nil) {
		return s.storePlain(ctx, r)
	}
	g := s.shardOf(r.key).group
	if g == nil {
		return s.store(ctx, r)
	}
	return g.commit(ctx, r)
}

// batched reports whether a run of n envelopes goes as an atomic batch.
func (s *Store) batched(n int, bulk bool) bool {
	return n > 1 && !s.noBatch.Load() && (bulk || !s.plainShort || n >= ShortRun)
}

// headAfterFailure reads a session's head after a failed publish. While the
// server is unreachable (a restart, a cluster leader election) it keeps
// asking, until RetryFor has passed since start.
func (s *Store) headAfterFailure(ctx context.Context, key ledger.SessionKey, start time.Time) (cachedHead, error) {
	fresh, err := s.head(ctx, key, true)
	for wait := 0; err != nil && errors.Is(err, ErrUnavailable) && time.Since(start) < s.cfg.RetryFor; wait++ {
		if !sleep(ctx, min(50*time.Millisecond<<min(wait, 5), time.Second)) {
			break
		}
		fresh, err = s.head(ctx, key, true)
	}
	if err == nil {
		// The caller counts what the head shows as stored: it must be
		// durable first (an acknowledgement lost on its way may hide a
		// write no fsync covered yet).
		err = s.durable(ctx)
	}
	return fresh, err
}

func backoff(ctx context.Context, attempt int) {
	d := time.Duration(min(attempt, 20)) * 200 * time.Microsecond
	sleep(ctx, d+time.Duration(rand.Int64N(int64(d)+1)))
}

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// publish stores env on its subject if the subject's last stream sequence is
// still expect (0: the session is empty). It returns the stream sequence of
// the stored message. A duplicate acknowledgement (the same envelope was
// stored by an earlier attempt) is success.
func (s *Store) publish(ctx context.Context, key ledger.SessionKey, env *ledger.Envelope, expect uint64) (uint64, error) {
	sh := s.shardOf(key)
	msg := &nats.Msg{
		Subject: sh.subj.of(key),
		Data:    env.Bytes(),
		Header: nats.Header{
			jetstream.MsgIDHeader:               []string{env.Hash()},
			jetstream.ExpectedStreamHeader:      []string{sh.name},
			jetstream.ExpectedLastSubjSeqHeader: []string{strconv.FormatUint(expect, 10)},
		},
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	ack, err := s.js.PublishMsg(pctx, msg, jetstream.WithRetryAttempts(0))
	if err == nil && ack.Duplicate {
		// Stored already (a re-append of the same input): the caller reads
		// the head back and counts what landed.
		return 0, fmt.Errorf("%w: %s seq %d is stored already", ErrConflict, key, env.Seq())
	}
	if err != nil {
		if isConflict(err) {
			return 0, fmt.Errorf("%w: %w", ErrConflict, err)
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, s.wrap("publish", err)
	}
	return ack.Sequence, nil
}

// isConflict reports a wrong-last-sequence answer: 10071, or 10164 from a
// replicated stream with two expected-sequence publishes in flight.
func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return false
}

func (s *Store) lockSession(k ledger.SessionKey) func() {
	h := fnv.New32a()
	h.Write([]byte(k.Tenant))
	h.Write([]byte{0})
	h.Write([]byte(k.Session))
	m := &s.locks[h.Sum32()%uint32(len(s.locks))]
	m.Lock()
	return m.Unlock
}

func (s *Store) setHead(k ledger.SessionKey, h cachedHead) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.heads) > 100_000 {
		clear(s.heads)
	}
	s.heads[k] = h
}

func (s *Store) cachedHead(k ledger.SessionKey) (cachedHead, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.heads[k]
	return h, ok
}

// head returns the session's head: cached unless fresh is set, else read
// from the stream. A stored head that does not decode and verify is an
// error: nothing is appended onto a damaged chain.
func (s *Store) head(ctx context.Context, k ledger.SessionKey, fresh bool) (cachedHead, error) {
	if !fresh {
		if h, ok := s.cachedHead(k); ok {
			return h, nil
		}
	}
	h, err := s.readHead(ctx, k)
	if err != nil {
		return h, err
	}
	s.setHead(k, h)
	return h, nil
}

func (s *Store) readHead(ctx context.Context, k ledger.SessionKey) (cachedHead, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	sh := s.shardOf(k)
	m, err := sh.stream.GetLastMsgForSubject(ctx, sh.subj.of(k))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return cachedHead{}, nil
	}
	if err != nil {
		return cachedHead{}, s.wrap("read head of "+k.String(), err)
	}
	env, err := ledger.Decode(m.Data, s.cfg.Limits)
	if err == nil && env.Key() == k {
		return cachedHead{head: env.Head(), streamSeq: m.Sequence}, nil
	}
	// The last message on the subject is not an envelope of this session:
	// someone with rights to the stream published it. Nothing is rewritten;
	// the chain goes on from its last envelope, after the foreign message
	// (ledger verify names it).
	h, err := s.ChainHead(ctx, k)
	return cachedHead{head: h, streamSeq: m.Sequence}, err
}

// ChainHead reads a session's chain from its start and returns the head of
// the chain it holds: the last envelope that extends the chain from seq 0.
// Messages on the session's subject that do not (not an envelope, another
// session's, or not linked) are foreign and skipped.
func (s *Store) ChainHead(ctx context.Context, k ledger.SessionKey) (ledger.Head, error) {
	var h ledger.Head
	err := s.ReadSession(ctx, k, func(m Msg) error {
		if env, err := ledger.Decode(m.Data, s.cfg.Limits); err == nil && Extends(h, env, k) {
			h = env.Head()
		}
		return nil
	})
	return h, err
}

// Extends reports whether env is the next envelope of session k's chain
// after head h.
func Extends(h ledger.Head, env *ledger.Envelope, k ledger.SessionKey) bool {
	if env.Key() != k {
		return false
	}
	if h.IsEmpty() {
		return env.Seq() == 0 && env.PrevHash() == ""
	}
	return env.Seq() == h.Seq+1 && env.PrevHash() == h.Hash
}

// AppendSealed stores envelopes that were sealed elsewhere, consecutive and
// of one session, whose first links to the session's current head. They
// land together (one atomic batch) or not at all. When the session has moved
// on since the caller sealed them, AppendSealed returns ErrConflict and
// stores nothing: the caller re-reads the session and decides again. It
// returns the stream sequence of the last envelope stored.
func (s *Store) AppendSealed(ctx context.Context, envs []*ledger.Envelope) (uint64, error) {
	if len(envs) == 0 {
		return 0, nil
	}
	key := envs[0].Key()
	for i, e := range envs {
		if e.Key() != key || i > 0 && (e.Seq() != envs[i-1].Seq()+1 || e.PrevHash() != envs[i-1].Hash()) {
			return 0, fmt.Errorf("append sealed %s: envelope %d does not follow the one before", key, i)
		}
	}
	unlock := s.lockSession(key)
	defer unlock()
	h, ok := s.cachedHead(key)
	if !ok || h.head.Hash != envs[0].PrevHash() {
		var err error
		if h, err = s.head(ctx, key, true); err != nil {
			return 0, err
		}
	}
	if h.head.Hash != envs[0].PrevHash() || h.head.IsEmpty() && envs[0].Seq() != 0 {
		return 0, fmt.Errorf("append sealed %s seq %d: the session's head is seq %d: %w", key, envs[0].Seq(), h.head.Seq, ErrConflict)
	}
	fence, err := s.fenceOf(key, len(envs))
	if err != nil {
		return 0, fmt.Errorf("append sealed %s seq %d: %w", key, envs[0].Seq(), err)
	}
	start := time.Now()
	seq, err := s.commitRun(ctx, run{key: key, envs: envs, expect: h.streamSeq, fence: fence}, false)
	if err != nil {
		if ferr := s.fenceMoved(ctx, fence, err); ferr != nil {
			return 0, fmt.Errorf("append sealed %s seq %d: %w", key, envs[0].Seq(), ferr)
		}
		fresh, herr := s.headAfterFailure(ctx, key, start)
		if herr != nil {
			return 0, fmt.Errorf("append sealed %s seq %d: %w (and reading the head back: %w)", key, envs[0].Seq(), err, herr)
		}
		if landed(envs, fresh.head) != len(envs) {
			if errors.Is(err, ErrConflict) || errors.Is(err, ErrUnavailable) && fresh.head.Hash != h.head.Hash {
				return 0, fmt.Errorf("append sealed %s seq %d: %w", key, envs[0].Seq(), ErrConflict)
			}
			return 0, fmt.Errorf("append sealed %s seq %d: %w", key, envs[0].Seq(), err)
		}
		seq = fresh.streamSeq
	}
	s.setHead(key, cachedHead{head: envs[len(envs)-1].Head(), streamSeq: seq})
	return seq, nil
}
