package checkpoint

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"

	"github.com/agentledger/agentledger/ledger"
)

// Carried is a ledger.Check that collects the checkpoints a bundle carries
// (its Checkpoint records, each a signed note): a bundle is evidence about
// itself. After the pass, Faults holds the bundle to each of them — every
// session a checkpoint lists must reach the head it names — and each to
// the others and to its own record.
type Carried struct {
	keys, records map[string]ed25519.PublicKey
	found         []carried
	bad           []*ledger.ChainError
}

type carried struct {
	at   *ledger.Envelope
	ck   *Checkpoint
	name string
}

// NewCarried returns a Carried that opens each carried note with a key of
// keys (checkpoint keys only), or, with none, reads it unchecked (the
// record's own signature, when record keys are given, vouches for it). A
// note a key of records signed is a fault either way (see Recorded).
func NewCarried(keys, records map[string]ed25519.PublicKey) *Carried {
	return &Carried{keys: keys, records: records}
}

// Envelope implements ledger.Check.
func (c *Carried) Envelope(raw []byte, decoded *ledger.Envelope, _ ledger.Position) []*ledger.ChainError {
	if decoded == nil {
		if !bytes.Contains(raw, []byte(`"`+ledger.EventCheckpoint+`"`)) {
			return nil
		}
		e, err := ledger.Decode(raw, ledger.Limits{MaxBytes: len(raw) + 1, MaxDepth: 64})
		if err != nil {
			return nil // chain verification names it
		}
		decoded = e
	}
	if decoded.EventType() != ledger.EventCheckpoint {
		return nil
	}
	ck, fault := Recorded(decoded, c.keys, c.records)
	if fault != nil {
		return []*ledger.ChainError{fault}
	}
	c.found = append(c.found, carried{at: decoded, ck: ck, name: fmt.Sprintf("%s seq %d", decoded.Key(), decoded.Seq())})
	return nil
}

// Recorded reads the checkpoint a Checkpoint record e carries: its note,
// opened with a key of keys (checkpoint keys only; with none, read
// unchecked), which must agree with what the record says beside it (its
// size and number of sessions). A record that does not read, does not
// agree, or whose note a key of records signed (in any format), is a
// bad_record fault.
func Recorded(e *ledger.Envelope, keys, records map[string]ed25519.PublicKey) (*Checkpoint, *ledger.ChainError) {
	fault := func(detail string) *ledger.ChainError {
		return &ledger.ChainError{Kind: ledger.BadRecord, Tenant: e.TenantID(), Session: e.SessionID(), Seq: e.Seq(), Detail: detail}
	}
	var rec struct {
		Note     string `json:"note"`
		Size     *int64 `json:"size"`
		Sessions *int   `json:"sessions"`
	}
	if err := json.Unmarshal(e.Payload(), &rec); err != nil {
		return nil, fault("the Checkpoint record does not read: " + err.Error())
	}
	ck, err := ParseNote([]byte(rec.Note))
	switch {
	case err == nil && len(keys) > 0:
		ck, err = OpenByRole([]byte(rec.Note), keys, records)
	case err == nil && len(records) > 0:
		if _, rerr := OpenWith([]byte(rec.Note), records); rerr == nil {
			ck, err = nil, ErrRecordsKey
		}
	}
	switch {
	case err != nil:
		return nil, fault("the recorded checkpoint: " + err.Error())
	case rec.Size != nil && *rec.Size != ck.Size || rec.Sessions != nil && *rec.Sessions != len(ck.Heads):
		return nil, fault(fmt.Sprintf("the Checkpoint record says size %d, %d sessions; its note says %d, %d", deref(rec.Size), deref(rec.Sessions), ck.Size, len(ck.Heads)))
	}
	return ck, nil
}

