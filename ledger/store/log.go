package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
)

// LogState is a stream's Merkle log (checkpoint.Log: every envelope, in
// stream order) and its sessions' heads, as far as it has been read.
// CatchUp reads what the stream added since; the zero value starts from
// the beginning. It is not safe for concurrent use.
type LogState struct {
	Log   checkpoint.Log
	heads map[ledger.SessionKey]checkpoint.Head
	next  uint64 // the stream sequence to read from
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

// CatchUp reads every message the stream holds after what l has read.
func (s *Store) CatchUp(ctx context.Context, l *LogState) error {
	if l.heads == nil {
		l.heads = map[ledger.SessionKey]checkpoint.Head{}
	}
	return s.ReadStream(ctx, l.next, func(m Msg) error {
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

// Checkpoint is the checkpoint of what l has read of stream.
func (l *LogState) Checkpoint(stream string) (*checkpoint.Checkpoint, error) {
	return checkpoint.New(checkpoint.Origin(stream, &l.Log), &l.Log, l.Heads())
}

// Place is where leaf i is (LogState.Index must have been set).
func (l *LogState) Place(i int64) LeafPlace { return l.leaves[i] }

// Get returns the stored bytes of the message at stream sequence seq.
func (s *Store) Get(ctx context.Context, seq uint64) ([]byte, error) {
	gctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	m, err := s.stream.GetMsg(gctx, seq)
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("read stream seq %d", seq), err)
	}
	return m.Data, nil
}
