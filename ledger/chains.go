package ledger

import (
	"cmp"
	"io"
	"maps"
	"slices"
)

// SessionChain is one session as read from a bundle or a store: its
// envelopes in seq order when its chain verified, else its faults.
type SessionChain struct {
	Key       SessionKey
	Envelopes []*Envelope
	Faults    []*ChainError
}

// Collector is the one way chains are read, from a bundle or a store: it
// verifies each envelope in deep mode as it is read and keeps it, decoded
// once, under its session. Checks added to its Verifier see the same pass.
type Collector struct {
	v     *Verifier
	byKey map[SessionKey][]*Envelope
}

// NewCollector returns a Collector with a deep Verifier.
func NewCollector(lim Limits) *Collector {
	return &Collector{v: NewVerifier(Deep, lim), byKey: make(map[SessionKey][]*Envelope)}
}

// Verifier is the collector's verifier, to add checks to.
func (c *Collector) Verifier() *Verifier { return c.v }

// Add verifies one stored envelope and keeps it when it decodes whole.
func (c *Collector) Add(raw []byte, at Position) {
	if e := c.v.add(raw, at); e != nil {
		c.byKey[e.Key()] = append(c.byKey[e.Key()], e)
	}
}

// ReadBundle feeds every line of bundle r to c.
func (c *Collector) ReadBundle(r io.Reader) error {
	return ReadLines(r, c.v.lim, func(line []byte, n int) error {
		c.Add(line, Position{Line: n})
		return nil
	})
}

// ReadStream feeds every line of r to c grouped by session, whichever
// order r holds them in: per session, as a bundle is written, or in the
// order a stream holds them, the envelopes of many sessions interleaved.
// Each session's lines keep their order in r and their line numbers, so
// a gap, a fork, a reordered or a bad envelope is named where it is in r;
// sessions interleaving is no fault. A line that names no readable session
// is fed on its own, where it first stands among the sessions.
func (c *Collector) ReadStream(r io.Reader) error {
	type span struct{ from, to, line int }
	var (
		buf    []byte // every line, once, copied out of the reader
		groups [][]span
		at     = map[SessionKey]int{} // session → its index in groups
	)
	err := ReadLines(r, c.v.lim, func(line []byte, n int) error {
		sp := span{from: len(buf), to: len(buf) + len(line), line: n}
		buf = append(buf, line...)
		k, ok := c.lineKey(line)
		if i, seen := at[k]; ok && seen {
			groups[i] = append(groups[i], sp)
			return nil
		}
		if ok {
			at[k] = len(groups)
		}
		groups = append(groups, []span{sp})
		return nil
	})
	if err != nil {
		return err
	}
	for _, g := range groups {
		for _, sp := range g {
			c.Add(buf[sp.from:sp.to:sp.to], Position{Line: sp.line})
		}
	}
	return nil
}

// lineKey is the session a stored line names, when it can be read: from
// its frame, else (a layout other than the canonical one) by decoding it.
func (c *Collector) lineKey(line []byte) (SessionKey, bool) {
	if k, _, _, ok := FrameOf(line); ok {
		return k, true
	}
	if e, _, _ := decode(line, c.v.lim); e != nil {
		return e.Key(), true
	}
	return SessionKey{}, false
}

// Chains returns the verification report and every session read, ordered
// by tenant and session: a session with faults carries them instead of its
// envelopes. Faults that name no session (a line that is not an envelope)
// come last, as a chain with an empty key.
func (c *Collector) Chains() ([]SessionChain, *Report) {
	rep := c.v.Report()
	faults := map[SessionKey][]*ChainError{}
	for _, f := range rep.Faults {
		k := SessionKey{Tenant: f.Tenant, Session: f.Session}
		faults[k] = append(faults[k], f)
	}
	// Every session read, and every session only faults name.
	keys := slices.Collect(maps.Keys(c.byKey))
	for k := range faults {
		if _, ok := c.byKey[k]; !ok && k != (SessionKey{}) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeyOrder)
	out := make([]SessionChain, 0, len(keys)+1)
	for _, k := range keys {
		sc := SessionChain{Key: k, Faults: faults[k]}
		if len(sc.Faults) == 0 {
			sc.Envelopes = c.byKey[k]
			slices.SortFunc(sc.Envelopes, func(a, b *Envelope) int { return cmp.Compare(a.seq, b.seq) })
		}
		out = append(out, sc)
	}
	if fs := faults[SessionKey{}]; len(fs) > 0 {
		out = append(out, SessionChain{Faults: fs})
	}
	return out, rep
}
