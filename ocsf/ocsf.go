// Package ocsf turns agentledger's record into OCSF 1.9 events for a SIEM.
//
// Every envelope of a session is carried by at least one event, in seq
// order. Every event carries one attestation (the record_integrity
// profile's attestation_list) as OCSF defines it: the SHA-256 of the
// event's own JCS serialization (RFC 8785) as its fingerprint, the
// session as its chain_uid, and the session's event before it as its
// prev_event, so that an OCSF verifier finds a dropped or altered event.
// Beside it, under unmapped.agentledger.envelopes, each event names the
// ledger envelopes it stands for — seq, hash, previous hash, and a
// record's Ed25519 signature (OCSF has no member for a signature's value)
// — so a finding in the SIEM leads back to evidence that `ledger verify`
// checks.
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
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
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
	// heads is, per OCSF chain (a session), the last event attested.
	heads map[string]Event
}

// NewConverter returns a Converter; product is agentledger's version.
func NewConverter(product string) *Converter {
	return &Converter{Product: product, last: map[ledger.SessionKey]link{}, held: map[ledger.SessionKey]*ledger.Envelope{}, heads: map[string]Event{}}
}

// Add takes the next envelope of its session and returns the events it
// completes. A hook event is held until the envelope after it (its
// verdict, which the engine appends with it) arrives.
func (c *Converter) Add(e *ledger.Envelope) ([]Event, error) {
	out, err := c.add(e)
	if err != nil {
		return nil, err
	}
	return c.attest(out)
}

func (c *Converter) add(e *ledger.Envelope) ([]Event, error) {
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
	out, err := c.attest(c.flush())
	if err != nil {
		return nil // not reached: the events are the converter's own JSON
	}
	return out
}

func (c *Converter) flush() []Event {
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
		out = append(out, c.finding(h, ve, v, out[0]))
	}
	return out
}

// attest gives each event its record_integrity attestation, as OCSF
// defines it: one attestation (agentledger's) whose fingerprint is the
// SHA-256 of the event's JCS serialization (RFC 8785) with that
// fingerprint (and signatures, which it has none of) left out, in the
// chain of its session's events (chain_uid), each naming the one before
// it (prev_event: its metadata.uid, type_uid and fingerprint). The
// ledger's own envelopes and signatures are under
// unmapped.agentledger.envelopes.
func (c *Converter) attest(evs []Event) ([]Event, error) {
	for _, ev := range evs {
		meta := ev["metadata"].(Event)
		chain := meta["correlation_uid"].(string)
		att := Event{"uid": meta["uid"], "chain_uid": chain}
		if head := c.heads[chain]; head != nil {
			att["prev_event"] = head
		}
		ev["attestation_list"] = []Event{att}
		fp, err := Fingerprint(ev)
		if err != nil {
			return nil, err
		}
		att["fingerprint"] = Event{"algorithm_id": 3, "algorithm": "SHA-256", "value": fp, "encoding_id": 1, "encoding": "Hex",
			"serialization_id": 2, "serialization": "JCS"}
		c.heads[chain] = Event{"uid": meta["uid"], "type_uid": ev["type_uid"],
			"fingerprint": Event{"algorithm_id": 3, "algorithm": "SHA-256", "value": fp, "encoding_id": 1, "encoding": "Hex"}}
	}
	return evs, nil
}

// Fingerprint is the SHA-256 (hex) of an OCSF event's JCS serialization
// with its first attestation's fingerprint and signatures left out: what
// that attestation's fingerprint holds. ev is not changed.
func Fingerprint(ev Event) (string, error) {
	raw, err := json.Marshal(ev)
	if err != nil {
		return "", err
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return "", err
	}
	if atts, _ := m["attestation_list"].([]any); len(atts) > 0 {
		if a, ok := atts[0].(map[string]any); ok {
			delete(a, "fingerprint")
			delete(a, "signatures")
		}
	}
	raw, err = json.Marshal(m)
	if err != nil {
		return "", err
	}
	canonical, err := ledger.Canonicalize(raw, ledger.Limits{})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}