// Vouching are the carried checkpoints whose signature was checked with a
// checkpoint key (none when no key was given): what can vouch for records
// of an older format.
func (c *Carried) Vouching() []*Checkpoint {
	if len(c.keys) == 0 {
		return nil
	}
	out := make([]*Checkpoint, len(c.found))
	for i, f := range c.found {
		out[i] = f.ck
	}
	return out
}

// Covers reports whether one of cks lists session k at seq or beyond:
// signed with a checkpoint key, it vouches for the session's records up to
// there.
func Covers(cks []*Checkpoint, k ledger.SessionKey, seq uint64) bool {
	for _, ck := range cks {
		for _, h := range ck.Heads {
			if h.key() == k && h.Seq >= seq {
				return true
			}
		}
	}
	return false
}

// Uncovered returns a fault for each run of records verified under an
// older format's rules (legacy) that none of vouching — checkpoints signed
// with a checkpoint key — covers: records of the format before record
// signatures are vouched for by such a checkpoint, never by the time they
// claim, which whoever wrote them chose.
func Uncovered(legacy []ledger.Legacy, vouching []*Checkpoint) []*ledger.ChainError {
	var out []*ledger.ChainError
	for _, l := range legacy {
		if !Covers(vouching, ledger.SessionKey{Tenant: l.Tenant, Session: l.Session}, l.LastSeq) {
			out = append(out, &ledger.ChainError{Kind: ledger.UnsignedRecord, Tenant: l.Tenant, Session: l.Session, Seq: l.FirstSeq,
				Detail: fmt.Sprintf("%d records of %s (seq %d-%d) that no checkpoint signed with a checkpoint key covers: unsigned records are vouched for by a checkpoint, never by the time they claim",
					l.Records, l.Format, l.FirstSeq, l.LastSeq)})
		}
	}
	return out
}

// AllConsistent returns the faults between every two of cks (named by
// names, in the same order): Consistent, pair by pair, except for two
// checkpoints of different streams of one ledger (OtherStreams), which
// are of two logs.
func AllConsistent(cks []*Checkpoint, names []string) []*ledger.ChainError {
	var out []*ledger.ChainError
	for i := range cks {
		for j := i + 1; j < len(cks); j++ {
			if OtherStreams(cks[i].Origin, cks[j].Origin) {
				continue
			}
			out = append(out, Consistent(cks[i], cks[j], names[i], names[j])...)
		}
	}
	return out
}

// Count is the number of checkpoints the bundle carries.
func (c *Carried) Count() int { return len(c.found) }

// Faults holds what was read (through hashAt: the verifier's pass) to
// every carried checkpoint, as far as match selects the sessions (nil:
// all), and every two carried checkpoints to each other.
func (c *Carried) Faults(hashAt func(k ledger.SessionKey, seq uint64) (string, bool), match func(ledger.SessionKey) bool) []*ledger.ChainError {
	cks, names := make([]*Checkpoint, len(c.found)), make([]string, len(c.found))
	for i, f := range c.found {
		cks[i], names[i] = f.ck, f.name
	}
	out := AllConsistent(cks, names)
	for _, a := range c.found {
		for _, h := range a.ck.Heads {
			if match != nil && !match(h.key()) {
				continue
			}
			got, ok := hashAt(h.key(), h.Seq)
			switch {
			case !ok:
				out = append(out, &ledger.ChainError{Kind: Truncated, Tenant: h.Tenant, Session: h.Session, Seq: h.Seq, Want: h.Hash,
					Detail: fmt.Sprintf("the checkpoint the bundle carries at %s has the session up to seq %d; the bundle ends before it", a.name, h.Seq)})
			case got != h.Hash:
				out = append(out, &ledger.ChainError{Kind: Rewritten, Tenant: h.Tenant, Session: h.Session, Seq: h.Seq, Want: h.Hash, Got: got,
					Detail: fmt.Sprintf("the checkpoint the bundle carries at %s has another hash at this seq", a.name)})
			}
		}
	}
	return out
}

// deref is *p, or the zero value when p is nil.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}
