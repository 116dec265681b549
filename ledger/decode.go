package ledger

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/agentledger/agentledger/canon"
)

// frame is the envelope's members as read straight off canonical bytes,
// without parsing the payload. Byte slices alias the scanned input.
type frame struct {
	eventType, tenant, session cstr
	seq                        uint64
	ts                         int64
	hash                       []byte // 64 lowercase hex digits
	prevHash                   []byte // nil for null
	hashAt, hashEnd            int    // the `"hash":"…",` member
	payloadAt, payloadEnd      int
}

// cstr is the text of a canonical JSON string, between its quotes.
type cstr struct {
	b       []byte
	escaped bool
}

func (c cstr) String() string { return decodeKey(c.b, c.escaped) }

const (
	fieldHash     = `"hash":"`
	trailerPrefix = `,"prev_hash":`
)

// scanFrame reads the members of an envelope in canonical layout. It reads
// the fixed members around the payload and skips the payload itself, so its
// cost does not grow with the payload. It accepts only the exact canonical
// layout; anything else reports false and the caller parses in full.
//
// The payload ends at the last `,"prev_hash":` in b: in canonical JSON a
// quote inside a string is always escaped, and every member after the
// payload is a string, a number or null, so the top-level prev_hash member is
// the only unescaped occurrence after the payload.
func scanFrame(b []byte) (f frame, ok bool) {
	s := scanner{b: b}
	if !s.lit(`{"event_type":`) {
		return f, false
	}
	if f.eventType, ok = s.str(); !ok {
		return f, false
	}
	if !s.lit(",") {
		return f, false
	}
	f.hashAt = s.i
	if !s.lit(fieldHash) || s.i+64+2 > len(b) {
		return f, false
	}
	f.hash = b[s.i : s.i+64 : s.i+64]
	if !isHashBytes(f.hash) {
		return f, false
	}
	s.i += 64
	if !s.lit(`",`) {
		return f, false
	}
	f.hashEnd = s.i
	if !s.lit(`"payload":`) {
		return f, false
	}
	f.payloadAt = s.i
	end := lastTrailer(b)
	if end <= f.payloadAt {
		return f, false
	}
	f.payloadEnd = end
	s.i = end + len(trailerPrefix)
	if !s.lit("null") {
		if !s.lit(`"`) || s.i+65 > len(b) {
			return f, false
		}
		f.prevHash = b[s.i : s.i+64 : s.i+64]
		if !isHashBytes(f.prevHash) {
			return f, false
		}
		s.i += 64
		if !s.lit(`"`) {
			return f, false
		}
	}
	var n uint64
	if !s.lit(`,"seq":`) {
		return f, false
	}
	if n, ok = s.uint(); !ok {
		return f, false
	}
	f.seq = n
	if !s.lit(`,"session_id":`) {
		return f, false
	}
	if f.session, ok = s.str(); !ok {
		return f, false
	}
	if !s.lit(`,"tenant_id":`) {
		return f, false
	}
	if f.tenant, ok = s.str(); !ok {
		return f, false
	}
	if !s.lit(`,"ts_unix_ms":`) {
		return f, false
	}
	if n, ok = s.uint(); !ok {
		return f, false
	}
	f.ts = int64(n)
	if !s.lit(`,"v":1}`) || s.i != len(b) {
		return f, false
	}
	return f, true
}

// lastTrailer returns the index of the last `,"prev_hash":` in b, or -1.
// It first walks the canonical trailer backwards from the end, touching only
// the trailer's own bytes; when b does not end in a canonical trailer it
// falls back to a search.
func lastTrailer(b []byte) int {
	if i := walkTrailer(b); i >= 0 {
		return i
	}
	return bytes.LastIndex(b, []byte(trailerPrefix))
}

