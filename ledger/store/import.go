package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentledger/agentledger/ledger"
)

// ImportResult counts what an import did.
type ImportResult struct {
	Sessions  int `json:"sessions"`  // sessions in the bundle
	Appended  int `json:"appended"`  // envelopes stored
	Unchanged int `json:"unchanged"` // envelopes already stored
}

// Import stores sessions given as verified envelope chains, each keeping
// every byte (and so every hash) it had. It checks every session against the
// store before it stores anything: a session the store already holds must
// agree envelope for envelope with the bundle's (then the bundle's part is a
// no-op and any envelopes beyond the stored head are appended); a difference
// is ErrSessionMismatch naming the session and seq, and nothing is stored.
//
// The chains MUST have been verified (ledger.VerifyBundle) and MUST start at
// seq 0 and be contiguous.
func (s *Store) Import(ctx context.Context, chains [][]*ledger.Envelope, progress func(done uint64)) (ImportResult, error) {
	var res ImportResult
	type plan struct {
		key    ledger.SessionKey
		envs   []*ledger.Envelope
		from   int // first index to append
		expect uint64
	}
	plans := make([]plan, 0, len(chains))
	for _, envs := range chains {
		if len(envs) == 0 {
			continue
		}
		res.Sessions++
		key := envs[0].Key()
		for i, e := range envs {
			if e.Key() != key || e.Seq() != uint64(i) {
				return res, fmt.Errorf("import %s: envelope %d is %s seq %d: chain not verified", key, i, e.Key(), e.Seq())
			}
		}
		p := plan{key: key, envs: envs}
		var i int
		err := s.ReadSession(ctx, key, func(m Msg) error {
			if i >= len(envs) {
				i++
				return nil
			}
			if string(m.Data) != string(envs[i].Bytes()) {
				return fmt.Errorf("import %s seq %d: the stored envelope (stream seq %d) differs from the bundle's: %w", key, i, m.StreamSeq, ErrSessionMismatch)
			}
			p.expect = m.StreamSeq
			i++
			return nil
		})
		if err != nil {
			return res, err
		}
		if i > len(envs) {
			// The store holds more than the bundle; the bundle is a prefix.
			res.Unchanged += len(envs)
			continue
		}
		p.from = i
		res.Unchanged += i
		plans = append(plans, p)
	}
	if res.Unchanged > 0 {
		// What counts as on record already is durable first (another
		// writer's append can be read before its fsync).
		if err := s.durable(ctx); err != nil {
			return res, err
		}
	}
	var done uint64
	for _, p := range plans {
		unlock := s.lockSession(p.key)
		err := s.importChain(ctx, p.key, p.envs[p.from:], p.expect, func(n int) {
			res.Appended += n
			done += uint64(n)
			if progress != nil {
				progress(done)
			}
		})
		unlock()
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// importChain stores pre-sealed envelopes after the stream sequence expect,
// in atomic batches. A batch that was stored although its acknowledgement was
// lost counts as stored; any other writer's envelope in between is
// ErrSessionMismatch.
func (s *Store) importChain(ctx context.Context, key ledger.SessionKey, envs []*ledger.Envelope, expect uint64, stored func(int)) error {
	start := time.Now()
	for _, batch := range chunks(envs) {
		seq, err := s.store(ctx, run{key: key, envs: batch, expect: expect})
		if err != nil {
			fresh, herr := s.headAfterFailure(ctx, key, start)
			if herr != nil || landed(batch, fresh.head) != len(batch) {
				if errors.Is(err, ErrConflict) {
					err = fmt.Errorf("%w: another writer appended during the import", ErrSessionMismatch)
				}
				return fmt.Errorf("import %s seq %d: %w", key, batch[0].Seq(), err)
			}
			seq = fresh.streamSeq
		}
		expect = seq
		s.setHead(key, cachedHead{head: batch[len(batch)-1].Head(), streamSeq: seq})
		stored(len(batch))
	}
	return nil
}
