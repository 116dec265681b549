package ledger

import (
	"fmt"
	"strconv"

	"github.com/agentledger/agentledger/canon"
)

// Draft is an event checked and canonicalized for sealing. What is left is
// to frame it at a chain position and hash it (Draft.Seal), so an append
// that loses the race for a session's head re-links its drafts without
// validating or canonicalizing them again.
type Draft struct {
	ev  Event // TenantID set, Payload canonical
	lim Limits
}

// Prepare checks ev and canonicalizes its payload under lim. An event that
// passes seals at any chain position (unless its record signature makes it
// outgrow the limit): the size is checked as if at the largest seq, linked
// to a previous envelope.
func Prepare(ev Event, lim Limits) (*Draft, error) {
	if err := checkEvent(&ev); err != nil {
		return nil, err
	}
	if len(ev.Payload) == 0 {
		return nil, &InputError{Path: "$.payload", Offset: -1, Msg: "missing payload"}
	}
	payload, err := Canonicalize(ev.Payload, lim)
	if err != nil {
		return nil, prefixPath(err, "$.payload")
	}
	ev.Payload = payload
	return prepared(ev, lim)
}

// checkEvent fills in ev's default tenant and checks its fields.
func checkEvent(ev *Event) error {
	if ev.TenantID == "" {
		ev.TenantID = DefaultTenant
	}
	return checkFields(ev.TenantID, ev.SessionID, ev.EventType, ev.TsUnixMs)
}

// ParseDraft reads one line of `ledger append` input (see ParseEvent) and
// prepares it, canonicalizing it once: the payload of a canonical line is
// canonical. An event without ts_unix_ms gets now (ms since the epoch).
func ParseDraft(line []byte, lim Limits, now int64) (*Draft, error) {
	ev, hasTime, err := ParseEvent(line, lim)
	if err != nil {
		return nil, err
	}
	if !hasTime {
		ev.TsUnixMs = now
	}
	return prepared(ev, lim)
}

// prepared finishes a draft of an event whose fields are checked and whose
// payload is canonical.
func prepared(ev Event, lim Limits) (*Draft, error) {
	if err := CheckRecordKeys(ev.EventType, ev.Payload, lim); err != nil {
		return nil, err
	}
	if ev.Payload[0] != '{' {
		return nil, &InputError{Path: "$.payload", Offset: -1, Msg: "payload must be a JSON object"}
	}
	d := &Draft{ev: ev, lim: lim}
	if n := d.maxSealedSize(); n > lim.Bytes() {
		return nil, &InputError{Offset: -1, Msg: fmt.Sprintf("sealed envelope would be up to %d bytes, over the %d-byte limit", n, lim.Bytes())}
	}
	return d, nil
}

// maxSealedSize is the size of d's envelope at the largest seq, linked to a
// previous envelope, without a record signature.
func (d *Draft) maxSealedSize() int {
	ev := d.ev
	return len(`{"event_type":`) + quotedLen(ev.EventType) + len(`,"hash":"`) + 64 + len(`",`) +
		len(`"payload":`) + len(ev.Payload) + len(`,"prev_hash":`) + 66 +
		len(`,"seq":`) + len(strconv.FormatUint(maxSafeInteger, 10)) +
		len(`,"session_id":`) + quotedLen(ev.SessionID) + len(`,"tenant_id":`) + quotedLen(ev.TenantID) +
		len(`,"ts_unix_ms":`) + len(strconv.FormatInt(ev.TsUnixMs, 10)) + len(`,"v":`) + len(strconv.Itoa(Version)) + 1
}

func quotedLen(s string) int { return len(appendString(nil, s)) }

// DraftOf is a draft of what e records, to seal at another chain position
// (replay re-links recorded events): e's payload is canonical as stored,
// so nothing is validated or canonicalized again.
func DraftOf(e *Envelope, lim Limits) *Draft {
	return &Draft{ev: Event{TenantID: e.tenant, SessionID: e.session, EventType: e.eventType, TsUnixMs: e.ts, Payload: e.payload}, lim: lim}
}

// PrepareFrom is DraftOf checked against lim as Prepare checks an event:
// the payload's nesting, the sealed size, and a record's keys. The payload
// is not canonicalized again: it is canonical as e stores it.
func PrepareFrom(e *Envelope, lim Limits) (*Draft, error) {
	if canon.NestingDepth(e.payload) > lim.Depth() {
		// Deeper than lim allows (e was read under other limits): refused
		// as Prepare refuses it, with its error.
		if _, err := Canonicalize(e.payload, lim); err != nil {
			return nil, prefixPath(err, "$.payload")
		}
	}
	return prepared(DraftOf(e, lim).ev, lim)
}

// PrepareRecord prepares a record event whose payload is v, written in
// its canonical form (canon.AppendMarshal: what Prepare makes of
// json.Marshal(v)) rather than canonicalized from text; ev.Payload is
// ignored. The record's keys, nesting and size are checked as Prepare
// checks them, the size on the canonical text: Prepare, given
// json.Marshal's text, counts the six bytes it writes for each <, >, & and
// U+2028 or U+2029 where the canonical text, which is what is stored, has
// one to three.
func PrepareRecord(ev Event, v any, lim Limits) (*Draft, error) {
	if err := checkEvent(&ev); err != nil {
		return nil, err
	}
	if !IsRecordType(ev.EventType) {
		return nil, &InputError{Path: "$.event_type", Offset: -1, Msg: fmt.Sprintf("%s is not a record type", ev.EventType)}
	}
	payload, err := canon.AppendMarshal(nil, v)
	if err != nil {
		return nil, &InputError{Path: "$.payload", Offset: -1, Msg: err.Error()}
	}
	ev.Payload = payload
	return prepared(ev, lim) // keys under lim's depth, and the sealed size
}

// Key is the session the draft is for.
func (d *Draft) Key() SessionKey { return SessionKey{Tenant: d.ev.TenantID, Session: d.ev.SessionID} }

// Event is the event as prepared: the default tenant filled in and the
// payload canonical.
func (d *Draft) Event() Event { return d.ev }

// Seal frames d onto the chain whose head is head: seq head.Seq+1 linking to
// head.Hash, or the genesis when head is empty, and hashes it. A record
// with a Signer is signed at that position.
func (d *Draft) Seal(head Head) (*Envelope, error) {
	var seq uint64
	if !head.IsEmpty() {
		if !isHash(head.Hash) {
			return nil, fmt.Errorf("seal: head hash %q is not a lowercase hex SHA-256", head.Hash)
		}
		seq = head.Seq + 1
		if seq > maxSafeInteger {
			return nil, fmt.Errorf("seal: seq %d exceeds 2^53-1", seq)
		}
	}
	ev := d.ev
	e := &Envelope{
		tenant: ev.TenantID, session: ev.SessionID, seq: seq, ts: ev.TsUnixMs,
		eventType: ev.EventType, prevHash: head.Hash,
	}
	payload := ev.Payload
	if ev.Signer != nil && IsRecordType(ev.EventType) {
		var err error
		if payload, err = e.sign(payload, ev.Signer, d.lim); err != nil {
			return nil, err
		}
	}
	e.raw = e.encode(payload)
	if len(e.raw) > d.lim.Bytes() {
		return nil, &InputError{Offset: -1, Msg: fmt.Sprintf("sealed envelope is %d bytes, over the %d-byte limit", len(e.raw), d.lim.Bytes())}
	}
	return e, nil
}
