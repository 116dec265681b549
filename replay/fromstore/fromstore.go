// Package fromstore reads the sessions exact replay re-runs from the
// ledger's store. It lives apart from package replay so that replay itself
// links no NATS client or server: replaying a bundle needs no network.
package fromstore

import (
	"context"
	"fmt"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/replay"
)

// Filter picks stored sessions to replay: by tenant and session, and
// by time (a session is picked when any of it falls in [Since, Until];
// zero bounds are open).
type Filter struct {
	store.Filter
	SinceMs, UntilMs int64
}

// Source yields the sessions f picks from st, one at a time, each
// verified in deep mode like a bundle's. A session with a fault comes with
// the fault instead of its envelopes. The session list is read first; each
// session's envelopes only when it is its turn.
func Source(ctx context.Context, st *store.Store, f Filter, lim ledger.Limits) replay.Source {
	return func(yield func(replay.Chain, error) bool) {
		infos, err := st.Sessions(ctx, f.Filter)
		if err != nil {
			yield(replay.Chain{}, err)
			return
		}
		for _, info := range infos {
			if f.SinceMs != 0 && info.LastTs < f.SinceMs || f.UntilMs != 0 && info.FirstTs > f.UntilMs {
				continue
			}
			c, err := readStoredChain(ctx, st, info.Key(), lim)
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}

func readStoredChain(ctx context.Context, st *store.Store, k ledger.SessionKey, lim ledger.Limits) (replay.Chain, error) {
	col := ledger.NewCollector(lim)
	err := st.ReadSession(ctx, k, func(m store.Msg) error {
		col.Add(m.Data, ledger.Position{StreamSeq: m.StreamSeq, Expect: &k})
		return nil
	})
	if err != nil {
		return replay.Chain{}, fmt.Errorf("read %s: %w", k, err)
	}
	sc := ledger.SessionChain{Key: k}
	sessions, rep := col.Chains()
	switch {
	case !rep.OK():
		sc.Faults = rep.Faults
	case len(sessions) == 1:
		sc.Envelopes = sessions[0].Envelopes
	}
	return replay.ChainOf("store "+st.StreamName(), sc), nil
}
