package store

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
)

// LogState is a stream's Merkle log (checkpoint.Log: every envelope, in
// stream order) and its sessions' heads, as far as it has been read.
// CatchUp reads what the stream added since; the zero value starts from
// the beginning of a one-stream ledger's stream. A ledger of several
// streams has a log in each (LogsOf). It is not safe for concurrent use.
type LogState struct {
	// Stream is the stream whose log this is: "" for the only stream of
	// a one-stream ledger.
	Stream string
	Log    checkpoint.Log
	heads  map[ledger.SessionKey]checkpoint.Head
	next   uint64 // the stream sequence to read from
	// Leaves are the stream sequence and session place of each leaf, for
	// proofs (kept only when Index is set before the first CatchUp).
	Index  bool
	leaves []LeafPlace
}

// LeafPlace is where a leaf of the log is: its stream sequence and its
// session and seq.
type LeafPlace struct {
	StreamSeq uint64
	Key       ledger.SessionKey
	Seq       uint64
}

// LogsOf returns an empty log of each of the ledger's streams, in stream
// order (Stream set; one with Stream "" for a one-stream ledger), each
// indexed when index is set.
func (s *Store) LogsOf(index bool) []*LogState {
	if len(s.shards) == 1 {
		return []*LogState{{Index: index}}
	}
	out := make([]*LogState, len(s.shards))
	for i, sh := range s.shards {
		out[i] = &LogState{Stream: sh.name, Index: index}
	}
	return out
}

// LogFor is the log of logs (LogsOf) a checkpoint with origin is of: the
// only one of a one-stream ledger, else the one of the stream the origin
// names (checkpoint.StreamOf); nil when there is none.
func LogFor(logs []*LogState, origin string) *LogState {
	if len(logs) == 1 && logs[0].Stream == "" {
		return logs[0]
	}
	for _, l := range logs {
		if l.Stream == checkpoint.StreamOf(origin) {
			return l
		}
	}
	return nil
}

// LogOf returns an empty log of the stream a checkpoint's origin names
// (see checkpoint.StreamOf): in a one-stream ledger its only stream,
// whatever the origin names (a checkpoint of another log is the log
// check's to find); in one of several, the stream named, or ErrLayout.
func (s *Store) LogOf(stream string, index bool) (*LogState, error) {
	if len(s.shards) == 1 {
		return &LogState{Index: index}, nil
	}
	sh, err := s.shardNamed(stream)
	if err != nil {
		return nil, err
	}
	return &LogState{Stream: sh.name, Index: index}, nil
}

// CatchUp reads every message l's stream holds after what l has read.
func (s *Store) CatchUp(ctx context.Context, l *LogState) error {
	if l.heads == nil {
		l.heads = map[ledger.SessionKey]checkpoint.Head{}
	}
	return s.ReadStreamOf(ctx, l.Stream, l.next, func(m Msg) error {
		// Every message is a leaf, bytes as stored; one that is not an
		// envelope (written by someone else, of a version this build does
		// not read) moves no session's head, and verification names it.
		k, seq, hash, ok := ledger.FrameOf(m.Data)
		if !ok {
			if e, err := ledger.Decode(m.Data, s.cfg.Limits); err == nil {
				k, seq, hash, ok = e.Key(), e.Seq(), e.Hash(), true
			}
		}
		l.Log.Add(m.Data)
		if ok {
			l.heads[k] = checkpoint.Head{Tenant: k.Tenant, Session: k.Session, Seq: seq, Hash: hash}
		}
		if l.Index {
			l.leaves = append(l.leaves, LeafPlace{StreamSeq: m.StreamSeq, Key: k, Seq: seq})
		}
		l.next = m.StreamSeq + 1
		return nil
	})
}

// Heads are the sessions' heads as far as l has read, in (tenant, session)
// order.
func (l *LogState) Heads() []checkpoint.Head {
	hs := slices.Collect(maps.Values(l.heads))
	slices.SortFunc(hs, func(a, b checkpoint.Head) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Session, b.Session))
	})
	return hs
}

// LeafOf is the index of the leaf that is session k's envelope at seq.
func (l *LogState) LeafOf(k ledger.SessionKey, seq uint64) (int64, bool) {
	for i, p := range l.leaves {
		if p.Key == k && p.Seq == seq {
			return int64(i), true
		}
	}
	return 0, false
}

// Checkpoint is the checkpoint of what l has read of stream (l.Stream,
// when it names one).
func (l *LogState) Checkpoint(stream string) (*checkpoint.Checkpoint, error) {
	if l.Stream != "" {
		stream = l.Stream
	}
	return checkpoint.New(checkpoint.Origin(stream, &l.Log), &l.Log, l.Heads())
}

// Place is where leaf i is (LogState.Index must have been set).
func (l *LogState) Place(i int64) LeafPlace { return l.leaves[i] }

// Get returns the stored bytes of the message at stream sequence seq of a
// one-stream ledger (GetAt names the stream in a ledger of several).
func (s *Store) Get(ctx context.Context, seq uint64) ([]byte, error) {
	return s.GetAt(ctx, "", seq)
}

// GetAt returns the stored bytes of the message at stream sequence seq of
// the ledger's stream named stream ("": the only one).
func (s *Store) GetAt(ctx context.Context, stream string, seq uint64) ([]byte, error) {
	sh, err := s.shardNamed(stream)
	if err != nil {
		return nil, err
	}
	gctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	m, err := sh.stream.GetMsg(gctx, seq)
	if err != nil {
		return nil, s.wrap("read "+s.where(sh, seq), err)
	}
	return m.Data, nil
}
