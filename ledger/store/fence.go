package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/ledger"
)

// Fences. Engines of a fleet share one stream and split its sessions into
// partitions, each written by one owner at a time (package fleet). An owner
// that has lost its partition without knowing it (a paused process) must
// not write there any more. On taking a partition, its new owner stores a
// fence message on the partition's fence subject, <prefix>_fence.<n>,
// outside the ledger's subjects (no reader of the ledger sees it); every
// run of two or more envelopes its writer appends then asserts, besides its
// chain's place (first envelope), that the fence subject's last message is
// still the writer's own fence (second envelope). The stream checks both
// atomically: once another owner has fenced the partition, the old owner's
// runs fail with ErrFenced and nothing of them is stored. A lone envelope
// carries one check only, its chain's place: it can never fork a chain,
// and its writer's Fencer refuses it unless the lease behind the fence is
// fresh.
//
// In a ledger of several streams every stream carries fence subjects of
// its own (<prefix>_fence.<stream>.<n>), for a stream's check can only name
// its own subjects: a partition is fenced in each stream that can hold sessions of
// it (FenceSubjects), and an append asserts the fence in its session's
// stream (FenceSubjectFor).

// Fence is the fence a writer asserts on its appends: the stream sequence
// of its fence message on Subject.
type Fence struct {
	Subject string
	Seq     uint64
}

// Fencer returns the fence an append of n envelopes to session k asserts,
// or an error (wrapping ErrNotOwner) when this writer does not own k's
// partition now. Only runs of two or more carry the fence to the stream.
type Fencer func(k ledger.SessionKey, n int) (Fence, error)

// ErrFenced means an append failed because another writer fenced the
// session's partition: nothing of it was stored.
var ErrFenced = errors.New("fenced: another writer owns this session's partition now")

// ErrNotOwner means the writer does not own the session's partition.
var ErrNotOwner = errors.New("not the owner of this session's partition")

// ErrStale means the writer owns the session's partition but its lease is
// not fresh enough for a write the stream cannot fence (a lone envelope):
// try again once the lease is renewed.
var ErrStale = errors.New("the partition's lease is not fresh enough for an unfenced write")

// FencedError is an append the stream refused because the partition's
// fence moved from Was to Now. It is ErrFenced.
type FencedError struct {
	Subject  string
	Was, Now uint64
	Cause    error
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("%v (partition fence %s moved from stream seq %d to %d; the store said: %v)", ErrFenced, e.Subject, e.Was, e.Now, e.Cause)
}

// Is makes a FencedError ErrFenced.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// FenceSubject is the fence subject of partition n in the ledger's first
// stream: its only one, unless it is spread over several (then see
// FenceSubjects and FenceSubjectFor).
func (s *Store) FenceSubject(n int) string { return s.shards[0].fenceSubject(n) }

// FenceSubjects are the fence subjects of partition p of partitions: one
// in each of the ledger's streams that can hold a session of p, in stream
// order. Sessions go to stream h mod N and partition h mod P of one hash
// h (ledger.SessionKey.Partition), so p's sessions are in the streams i
// with i = p modulo gcd(N, P): all of them when N and P share no factor,
// one when N divides P.
func (s *Store) FenceSubjects(p, partitions int) []string {
	g := gcd(len(s.shards), max(partitions, 1))
	var out []string
	for _, sh := range s.shards {
		if sh.index%g == p%g {
			out = append(out, sh.fenceSubject(p))
		}
	}
	return out
}