// walkTrailer parses `,"prev_hash":…,"seq":N,"session_id":"…","tenant_id":"…",
// "ts_unix_ms":N,"v":1}` backwards from the end of b.
func walkTrailer(b []byte) int {
	i, ok := cutSuffix(b, len(b), `,"v":1}`)
	if !ok {
		return -1
	}
	if i = skipDigits(b, i); i < 0 {
		return -1
	}
	if i, ok = cutSuffix(b, i, `,"ts_unix_ms":`); !ok {
		return -1
	}
	// tenant_id: no quote or backslash inside a valid tenant.
	if i, ok = cutSuffix(b, i, `"`); !ok {
		return -1
	}
	j := bytes.LastIndexByte(b[:i], '"')
	if j < 0 || bytes.IndexByte(b[j:i], '\\') >= 0 {
		return -1
	}
	if i, ok = cutSuffix(b, j, `,"tenant_id":`); !ok {
		return -1
	}
	// session_id: its opening quote is the only quote preceded by
	// `,"session_id":`; a quote inside the string is always escaped.
	if i, ok = cutSuffix(b, i, `"`); !ok {
		return -1
	}
	for {
		j = bytes.LastIndexByte(b[:i], '"')
		if j < 0 {
			return -1
		}
		if k, ok := cutSuffix(b, j, `,"session_id":`); ok {
			i = k
			break
		}
		i = j
	}
	if i = skipDigits(b, i); i < 0 {
		return -1
	}
	if i, ok = cutSuffix(b, i, `,"seq":`); !ok {
		return -1
	}
	if k, ok := cutSuffix(b, i, "null"); ok {
		i = k
	} else if i >= 66 && b[i-1] == '"' && b[i-66] == '"' {
		i -= 66
	} else {
		return -1
	}
	if i, ok = cutSuffix(b, i, trailerPrefix); !ok {
		return -1
	}
	return i
}

// cutSuffix reports whether b[:end] ends with suffix and where it starts.
func cutSuffix(b []byte, end int, suffix string) (int, bool) {
	start := end - len(suffix)
	if start < 0 || string(b[start:end]) != suffix {
		return 0, false
	}
	return start, true
}

// skipDigits returns where the run of digits ending at end starts, or -1 if
// there is none.
func skipDigits(b []byte, end int) int {
	i := end
	for i > 0 && b[i-1] >= '0' && b[i-1] <= '9' {
		i--
	}
	if i == end {
		return -1
	}
	return i
}

var hexTable = func() (t [256]bool) {
	for _, c := range []byte(hexDigits) {
		t[c] = true
	}
	return t
}()

func isHashBytes(h []byte) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !hexTable[c] {
			return false
		}
	}
	return true
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) lit(l string) bool {
	if len(s.b)-s.i < len(l) || string(s.b[s.i:s.i+len(l)]) != l {
		return false
	}
	s.i += len(l)
	return true
}

// uint reads a canonical non-negative integer no larger than 2^53-1.
func (s *scanner) uint() (uint64, bool) {
	start := s.i
	var n uint64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + uint64(s.b[s.i]-'0')
		s.i++
		if s.i-start > 16 {
			return 0, false
		}
	}
	digits := s.i - start
	if digits == 0 || digits > 1 && s.b[start] == '0' || n > maxSafeInteger {
		return 0, false
	}
	return n, true
}

// str reads a string in canonical form: only the escapes RFC 8785 writes.
func (s *scanner) str() (cstr, bool) {
	if !s.lit(`"`) {
		return cstr{}, false
	}
	start := s.i
	escaped := false
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i:s.i]
			s.i++
			return cstr{b: v, escaped: escaped}, true
		case c < 0x20:
			return cstr{}, false
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return cstr{}, false
			}
			escaped = true
			switch s.b[s.i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				// Canonical \u escapes are \u00 followed by two lowercase hex
				// digits naming a control character without a short form.
				if s.i+6 > len(s.b) || s.b[s.i+2] != '0' || s.b[s.i+3] != '0' || !(s.b[s.i+4] == '0' || s.b[s.i+4] == '1') || !isLowerHex(s.b[s.i+5]) {
					return cstr{}, false
				}
				s.i += 6
			default:
				return cstr{}, false
			}
		default:
			s.i++
		}
	}
	return cstr{}, false
}

