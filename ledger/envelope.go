// Package ledger defines agentledger's sealed envelope: its canonical
// (RFC 8785) byte form, its SHA-256 hash chain, verification of chains in a
// fast and a deep mode, and NDJSON bundles.
//
// The package is pure: it reads and writes through io.Reader and io.Writer,
// never touches the network, the file system or the clock. Storage lives in
// the store subpackage.
package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/agentledger/agentledger/canon"
)

// Version is the envelope format version written in every envelope's "v".
const Version = 1

// DefaultTenant is the tenant of an event that names none.
const DefaultTenant = "default"

// MaxSessionIDBytes bounds a session id, so that every subject derived from
// it stays well inside NATS's control-line limit.
const MaxSessionIDBytes = 256

// MaxSafeInteger is the largest seq or timestamp an envelope may carry:
// 2^53-1, the largest integer every JSON consumer holds exactly.
const MaxSafeInteger = maxSafeInteger

var tenantPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Event is an unsealed record: what a caller asks to append.
type Event struct {
	TenantID  string          // "" means DefaultTenant
	SessionID string          // required, at most MaxSessionIDBytes
	EventType string          // one of EventTypes
	TsUnixMs  int64           // milliseconds since the Unix epoch, 0..2^53-1
	Payload   json.RawMessage // a JSON object
	// Signer, when set, signs a record of agentledger's own (IsRecordType)
	// at its chain position: Seal adds the "sig" member (see SignedRecord).
	// Hook events are the hosts' words and are never signed.
	Signer RecordSigner
}

// Head identifies the last envelope of a session chain. The zero Head is the
// head of an empty session: the next envelope is the genesis (seq 0,
// prev_hash null).
type Head struct {
	Seq  uint64
	Hash string
}

// IsEmpty reports whether h is the head of an empty session.
func (h Head) IsEmpty() bool { return h.Hash == "" }

// Envelope is a sealed record. Its canonical bytes and hash are computed once
// when it is sealed or decoded and never change; accessors return copies or
// immutable values, except Bytes and Payload, whose results the caller MUST
// NOT modify.
type Envelope struct {
	tenant    string
	session   string
	seq       uint64
	ts        int64
	eventType string
	payload   []byte // canonical, aliases raw
	prevHash  string // "" at genesis
	hash      string
	raw       []byte // the stored form: JCS of the whole envelope
}

// TenantID returns the envelope's tenant.
func (e *Envelope) TenantID() string { return e.tenant }

// SessionID returns the envelope's session.
func (e *Envelope) SessionID() string { return e.session }

// Seq returns the envelope's position in its session, from 0.
func (e *Envelope) Seq() uint64 { return e.seq }

// TsUnixMs returns the envelope's timestamp in milliseconds.
func (e *Envelope) TsUnixMs() int64 { return e.ts }

// EventType returns the envelope's event type.
func (e *Envelope) EventType() string { return e.eventType }

// Payload returns the canonical JSON of the payload.
func (e *Envelope) Payload() json.RawMessage { return e.payload }

// PrevHash returns the previous envelope's hash, "" for the genesis.
func (e *Envelope) PrevHash() string { return e.prevHash }

// Hash returns the lowercase hex SHA-256 of the envelope without its hash.
func (e *Envelope) Hash() string { return e.hash }

// Bytes returns the stored form: the RFC 8785 form of the whole envelope.
func (e *Envelope) Bytes() []byte { return e.raw }

// Head returns the chain head this envelope makes.
func (e *Envelope) Head() Head { return Head{Seq: e.seq, Hash: e.hash} }

// Key returns the envelope's session key.
func (e *Envelope) Key() SessionKey { return SessionKey{Tenant: e.tenant, Session: e.session} }

// SessionKey names one chain.
type SessionKey struct {
	Tenant  string
	Session string
}

func (k SessionKey) String() string { return k.Tenant + "/" + k.Session }

// Less orders keys by tenant, then session, bytewise.
func (k SessionKey) Less(o SessionKey) bool {
	if k.Tenant != o.Tenant {
		return k.Tenant < o.Tenant
	}
	return k.Session < o.Session
}

// Partition is the bucket of n (0 to n-1) session k hashes into: the first
// eight bytes of SHA-256(tenant NUL session), big-endian, modulo n. It is
// stable across processes and versions: a fleet's engines partition their
// sessions by it and a ledger of several streams places each session in
// one by it, so it MUST NOT change.
func (k SessionKey) Partition(n int) int {
	if n <= 1 {
		return 0
	}
	h := sha256.Sum256([]byte(k.Tenant + "\x00" + k.Session))
	return int(binary.BigEndian.Uint64(h[:8]) % uint64(n))
}