// FenceSubjectFor is the fence subject of partition p in the stream that
// holds session k.
func (s *Store) FenceSubjectFor(k ledger.SessionKey, p int) string {
	return s.shardOf(k).fenceSubject(p)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// fenceSuffix ends the first token of a ledger's fence subjects.
const fenceSuffix = "_fence"

func (sh *shard) fenceSubject(n int) string { return sh.fence + "." + strconv.Itoa(n) }

func (sh *shard) fenceAll() string { return sh.fence + ".*" }

// SetFencer makes every AppendSealed of this store (the engine's appends)
// assert the fence f returns for its session (nil: none); a run of several
// envelopes then goes as an atomic batch or not at all. It refuses a store
// that cannot batch: configured without (NoAtomicBatch) or on a stream
// that does not allow atomic publish.
func (s *Store) SetFencer(ctx context.Context, f Fencer) error {
	if f != nil {
		if s.cfg.NoAtomicBatch {
			return errors.New("fences need atomic batches: a store with NoAtomicBatch cannot fence its appends")
		}
		for _, sh := range s.shards {
			ictx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
			info, err := sh.stream.Info(ictx)
			cancel()
			if err != nil {
				return s.wrap("stream info", err)
			}
			if !info.Config.AllowAtomicPublish {
				return fmt.Errorf("stream %s does not allow atomic publish, which fences need (allow_atomic)", sh.name)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fencer = f
	return nil
}

// fenceOf is the fence an append to session k asserts (nil: none).
func (s *Store) fenceOf(k ledger.SessionKey, n int) (*Fence, error) {
	s.mu.Lock()
	f := s.fencer
	s.mu.Unlock()
	if f == nil {
		return nil, nil
	}
	fence, err := f(k, n)
	if err != nil {
		return nil, err
	}
	return &fence, nil
}

// fenceMoved tells a failed fenced append from other failures: when the
// partition's fence is no longer f, it returns an error wrapping ErrFenced.
func (s *Store) fenceMoved(ctx context.Context, f *Fence, err error) error {
	if f == nil || !errors.Is(err, ErrConflict) && !errors.Is(err, ErrFenced) {
		return nil
	}
	last, lerr := s.LastFence(ctx, f.Subject)
	if lerr != nil || last == f.Seq {
		return nil
	}
	return &FencedError{Subject: f.Subject, Was: f.Seq, Now: last, Cause: err}
}

// EnableFences adds the fence subjects to the ledger's streams (a fleet's
// streams hold them beside the ledger's subjects).
func (s *Store) EnableFences(ctx context.Context) error {
	for _, sh := range s.shards {
		if err := s.enableFences(ctx, sh); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) enableFences(ctx context.Context, sh *shard) error {
	ctx, cancel := context.WithTimeout(ctx, 2*s.cfg.Timeout)
	defer cancel()
	info, err := sh.stream.Info(ctx)
	if err != nil {
		return s.wrap("stream info", err)
	}
	if slices.Contains(info.Config.Subjects, sh.fenceAll()) {
		return nil
	}
	cfg := info.Config
	cfg.Subjects = append(slices.Clone(cfg.Subjects), sh.fenceAll())
	st, err := s.js.UpdateStream(ctx, cfg)
	if err != nil {
		return fmt.Errorf("stream %s was created without the fleet's fence subjects %s, and adding them failed (an operator can add them: the update needs $JS.API.STREAM.UPDATE.%s, which a fleet's engines need not hold otherwise): %w",
			sh.name, sh.fenceAll(), sh.name, s.wrap("update stream", err))
	}
	sh.stream = st
	return nil
}

// fenceShard is the stream whose fence subject subject is.
func (s *Store) fenceShard(subject string) (*shard, error) {
	sh := s.shardOfSubject(subject)
	if sh == nil {
		return nil, fmt.Errorf("%w: fence subject %s is in none of the streams of ledger %s", ErrLayout, subject, s.cfg.Stream)
	}
	return sh, nil
}

// PublishFence stores a fence message (data says who fenced, and with
// which lease) on subject, in the stream it belongs to, and returns its
// stream sequence: from then on only appends asserting it land in the
// partition (in that stream).
func (s *Store) PublishFence(ctx context.Context, subject string, data []byte) (uint64, error) {
	sh, err := s.fenceShard(subject)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	ack, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data,
		Header: nats.Header{jetstream.ExpectedStreamHeader: []string{sh.name}}})
	if err != nil {
		return 0, s.wrap("publish fence "+subject, err)
	}
	return ack.Sequence, nil
}

// LastFence returns the stream sequence of the last fence on subject (0:
// none).
func (s *Store) LastFence(ctx context.Context, subject string) (uint64, error) {
	sh, err := s.fenceShard(subject)
	if err != nil {
		return 0, err
	}
	return s.lastOf(ctx, sh, subject)
}

// FenceRecord is one fence message: the stream sequence it was stored at
// and what it says. Its subject names its stream.
type FenceRecord struct {
	StreamSeq uint64
	Subject   string
	Data      []byte
}

// Fences returns every fence message of the ledger, stream after stream,
// each in stream order.
func (s *Store) Fences(ctx context.Context) ([]FenceRecord, error) {
	var out []FenceRecord
	for _, sh := range s.shards {
		last, err := s.lastOf(ctx, sh, sh.fenceAll())
		if err != nil {
			return nil, err
		}
		if last == 0 {
			continue
		}
		err = s.readFrom(ctx, sh, sh.fenceAll(), 0, last, func(m Msg) error {
			out = append(out, FenceRecord{StreamSeq: m.StreamSeq, Subject: m.Subject, Data: m.Data})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lastOf returns the stream sequence of the last message on subj in sh,
// which may hold wildcards (0: none).
func (s *Store) lastOf(ctx context.Context, sh *shard, subj string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	m, err := sh.stream.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, s.wrap("read last of "+subj, err)
	}
	return m.Sequence, nil
}

// lastLedgerSeq is the stream sequence of the ledger's last message in sh
// (0: none): the stream's last, unless the stream holds fences beside it.
func (s *Store) lastLedgerSeq(ctx context.Context, sh *shard, info *jetstream.StreamInfo) (uint64, error) {
	if info.State.Msgs == 0 {
		return 0, nil
	}
	if len(info.Config.Subjects) == 1 {
		return info.State.LastSeq, nil
	}
	return s.lastOf(ctx, sh, sh.subj.all())
}

// Conn is the store's NATS connection, for what shares its server (a
// fleet's leases and forwarding).
func (s *Store) Conn() *nats.Conn { return s.nc }

// JetStream is the store's JetStream context.
func (s *Store) JetStream() jetstream.JetStream { return s.js }

// Replicas is how many replicas the store's (first) stream has.
func (s *Store) Replicas(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	info, err := s.shards[0].stream.Info(ctx)
	if err != nil {
		return 0, s.wrap("stream info", err)
	}
	return max(info.Config.Replicas, 1), nil
}