// hashMatches reports whether the hash stored in b (the bytes f was scanned
// from) is the SHA-256 of b without its hash member.
func (f *frame) hashMatches(b []byte) bool {
	sum := hashWithout(b, f.hashAt, f.hashEnd)
	var got [64]byte
	hex.Encode(got[:], sum[:])
	return bytes.Equal(got[:], f.hash)
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// Decode reads one stored envelope. The bytes MUST be the envelope's
// canonical form and its hash MUST match; the result's Bytes are a copy of
// b. A violation is an *InputError (malformed, not I-JSON, a field missing
// or mistyped, not canonical) or a *ChainError of kind hash_mismatch.
func Decode(b []byte, lim Limits) (*Envelope, error) {
	e, canonical, err := decode(b, lim)
	switch {
	case err != nil:
		return nil, err
	case !canonical:
		return nil, &ChainError{Kind: NotCanonical, Tenant: e.tenant, Session: e.session, Seq: e.seq,
			Detail: "stored bytes are not the envelope's RFC 8785 form"}
	case (e.seq == 0) != (e.prevHash == ""):
		return nil, &ChainError{Kind: BadGenesis, Tenant: e.tenant, Session: e.session, Seq: e.seq,
			Detail: "prev_hash must be null at seq 0 and only there"}
	}
	return e, nil
}

// decode parses b in full, whatever its layout, and reports whether b is
// canonical. The envelope it returns holds the canonical form. When the hash
// of that form does not match the stored hash it returns the envelope and a
// *ChainError of kind hash_mismatch; any other error means b is not an
// envelope at all.
func decode(b []byte, lim Limits) (e *Envelope, canonical bool, err error) {
	c, err := Canonicalize(b, lim)
	if err != nil {
		return nil, false, err
	}
	f, ok := scanFrame(c)
	if !ok {
		return nil, false, diagnose(c)
	}
	tenant, session, eventType := f.tenant.String(), f.session.String(), f.eventType.String()
	if err := checkFields(tenant, session, eventType, f.ts); err != nil {
		return nil, false, err
	}
	if c[f.payloadAt] != '{' {
		return nil, false, &InputError{Path: "$.payload", Offset: -1, Msg: "payload must be a JSON object"}
	}
	if err := CheckRecordKeys(eventType, c[f.payloadAt:f.payloadEnd], lim); err != nil {
		return nil, false, err
	}
	canonical = bytes.Equal(b, c)
	e = &Envelope{
		tenant: tenant, session: session, seq: f.seq, ts: f.ts, eventType: eventType,
		prevHash: string(f.prevHash), hash: string(f.hash), raw: c, payload: c[f.payloadAt:f.payloadEnd:f.payloadEnd],
	}
	if !f.hashMatches(c) {
		return e, canonical, &ChainError{Kind: HashMismatch, Tenant: tenant, Session: session, Seq: f.seq,
			Want: e.hash, Got: hexString(hashWithout(c, f.hashAt, f.hashEnd))}
	}
	return e, canonical, nil
}

func hexString(sum [32]byte) string {
	var out [64]byte
	for i, v := range sum {
		out[2*i] = hexDigits[v>>4]
		out[2*i+1] = hexDigits[v&0xF]
	}
	return string(out[:])
}

// envelopeFields describes the members an envelope must have, for diagnosis.
var envelopeFields = []struct {
	name, kind string
}{
	{"event_type", "string"}, {"hash", "string"}, {"payload", "object"}, {"prev_hash", "string or null"},
	{"seq", "integer"}, {"session_id", "string"}, {"tenant_id", "string"}, {"ts_unix_ms", "integer"}, {"v", "integer"},
}

// diagnose explains why canonical JSON c is not an envelope.
func diagnose(c []byte) error {
	if c[0] != '{' {
		return &InputError{Path: "$", Offset: -1, Msg: "envelope must be a JSON object"}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(c, &m); err != nil {
		return &InputError{Path: "$", Offset: -1, Msg: fmt.Sprintf("envelope must be a JSON object: %v", err)}
	}
	for _, f := range envelopeFields {
		v, ok := m[f.name]
		if !ok {
			return &InputError{Path: "$." + f.name, Offset: -1, Msg: "missing required field " + f.name}
		}
		if !jsonKind(v, f.kind) {
			return &InputError{Path: "$." + f.name, Offset: -1, Msg: fmt.Sprintf("%s must be %s, got %s", f.name, article(f.kind), clip(v))}
		}
		delete(m, f.name)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		return &InputError{Path: "$", Offset: -1, Msg: "unknown envelope field " + strconv.Quote(k)}
	}
	var v struct {
		Hash     string  `json:"hash"`
		PrevHash *string `json:"prev_hash"`
		V        float64 `json:"v"`
		Seq      float64 `json:"seq"`
		Ts       float64 `json:"ts_unix_ms"`
	}
	_ = json.Unmarshal(c, &v)
	switch {
	case v.V != Version:
		return &InputError{Path: "$.v", Offset: -1, Msg: fmt.Sprintf("unsupported envelope version %v (this build reads v%d)", v.V, Version)}
	case !isHash(v.Hash):
		return &InputError{Path: "$.hash", Offset: -1, Msg: "hash must be 64 lowercase hex digits"}
	case v.PrevHash != nil && !isHash(*v.PrevHash):
		return &InputError{Path: "$.prev_hash", Offset: -1, Msg: "prev_hash must be null or 64 lowercase hex digits"}
	case v.Seq < 0 || v.Seq != float64(int64(v.Seq)):
		return &InputError{Path: "$.seq", Offset: -1, Msg: "seq must be a non-negative integer"}
	case v.Ts < 0 || v.Ts != float64(int64(v.Ts)):
		return &InputError{Path: "$.ts_unix_ms", Offset: -1, Msg: "ts_unix_ms must be a non-negative integer"}
	}
	return &InputError{Path: "$", Offset: -1, Msg: "not a valid envelope"}
}

func article(kind string) string {
	if kind[0] == 'i' || kind[0] == 'o' {
		return "an " + kind
	}
	return "a " + kind
}

func jsonKind(v json.RawMessage, kind string) bool {
	switch kind {
	case "string":
		return v[0] == '"'
	case "object":
		return v[0] == '{'
	case "string or null":
		return v[0] == '"' || string(v) == "null"
	case "integer":
		return v[0] == '-' || v[0] >= '0' && v[0] <= '9'
	}
	return false
}

// ParseEvent reads one input event: a JSON object with session_id,
// event_type and payload, and optionally tenant_id and ts_unix_ms. The line
// is validated as I-JSON under lim; unknown fields are rejected. A missing
// ts_unix_ms is returned as 0 with hasTime false, for the caller to stamp.
func ParseEvent(line []byte, lim Limits) (ev Event, hasTime bool, err error) {
	c, err := Canonicalize(line, lim)
	if err != nil {
		return ev, false, err
	}
	if c[0] != '{' {
		return ev, false, &InputError{Path: "$", Offset: -1, Msg: "event must be a JSON object"}
	}
	m, err := canonicalMembers(c)
	if err != nil {
		return ev, false, &InputError{Path: "$", Offset: -1, Msg: err.Error()}
	}
	for _, name := range []string{"session_id", "event_type", "payload"} {
		if _, ok := m[name]; !ok {
			return ev, false, &InputError{Path: "$." + name, Offset: -1, Msg: "missing required field " + name}
		}
	}
	str := func(name string, dst *string) error {
		v, ok := m[name]
		if !ok {
			return nil
		}
		if v[0] != '"' {
			return &InputError{Path: "$." + name, Offset: -1, Msg: fmt.Sprintf("%s must be a string, got %s", name, clip(v))}
		}
		return json.Unmarshal(v, dst)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "tenant_id":
			err = str(k, &ev.TenantID)
			if err == nil && ev.TenantID == "" {
				err = &InputError{Path: "$.tenant_id", Offset: -1, Msg: "tenant_id must not be empty (omit it for the default tenant)"}
			}
		case "session_id":
			err = str(k, &ev.SessionID)
		case "event_type":
			err = str(k, &ev.EventType)
		case "payload":
			if v[0] != '{' {
				err = &InputError{Path: "$.payload", Offset: -1, Msg: fmt.Sprintf("payload must be a JSON object, got %s", clip(v))}
			}
			ev.Payload = v
		case "ts_unix_ms":
			n, perr := strconv.ParseInt(string(v), 10, 64)
			if perr != nil || n < 0 {
				err = &InputError{Path: "$.ts_unix_ms", Offset: -1, Msg: fmt.Sprintf("ts_unix_ms must be a non-negative integer of milliseconds, got %s", clip(v))}
			}
			ev.TsUnixMs, hasTime = n, true
		default:
			err = &InputError{Path: "$", Offset: -1, Msg: fmt.Sprintf("unknown field %s (want tenant_id, session_id, event_type, payload, ts_unix_ms)", strconv.Quote(k))}
		}
		if err != nil {
			return Event{}, false, err
		}
	}
	if ev.TenantID == "" {
		ev.TenantID = DefaultTenant
	}
	ts := ev.TsUnixMs
	if !hasTime {
		ts = 0
	}
	if err := checkFields(ev.TenantID, ev.SessionID, ev.EventType, ts); err != nil {
		return Event{}, false, err
	}
	return ev, hasTime, nil
}

// canonicalMembers splits a canonical (RFC 8785) JSON object into its
// members without decoding their values (canon.Members): one pass over the
// bytes, where json.Unmarshal into a map would validate and copy all of it
// again.
func canonicalMembers(c []byte) (map[string]json.RawMessage, error) {
	var buf [16]canon.Member
	ms, err := canon.AppendMembers(buf[:0], c)
	if err != nil {
		return nil, err
	}
	m := make(map[string]json.RawMessage, len(ms))
	for _, mb := range ms {
		m[decodeKey(mb.Key, bytes.IndexByte(mb.Key, '\\') >= 0)] = json.RawMessage(mb.Value[:len(mb.Value):len(mb.Value)])
	}
	return m, nil
}

// FrameOf reads, without parsing the payload, the place of an envelope
// stored in canonical layout: its session, seq and hash. ok is false when b
// is not in canonical layout (Decode then says why).
func FrameOf(b []byte) (k SessionKey, seq uint64, hash string, ok bool) {
	f, ok := scanFrame(b)
	if !ok {
		return SessionKey{}, 0, "", false
	}
	return SessionKey{Tenant: f.tenant.String(), Session: f.session.String()}, f.seq, string(f.hash), true
}
