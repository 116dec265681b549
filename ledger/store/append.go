package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
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
	if ev.TenantID == "" {
		ev.TenantID = ledger.DefaultTenant
	}
	key := ledger.SessionKey{Tenant: ev.TenantID, Session: ev.SessionID}
	unlock := s.lockSession(key)
	defer unlock()

	// A session this process has not seen is assumed new: the genesis is
	// published expecting no message on the subject, and a session that
	// does exist answers with a conflict, after which the head is read. A
	// new session thus costs no read.
	h, _ := s.cachedHead(key)
	start := time.Now()
	for attempt := 0; ; attempt++ {
		// Sealing validates ev; a bad event fails here, before any publish.
		env, err := ledger.Seal(h.head, ev, s.cfg.Limits)
		if err != nil {
			return nil, err
		}
		seq, err := s.publish(ctx, key, env, h.streamSeq)
		if err == nil {
			s.setHead(key, cachedHead{head: env.Head(), streamSeq: seq})
			return env, nil
		}
		if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrUnavailable) {
			return nil, fmt.Errorf("append %s seq %d: %w", key, env.Seq(), err)
		}
		if attempt >= maxAttempts {
			return nil, fmt.Errorf("append %s: gave up after %d attempts: %w", key, attempt+1, err)
		}
		// Either another writer won, or the acknowledgement was lost. The
		// stored head tells which. While the server is unreachable (a
		// restart, a cluster leader election) keep asking, up to RetryFor.
		fresh, herr := s.head(ctx, key, true)
		for wait := 0; herr != nil && errors.Is(herr, ErrUnavailable) && time.Since(start) < s.cfg.RetryFor; wait++ {
			if !sleep(ctx, min(50*time.Millisecond<<min(wait, 5), time.Second)) {
				break
			}
			fresh, herr = s.head(ctx, key, true)
		}
		if herr != nil {
			return nil, fmt.Errorf("append %s seq %d: %w (and reading the head back: %w)", key, env.Seq(), err, herr)
		}
		if fresh.head.Hash == env.Hash() {
			return env, nil // it landed; only the ack was lost
		}
		if errors.Is(err, ErrConflict) && attempt > 2 {
			backoff(ctx, attempt)
		}
		h = fresh
	}
}

// backoff spreads writers that keep colliding on one session's head.
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
	msg := &nats.Msg{
		Subject: s.subj.of(key),
		Data:    env.Bytes(),
		Header: nats.Header{
			jetstream.MsgIDHeader:               []string{env.Hash()},
			jetstream.ExpectedStreamHeader:      []string{s.cfg.Stream},
			jetstream.ExpectedLastSubjSeqHeader: []string{strconv.FormatUint(expect, 10)},
		},
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	ack, err := s.js.PublishMsg(pctx, msg, jetstream.WithRetryAttempts(0))
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
	m, err := s.stream.GetLastMsgForSubject(ctx, s.subj.of(k))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return cachedHead{}, nil
	}
	if err != nil {
		return cachedHead{}, s.wrap("read head of "+k.String(), err)
	}
	env, err := ledger.Decode(m.Data, s.cfg.Limits)
	if err != nil {
		return cachedHead{}, fmt.Errorf("head of %s at stream seq %d: %w", k, m.Sequence, err)
	}
	if env.Key() != k {
		return cachedHead{}, fmt.Errorf("head of %s at stream seq %d: %w", k, m.Sequence,
			&ledger.ChainError{Kind: ledger.ForeignSession, Tenant: k.Tenant, Session: k.Session, Seq: env.Seq(), StreamSeq: m.Sequence,
				Want: k.String(), Got: env.Key().String(), Detail: "the last envelope on this session's subject names another session"})
	}
	return cachedHead{head: env.Head(), streamSeq: m.Sequence}, nil
}