// Seal seals ev onto the chain whose head is head: seq head.Seq+1 linking to
// head.Hash, or the genesis when head is empty. The payload is validated as
// I-JSON under lim and canonicalized. It is Prepare and Draft.Seal.
func Seal(head Head, ev Event, lim Limits) (*Envelope, error) {
	d, err := Prepare(ev, lim)
	if err != nil {
		return nil, err
	}
	return d.Seal(head)
}

// prefixPath re-roots the JSON path of an *InputError under prefix.
func prefixPath(err error, prefix string) error {
	if ie, ok := err.(*InputError); ok {
		c := *ie
		if c.Path == "" || c.Path == "$" {
			c.Path = prefix
		} else {
			c.Path = prefix + c.Path[1:]
		}
		return &c
	}
	return err
}

// ValidKey checks that an envelope can carry tenant and session: the
// tenant matches [a-z0-9][a-z0-9-]{0,62}, the session is 1 to
// MaxSessionIDBytes bytes of UTF-8.
func ValidKey(tenant, session string) error {
	return checkFields(tenant, session, EventCheckpoint, 0)
}

func checkFields(tenant, session, eventType string, ts int64) error {
	switch {
	case !tenantPattern.MatchString(tenant):
		return &InputError{Path: "$.tenant_id", Offset: -1, Msg: fmt.Sprintf("tenant_id %s must match [a-z0-9][a-z0-9-]{0,62}", strconv.Quote(tenant))}
	case session == "":
		return &InputError{Path: "$.session_id", Offset: -1, Msg: "session_id must not be empty"}
	case len(session) > MaxSessionIDBytes:
		return &InputError{Path: "$.session_id", Offset: -1, Msg: fmt.Sprintf("session_id is %d bytes, over the %d-byte limit", len(session), MaxSessionIDBytes)}
	case !utf8.ValidString(session):
		return &InputError{Path: "$.session_id", Offset: -1, Msg: "session_id is not valid UTF-8"}
	case eventType == "":
		return &InputError{Path: "$.event_type", Offset: -1, Msg: "event_type must not be empty"}
	case !IsEventType(eventType):
		return &InputError{Path: "$.event_type", Offset: -1, Msg: fmt.Sprintf("unknown event_type %s (want an AARTS hook point or one of Verdict, Resolution, EngineFailure, Checkpoint)", strconv.Quote(clip([]byte(eventType))))}
	case ts < 0 || ts > maxSafeInteger:
		return &InputError{Path: "$.ts_unix_ms", Offset: -1, Msg: fmt.Sprintf("ts_unix_ms %d is outside 0..2^53-1", ts)}
	}
	return nil
}

func isHash(s string) bool { return isHashBytes([]byte(s)) }

// encode writes the canonical envelope around the canonical payload and
// fills in the hash. Members are written in RFC 8785 order:
// event_type, hash, payload, prev_hash, seq, session_id, tenant_id,
// ts_unix_ms, v.
func (e *Envelope) encode(payload []byte) []byte {
	b := make([]byte, 0, len(payload)+len(e.session)+len(e.tenant)+len(e.eventType)+260)
	b = append(b, `{"event_type":`...)
	b = appendString(b, e.eventType)
	b = append(b, ',')
	hashAt := len(b)
	b = append(b, `"hash":"`...)
	b = append(b, zeroHash[:]...)
	b = append(b, `",`...)
	hashEnd := len(b)
	b = append(b, `"payload":`...)
	pAt := len(b)
	b = append(b, payload...)
	e.payload = b[pAt:len(b):len(b)]
	b = append(b, `,"prev_hash":`...)
	if e.prevHash == "" {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = append(b, e.prevHash...)
		b = append(b, '"')
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, e.seq, 10)
	b = append(b, `,"session_id":`...)
	b = appendString(b, e.session)
	b = append(b, `,"tenant_id":`...)
	b = appendString(b, e.tenant)
	b = append(b, `,"ts_unix_ms":`...)
	b = strconv.AppendInt(b, e.ts, 10)
	b = append(b, `,"v":`...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, '}')
	sum := hashWithout(b, hashAt, hashEnd)
	hex.Encode(b[hashAt+len(`"hash":"`):], sum[:])
	e.hash = string(b[hashAt+len(`"hash":"`) : hashAt+len(`"hash":"`)+64])
	return b
}

var zeroHash [64]byte

// hashWithout returns SHA-256 of b with b[from:to] left out.
func hashWithout(b []byte, from, to int) [32]byte {
	h := sha256.New()
	h.Write(b[:from])
	h.Write(b[to:])
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// appendString appends s as an RFC 8785 string.
func appendString(b []byte, s string) []byte { return canon.AppendString(b, s) }
