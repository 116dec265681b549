package replay

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// StoreFilter picks stored sessions to replay: by tenant and session, and
// by time (a session is picked when any of it falls in [Since, Until];
// zero bounds are open).
type StoreFilter struct {
	store.Filter
	SinceMs, UntilMs int64
}

// StoreSource yields the sessions f picks from st, one at a time, each
// verified in deep mode like a bundle's. A session with a fault comes with
// the fault instead of its envelopes. The session list is read first; each
// session's envelopes only when it is its turn.
func StoreSource(ctx context.Context, st *store.Store, f StoreFilter, lim ledger.Limits) Source {
	return func(yield func(Chain, error) bool) {
		infos, err := st.Sessions(ctx, f.Filter)
		if err != nil {
			yield(Chain{}, err)
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

func readStoredChain(ctx context.Context, st *store.Store, k ledger.SessionKey, lim ledger.Limits) (Chain, error) {
	v := ledger.NewVerifier(ledger.Deep, lim)
	var envs []*ledger.Envelope
	err := st.ReadSession(ctx, k, func(m store.Msg) error {
		v.Add(m.Data, ledger.Position{StreamSeq: m.StreamSeq, Expect: &k})
		if e, err := ledger.Decode(bytes.Clone(m.Data), lim); err == nil && e.Key() == k {
			envs = append(envs, e)
		}
		return nil
	})
	if err != nil {
		return Chain{}, fmt.Errorf("read %s: %w", k, err)
	}
	c := Chain{Source: "store " + st.StreamName(), Key: k}
	if rep := v.Report(); !rep.OK() {
		fs := make([]string, len(rep.Faults))
		for i, f := range rep.Faults {
			fs[i] = f.Error()
		}
		c.Fault = strings.Join(fs, "; ")
		return c, nil
	}
	slices.SortFunc(envs, func(a, b *ledger.Envelope) int { return cmp.Compare(a.Seq(), b.Seq()) })
	c.Envelopes = envs
	return c, nil
}
