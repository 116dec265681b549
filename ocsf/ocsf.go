// Package ocsf turns agentledger's record into OCSF 1.9 events for a SIEM.
//
// Every envelope of a session is carried by at least one event, in seq
// order, and every event carries, in the record_integrity profile's
// attestation_list, the chain coordinates of the envelopes it stands for:
// the envelope's SHA-256 over its JCS form (RFC 8785) as the fingerprint,
// the previous envelope as prev_event, the session as chain_uid, and the
// record's Ed25519 signature (key id as authority_uid, the signature value
// under unmapped) where the record is signed. A finding in the SIEM so
// leads back to evidence that `ledger verify` checks.
//
// Classes: a shell call is Process Activity (1007); a file tool File
// System Activity (1001); a web request HTTP Activity (4002); any other
// tool call, an MCP call among them, and every other record (a prompt, a
// model request, a resolution, an engine failure) API Activity (6003),
// with the ai_operation profile's ai_agent naming the agent host. A hook
// event's verdict is folded into its event (security_control: action and
// disposition, policy rule); a deny or ask, and rejected input, is also a
// Detection Finding (2004). Strings are redacted (package detect); sealed
// values stay sealed.
package ocsf

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
)

// Version is the OCSF schema version the events name.
const Version = "1.9.0"

// Event is one OCSF event, ready to be written as JSON.
type Event map[string]any

// link is where a session's chain stands: its last seq and hash.
type link struct {
	seq  uint64
	hash string
}

// Converter turns envelopes into events. Envelopes of one session must
// come in seq order from its genesis; each must extend its session's chain
// (seq and prev_hash), or Add refuses it: an export never carries a
// broken chain.
type Converter struct {
	// Product is the producer's version (metadata.product.version).
	Product string
	// MidChain lets a session start after its genesis (a tail joins
	// sessions already under way): its first envelope anchors it, and
	// every later one must extend it.
	MidChain bool
	last     map[ledger.SessionKey]link
	// held is, per session, a hook event waiting for its verdict.
	held map[ledger.SessionKey]*ledger.Envelope
}

// NewConverter returns a Converter; product is agentledger's version.
func NewConverter(product string) *Converter {
	return &Converter{Product: product, last: map[ledger.SessionKey]link{}, held: map[ledger.SessionKey]*ledger.Envelope{}}
}

// Add takes the next envelope of its session and returns the events it
// completes. A hook event is held until the envelope after it (its
// verdict, which the engine appends with it) arrives.
func (c *Converter) Add(e *ledger.Envelope) ([]Event, error) {
	k := e.Key()
	last, seen := c.last[k]
	switch {
	case !seen && e.Seq() != 0 && !c.MidChain:
		return nil, fmt.Errorf("%s seq %d: the session's chain does not start at seq 0 here", k, e.Seq())
	case seen && (e.Seq() != last.seq+1 || e.PrevHash() != last.hash):
		return nil, fmt.Errorf("%s seq %d: does not extend the chain (seq %d, hash %.12s)", k, e.Seq(), last.seq, last.hash)
	}
	var v *aarts.VerdictRecord
	if e.EventType() == ledger.EventVerdict {
		v = new(aarts.VerdictRecord)
		if err := json.Unmarshal(e.Payload(), v); err != nil {
			return nil, fmt.Errorf("%s seq %d: %w", k, e.Seq(), err)
		}
	}
	c.last[k] = link{seq: e.Seq(), hash: e.Hash()}
	var out []Event
	if h := c.held[k]; h != nil {
		delete(c.held, k)
		if v != nil && v.ForSeq == h.Seq() {
			return c.judged(h, e, v), nil
		}
		out = append(out, c.activity(h, nil, nil))
	}
	if aarts.IsHookPoint(e.EventType()) {
		c.held[k] = e
		return out, nil
	}
	return append(out, c.record(e)...), nil
}

// Flush returns the events of hook events no verdict followed (the end of
// the input, or a chain that ends unjudged).
func (c *Converter) Flush() []Event {
	keys := slices.SortedFunc(maps.Keys(c.held), func(a, b ledger.SessionKey) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Session, b.Session))
	})
	out := make([]Event, 0, len(keys))
	for _, k := range keys {
		out = append(out, c.activity(c.held[k], nil, nil))
		delete(c.held, k)
	}
	return out
}

// judged is a hook event with its verdict: the activity, and a Detection
// Finding when the verdict denies or asks.
func (c *Converter) judged(h, ve *ledger.Envelope, v *aarts.VerdictRecord) []Event {
	out := []Event{c.activity(h, ve, v)}
	if d := v.Verdict.Decision; d == aarts.Deny || d == aarts.Ask {
		out = append(out, c.finding(h, ve, v))
	}
	return out
}
