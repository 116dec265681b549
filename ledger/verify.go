package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Mode selects how much a Verifier checks.
type Mode int

const (
	// Fast hashes the stored bytes and checks every chain property: seq
	// contiguity, genesis, prev_hash links, session and tenant consistency.
	Fast Mode = iota
	// Deep does everything Fast does and also re-parses each envelope as
	// I-JSON and requires the stored bytes to be its RFC 8785 form.
	Deep
)

func (m Mode) String() string {
	if m == Deep {
		return "deep"
	}
	return "fast"
}

// FaultKind names one kind of integrity fault.
type FaultKind string

// The fault kinds a Verifier reports.
const (
	HashMismatch   FaultKind = "hash_mismatch"   // stored hash is not the hash of the stored envelope
	BrokenLink     FaultKind = "broken_link"     // prev_hash is not the previous envelope's hash
	SeqGap         FaultKind = "seq_gap"         // seqs missing from the chain
	SeqReorder     FaultKind = "seq_reorder"     // an envelope stored after a later one
	Duplicate      FaultKind = "duplicate"       // a seq stored twice
	BadGenesis     FaultKind = "bad_genesis"     // no seq 0, or prev_hash null anywhere but seq 0
	NotCanonical   FaultKind = "not_canonical"   // stored bytes are not the RFC 8785 form (deep mode)
	ForeignSession FaultKind = "foreign_session" // an envelope of another session inside this one
	Malformed      FaultKind = "malformed"       // stored bytes are not an envelope at all
	BadReceipt     FaultKind = "bad_receipt"     // a verdict carries no receipt, or one that cannot be read
	// Faults of signed records (ledger verify --pubkey).
	UnsignedRecord  FaultKind = "unsigned_record"  // an engine record without a signature
	BadSignature    FaultKind = "bad_signature"    // a record's signature does not verify, is malleable or by an unknown key
	BadRecord       FaultKind = "bad_record"       // an engine record not in its exact form: unknown, misspelt or folded-twin members
	ReceiptMismatch FaultKind = "receipt_mismatch" // a verdict or resolution that does not attest the action recorded where it points
	UnjudgedEvent   FaultKind = "unjudged_events"  // a hook event no verdict judged: the engine appends each with its verdict, atomically
	ForeignSealed   FaultKind = "foreign_sealed"   // a sealed value whose key belongs to another session (copied in, to be revealed there)
	UnknownVersion  FaultKind = "unknown_version"  // a versioned structure (a sealed value, a proof, a checkpoint) of a version the verifier does not know: nothing unknown verifies
)

// ErrIntegrity is the parent of every integrity fault.
var ErrIntegrity = errors.New("integrity fault")

// Sentinels for each fault kind; each wraps ErrIntegrity.
var (
	ErrHashMismatch    = fmt.Errorf("%w: %s", ErrIntegrity, HashMismatch)
	ErrBrokenLink      = fmt.Errorf("%w: %s", ErrIntegrity, BrokenLink)
	ErrSeqGap          = fmt.Errorf("%w: %s", ErrIntegrity, SeqGap)
	ErrSeqReorder      = fmt.Errorf("%w: %s", ErrIntegrity, SeqReorder)
	ErrDuplicate       = fmt.Errorf("%w: %s", ErrIntegrity, Duplicate)
	ErrBadGenesis      = fmt.Errorf("%w: %s", ErrIntegrity, BadGenesis)
	ErrNotCanonical    = fmt.Errorf("%w: %s", ErrIntegrity, NotCanonical)
	ErrForeignSession  = fmt.Errorf("%w: %s", ErrIntegrity, ForeignSession)
	ErrMalformed       = fmt.Errorf("%w: %s", ErrIntegrity, Malformed)
	ErrBadReceipt      = fmt.Errorf("%w: %s", ErrIntegrity, BadReceipt)
	ErrUnsigned        = fmt.Errorf("%w: %s", ErrIntegrity, UnsignedRecord)
	ErrBadSignature    = fmt.Errorf("%w: %s", ErrIntegrity, BadSignature)
	ErrBadRecord       = fmt.Errorf("%w: %s", ErrIntegrity, BadRecord)
	ErrReceiptMismatch = fmt.Errorf("%w: %s", ErrIntegrity, ReceiptMismatch)
	ErrUnjudgedEvent   = fmt.Errorf("%w: %s", ErrIntegrity, UnjudgedEvent)
	ErrForeignSealed   = fmt.Errorf("%w: %s", ErrIntegrity, ForeignSealed)
	ErrUnknownVersion  = fmt.Errorf("%w: %s", ErrIntegrity, UnknownVersion)
)

var kindErr = map[FaultKind]error{
	HashMismatch: ErrHashMismatch, BrokenLink: ErrBrokenLink, SeqGap: ErrSeqGap, SeqReorder: ErrSeqReorder,
	Duplicate: ErrDuplicate, BadGenesis: ErrBadGenesis, NotCanonical: ErrNotCanonical,
	ForeignSession: ErrForeignSession, Malformed: ErrMalformed, BadReceipt: ErrBadReceipt,
	UnsignedRecord: ErrUnsigned, BadSignature: ErrBadSignature, BadRecord: ErrBadRecord, ReceiptMismatch: ErrReceiptMismatch,
	UnjudgedEvent: ErrUnjudgedEvent, ForeignSealed: ErrForeignSealed, UnknownVersion: ErrUnknownVersion,
}

// ChainError is one integrity fault with its evidence.
type ChainError struct {
	Kind      FaultKind `json:"kind"`
	Tenant    string    `json:"tenant_id"`
	Session   string    `json:"session_id"`
	Seq       uint64    `json:"seq"`
	Line      int       `json:"line,omitempty"`       // bundle line, when read from a bundle
	StreamSeq uint64    `json:"stream_seq,omitempty"` // stream sequence, when read from a store
	Stream    string    `json:"stream,omitempty"`     // the stream of StreamSeq, in a ledger of several streams
	Want      string    `json:"want,omitempty"`
	Got       string    `json:"got,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	// NoSeq says that the fault's place has no seq that could be read (a
	// line or message that is no envelope): Seq means nothing, and the
	// JSON form has no seq.
	NoSeq bool `json:"-"`
}

// MarshalJSON writes the fault, without seq when it has none.
func (e *ChainError) MarshalJSON() ([]byte, error) {
	type plain ChainError
	if !e.NoSeq {
		return json.Marshal((*plain)(e))
	}
	return json.Marshal(struct {
		*plain
		Seq *uint64 `json:"seq,omitempty"`
	}{plain: (*plain)(e)})
}

func (e *ChainError) Error() string {
	var b strings.Builder
	switch {
	case e.Session != "" && e.NoSeq:
		fmt.Fprintf(&b, "%s/%s: ", e.Tenant, e.Session)
	case e.Session != "":
		fmt.Fprintf(&b, "%s/%s seq %d: ", e.Tenant, e.Session, e.Seq)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	b.WriteString(string(e.Kind))
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Want != "" || e.Got != "" {
		fmt.Fprintf(&b, " (want %s, got %s)", e.Want, e.Got)
	}
	if e.Line > 0 && e.Session != "" {
		fmt.Fprintf(&b, " [line %d]", e.Line)
	}
	switch {
	case e.StreamSeq > 0 && e.Stream != "":
		fmt.Fprintf(&b, " [stream %s seq %d]", e.Stream, e.StreamSeq)
	case e.StreamSeq > 0:
		fmt.Fprintf(&b, " [stream seq %d]", e.StreamSeq)
	}
	return b.String()
}

// Unwrap returns the sentinel of the fault's kind.
func (e *ChainError) Unwrap() error {
	if s, ok := kindErr[e.Kind]; ok {
		return s
	}
	return ErrIntegrity
}

// Position says where a stored envelope came from, for evidence.
type Position struct {
	Line      int // bundle line, 1-based
	StreamSeq uint64
	// Stream names the stream of StreamSeq in a ledger of several
	// streams ("" in a one-stream ledger).
	Stream string
	// Expect, when set, is the session the envelope was read as belonging
	// to (a store subject). An envelope naming another session is a
	// foreign_session fault and takes no part in either chain.
	Expect *SessionKey
}

// SessionSummary describes one verified chain.
type SessionSummary struct {
	Tenant   string `json:"tenant_id"`
	Session  string `json:"session_id"`
	Count    int    `json:"count"`
	HeadSeq  uint64 `json:"head_seq"`
	HeadHash string `json:"head_hash"`
	FirstTs  int64  `json:"first_ts_unix_ms"`
	LastTs   int64  `json:"last_ts_unix_ms"`
	Faults   int    `json:"faults"`
}

// Report is the outcome of a verification run.
type Report struct {
	Mode      string           `json:"mode"`
	Envelopes int              `json:"envelopes"`
	Sessions  []SessionSummary `json:"sessions"`
	Faults    []*ChainError    `json:"faults"`
	// Legacy lists the records verified under an older format's rules,
	// and what those rules guarantee: no fault, but less than the current
	// format proves.
	Legacy []Legacy `json:"legacy,omitempty"`
	// Limits says what this verification could not establish (a bundle
	// that carries no checkpoint: a cut of its tail cannot be seen). No
	// fault, and no OK for it either.
	Limits []string `json:"limits,omitempty"`
}

// Legacy says that records of one session were written in an older
// format and verified under its rules.
type Legacy struct {
	Tenant     string `json:"tenant_id"`
	Session    string `json:"session_id"`
	Format     string `json:"format"`
	Records    int    `json:"records"`
	FirstSeq   uint64 `json:"first_seq"`
	LastSeq    uint64 `json:"last_seq"`
	Guarantees string `json:"guarantees"`
}

// LegacyReporter is a Check that verified records under an older format's
// rules; Report lists them.
type LegacyReporter interface {
	Legacy() []Legacy
}

// OK reports whether the run found no fault.
func (r *Report) OK() bool { return len(r.Faults) == 0 }

// Only returns the part of r about one tenant and/or one session ("" for
// any): their summaries and faults, and faults that name no session.
func (r *Report) Only(tenant, session string) *Report {
	if tenant == "" && session == "" {
		return r
	}
	match := func(t, s string) bool {
		return (tenant == "" || tenant == t) && (session == "" || session == s)
	}
	out := &Report{Mode: r.Mode, Sessions: []SessionSummary{}, Faults: []*ChainError{}}
	for _, s := range r.Sessions {
		if match(s.Tenant, s.Session) {
			out.Sessions = append(out.Sessions, s)
			out.Envelopes += s.Count
		}
	}
	for _, f := range r.Faults {
		if match(f.Tenant, f.Session) || f.Session == "" {
			out.Faults = append(out.Faults, f)
		}
	}
	for _, l := range r.Legacy {
		if match(l.Tenant, l.Session) {
			out.Legacy = append(out.Legacy, l)
		}
	}
	return out
}

// Err returns nil when the run found no fault, else an error that wraps
// every fault (errors.Is finds each kind).
func (r *Report) Err() error {
	if r.OK() {
		return nil
	}
	errs := make([]error, len(r.Faults))
	for i, f := range r.Faults {
		errs[i] = f
	}
	return errors.Join(errs...)
}

// rec is what a Verifier keeps of one envelope: enough to check links.
type rec struct {
	seq       uint64
	hash      [64]byte
	prev      [64]byte
	hasPrev   bool
	ts        int64
	line      int
	streamSeq uint64
}

type chain struct {
	key    SessionKey
	stream string // the stream the session is in, of a ledger of several
	recs   []rec
}

// Verifier checks envelopes fed to it one at a time, in stored order, and
// reports every fault it finds, not only the first. Envelopes of many
// sessions may be interleaved; a session's envelopes are expected in seq
// order. A Verifier is not safe for concurrent use.
type Verifier struct {
	checks []Check
	mode   Mode
	lim    Limits
	chains map[SessionKey]*chain
	last   *chain // the chain of the previous envelope
	faults []*ChainError
	count  int
	window [2]windowEntry // the two previous envelopes, for splice detection
}

type windowEntry struct {
	key  SessionKey
	seq  uint64
	line int
	ok   bool
	// extends says the envelope continued its own session's chain as read
	// so far (seq 0 first, or the next seq linked to the last): so does
	// every envelope of a stream-order file, where sessions interleave.
	extends bool
}

// NewVerifier returns a Verifier in mode m.
func NewVerifier(m Mode, lim Limits) *Verifier {
	return &Verifier{mode: m, lim: lim, chains: make(map[SessionKey]*chain)}
}

// A Check looks at every envelope a Verifier reads, in the same pass, and
// names faults of its own: record signatures and receipts (package
// receipt), say. It gets the stored bytes as read and where they came from.
type Check interface {
	// Envelope looks at one stored envelope. decoded is the envelope as
	// Decode would return it, when the pass decoded it in full (deep
	// mode) and it is whole; nil when the pass read only its frame (fast
	// mode) or it does not decode whole (chain verification names why).
	Envelope(raw []byte, decoded *Envelope, at Position) []*ChainError
}

// Finisher is a Check that has faults to report once every envelope was
// read (what it was still waiting for).
type Finisher interface {
	Finish() []*ChainError
}

// With adds checks that see every envelope v reads; their faults go into
// v's report. It returns v.
func (v *Verifier) With(checks ...Check) *Verifier {
	v.checks = append(v.checks, checks...)
	return v
}

// HashAt is the stored hash of the first envelope v read at seq of session
// k, and whether there was one: what a checkpoint is checked against after
// the pass.
func (v *Verifier) HashAt(k SessionKey, seq uint64) (string, bool) {
	c := v.chains[k]
	if c == nil {
		return "", false
	}
	for i := range c.recs {
		if c.recs[i].seq == seq {
			return string(c.recs[i].hash[:]), true
		}
	}
	return "", false
}

// ReadBundle feeds every line of bundle r to v.
func (v *Verifier) ReadBundle(r io.Reader) error {
	return ReadLines(r, v.lim, func(line []byte, n int) error {
		v.Add(line, Position{Line: n})
		return nil
	})
}

// Add checks one stored envelope.
func (v *Verifier) Add(raw []byte, at Position) { v.add(raw, at) }

// add checks one stored envelope and returns it decoded when deep mode
// decoded it and it is whole: its hash right and stored under its own
// session. raw must not change while the envelope is in use.
func (v *Verifier) add(raw []byte, at Position) *Envelope {
	v.count++
	f, ok := scanFrame(raw)
	// Deep mode (and a frame the scanner cannot read) decodes the envelope
	// in full, once: for the chain checks below and for v's checks.
	var e *Envelope
	var canonical bool
	var decodeErr error
	if !ok || v.mode == Deep {
		e, canonical, decodeErr = decode(raw, v.lim)
	}
	if len(v.checks) > 0 {
		var whole *Envelope // what Decode would return
		if decodeErr == nil && e != nil && canonical && (e.seq == 0) == (e.prevHash == "") {
			whole = e
		}
		for _, c := range v.checks {
			v.faults = append(v.faults, c.Envelope(raw, whole, at)...)
		}
	}
	canonicalLayout := ok
	hashOK := ok && f.hashMatches(raw)
	var key SessionKey
	var hash, prev [64]byte
	hasPrev := false
	if ok {
		key = v.key(f.tenant, f.session)
		copy(hash[:], f.hash)
		if f.prevHash != nil {
			copy(prev[:], f.prevHash)
			hasPrev = true
		}
	}
	var decoded *Envelope
	if !ok || v.mode == Deep {
		err := decodeErr
		var ce *ChainError
		switch {
		case err == nil:
			hashOK = true
		case errors.As(err, &ce) && e != nil:
			hashOK = false
		default:
			v.fault(malformed(raw, err, at), at.Expect)
			v.shift(windowEntry{})
			return nil
		}
		if hashOK && canonical {
			decoded = e
		}
		if !canonical {
			d := "stored bytes are not the envelope's RFC 8785 form"
			if canonicalLayout {
				d = "stored bytes differ from the RFC 8785 form of the envelope they encode"
			}
			v.fault(&ChainError{Kind: NotCanonical, Tenant: e.tenant, Session: e.session, Seq: e.seq,
				Line: at.Line, StreamSeq: at.StreamSeq, Stream: at.Stream, Detail: d}, nil)
		}
		if !canonicalLayout {
			key = SessionKey{Tenant: e.tenant, Session: e.session}
			f.seq, f.ts = e.seq, e.ts
			copy(hash[:], e.hash)
			copy(prev[:], e.prevHash)
			hasPrev = e.prevHash != ""
		}
	}
	if !hashOK {
		got := ""
		if canonicalLayout {
			got = hexString(hashWithout(raw, f.hashAt, f.hashEnd))
		}
		v.fault(&ChainError{Kind: HashMismatch, Tenant: key.Tenant, Session: key.Session, Seq: f.seq,
			Line: at.Line, StreamSeq: at.StreamSeq, Stream: at.Stream, Want: string(hash[:]), Got: got,
			Detail: "stored hash is not the SHA-256 of the envelope"}, nil)
	}
	if at.Expect != nil && *at.Expect != key {
		v.fault(&ChainError{Kind: ForeignSession, Tenant: at.Expect.Tenant, Session: at.Expect.Session, Seq: f.seq,
			Line: at.Line, StreamSeq: at.StreamSeq, Stream: at.Stream, Want: at.Expect.String(), Got: key.String(),
			Detail: "envelope stored in this session names another session"}, nil)
		return nil
	}
	c := v.last
	if c == nil || c.key != key {
		c = v.chains[key]
		if c == nil {
			c = &chain{key: key, stream: at.Stream}
			v.chains[key] = c
		}
		v.last = c
	}
	extends := len(c.recs) == 0 && f.seq == 0 && !hasPrev
	if n := len(c.recs); n > 0 {
		last := &c.recs[n-1]
		extends = f.seq == last.seq+1 && hasPrev && prev == last.hash
	}
	c.recs = append(c.recs, rec{seq: f.seq, hash: hash, prev: prev, hasPrev: hasPrev, ts: f.ts, line: at.Line, streamSeq: at.StreamSeq})
	if at.Expect == nil {
		// A bundle groups each session's envelopes together, a file in
		// stream order interleaves them (each continuing its own chain);
		// in a store, Expect catches splices.
		v.shift(windowEntry{key: key, seq: f.seq, line: at.Line, ok: true, extends: extends})
	}
	if !hashOK {
		return nil
	}
	return decoded
}

// malformed is the fault of stored bytes that are not an envelope: where
// they are, and the session and seq they name when those can be read.
func malformed(raw []byte, err error, at Position) *ChainError {
	f := &ChainError{Kind: Malformed, Line: at.Line, StreamSeq: at.StreamSeq, Stream: at.Stream, NoSeq: true,
		Detail: "rejected, not read as an envelope: " + err.Error()}
	if UnknownEnvelopeVersion(err) {
		f.Kind = UnknownVersion // nothing unknown verifies, and it says what it is
	}
	var place struct {
		Tenant  *string `json:"tenant_id"`
		Session *string `json:"session_id"`
		Seq     *uint64 `json:"seq"`
	}
	if json.Unmarshal(raw, &place) != nil || place.Tenant == nil || place.Session == nil {
		return f
	}
	k := SessionKey{Tenant: *place.Tenant, Session: *place.Session}
	if at.Expect != nil && *at.Expect != k {
		f.Detail += fmt.Sprintf(" (it names %s)", k)
		return f
	}
	f.Tenant, f.Session = k.Tenant, k.Session
	if place.Seq != nil {
		f.Seq, f.NoSeq = *place.Seq, false
	}
	return f
}

// key returns the session key of scanned tenant and session text, reusing
// the previous envelope's strings when they are the same, as they are along
// a session.
func (v *Verifier) key(tenant, session cstr) SessionKey {
	if v.last != nil && !tenant.escaped && !session.escaped &&
		string(tenant.b) == v.last.key.Tenant && string(session.b) == v.last.key.Session {
		return v.last.key
	}
	return SessionKey{Tenant: tenant.String(), Session: session.String()}
}

// shift slides the splice-detection window over a bundle: an envelope whose
// neighbours on both sides belong to one other session, and that does not
// continue its own session's chain there, was spliced into that session.
// (One that does continue it is a file in stream order, sessions
// interleaved, as ledger tail writes and ledger import reads.)
func (v *Verifier) shift(cur windowEntry) {
	a, b := v.window[0], v.window[1]
	if a.ok && b.ok && cur.ok && a.key == cur.key && b.key != a.key && !b.extends {
		v.fault(&ChainError{Kind: ForeignSession, Tenant: a.key.Tenant, Session: a.key.Session, Seq: b.seq,
			Line: b.line, Want: a.key.String(), Got: b.key.String(),
			Detail: fmt.Sprintf("envelope of %s spliced between seq %d and seq %d", b.key, a.seq, cur.seq)}, nil)
	}
	v.window[0], v.window[1] = b, cur
}

// UnknownEnvelopeVersion reports whether err is Decode's refusal of an
// envelope whose "v" is not a version this build reads.
func UnknownEnvelopeVersion(err error) bool {
	var ie *InputError
	return errors.As(err, &ie) && ie.Path == "$.v"
}

func (v *Verifier) fault(e *ChainError, expect *SessionKey) {
	if e.Session == "" && expect != nil {
		e.Tenant, e.Session = expect.Tenant, expect.Session
	}
	v.faults = append(v.faults, e)
}

// Report analyzes every chain seen and returns the result. Faults are
// sorted by tenant, session, seq and kind.
func (v *Verifier) Report() *Report {
	r := &Report{Mode: v.mode.String(), Envelopes: v.count, Sessions: []SessionSummary{}, Faults: append([]*ChainError{}, v.faults...)}
	for _, c := range v.checks {
		if f, ok := c.(Finisher); ok {
			r.Faults = append(r.Faults, f.Finish()...)
		}
		if l, ok := c.(LegacyReporter); ok {
			r.Legacy = append(r.Legacy, l.Legacy()...)
		}
	}
	keys := make([]SessionKey, 0, len(v.chains))
	for k := range v.chains {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeyOrder)
	for _, k := range keys {
		c := v.chains[k]
		r.Faults = append(r.Faults, c.analyze()...)
		r.Sessions = append(r.Sessions, c.summary())
	}
	slices.SortStableFunc(r.Faults, func(a, b *ChainError) int {
		if c := compareKeyOrder(SessionKey{a.Tenant, a.Session}, SessionKey{b.Tenant, b.Session}); c != 0 {
			return c
		}
		if a.Seq != b.Seq {
			if a.Seq < b.Seq {
				return -1
			}
			return 1
		}
		return strings.Compare(string(a.Kind), string(b.Kind))
	})
	counts := make(map[SessionKey]int)
	for _, f := range r.Faults {
		counts[SessionKey{f.Tenant, f.Session}]++
	}
	for i := range r.Sessions {
		r.Sessions[i].Faults = counts[SessionKey{r.Sessions[i].Tenant, r.Sessions[i].Session}]
	}
	return r
}

func compareKeyOrder(a, b SessionKey) int {
	if c := strings.Compare(a.Tenant, b.Tenant); c != 0 {
		return c
	}
	return strings.Compare(a.Session, b.Session)
}

func (c *chain) summary() SessionSummary {
	s := SessionSummary{Tenant: c.key.Tenant, Session: c.key.Session, Count: len(c.recs)}
	for i, r := range c.recs {
		if i == 0 || r.seq >= s.HeadSeq {
			s.HeadSeq, s.HeadHash = r.seq, string(r.hash[:])
		}
		if i == 0 || r.ts < s.FirstTs {
			s.FirstTs = r.ts
		}
		if r.ts > s.LastTs {
			s.LastTs = r.ts
		}
	}
	return s
}

// analyze finds the chain faults of one session from its envelopes in
// stored order.
func (c *chain) analyze() []*ChainError {
	if c.intact() {
		return nil
	}
	var out []*ChainError
	add := func(kind FaultKind, r rec, want, got, detail string) {
		out = append(out, &ChainError{Kind: kind, Tenant: c.key.Tenant, Session: c.key.Session, Seq: r.seq,
			Line: r.line, StreamSeq: r.streamSeq, Stream: c.stream, Want: want, Got: got, Detail: detail})
	}
	bySeq := make(map[uint64]rec, len(c.recs))
	uniq := make([]rec, 0, len(c.recs))
	for _, r := range c.recs {
		if first, ok := bySeq[r.seq]; ok {
			if first.hash == r.hash {
				add(Duplicate, r, "", "", fmt.Sprintf("envelope stored again (first at %s)", where(first)))
			} else {
				add(Duplicate, r, string(first.hash[:]), string(r.hash[:]), fmt.Sprintf("a different envelope already holds this seq (at %s): the chain forks", where(first)))
			}
			continue
		}
		bySeq[r.seq] = r
		uniq = append(uniq, r)
	}
	if len(uniq) == 0 {
		return out
	}
	// Genesis.
	if _, ok := bySeq[0]; !ok {
		lowest := uniq[0]
		for _, r := range uniq {
			if r.seq < lowest.seq {
				lowest = r
			}
		}
		add(BadGenesis, lowest, "0", fmt.Sprint(lowest.seq), "chain has no seq 0")
	}
	for _, r := range uniq {
		switch {
		case r.seq == 0 && r.hasPrev:
			add(BadGenesis, r, "null", string(r.prev[:]), "seq 0 must have a null prev_hash")
		case r.seq > 0 && !r.hasPrev:
			add(BadGenesis, r, "", "null", "only seq 0 may have a null prev_hash")
		}
	}
	// Order: an envelope stored after one with a higher seq.
	maxSeq := uniq[0].seq
	for _, r := range uniq[1:] {
		if r.seq < maxSeq {
			add(SeqReorder, r, "", "", fmt.Sprintf("seq %d stored after seq %d", r.seq, maxSeq))
		} else {
			maxSeq = r.seq
		}
	}
	// Gaps: holes in the set of seqs.
	seqs := make([]uint64, len(uniq))
	for i, r := range uniq {
		seqs[i] = r.seq
	}
	slices.Sort(seqs)
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			missing := fmt.Sprintf("seq %d", seqs[i-1]+1)
			if seqs[i]-seqs[i-1] > 2 {
				missing = fmt.Sprintf("seqs %d..%d", seqs[i-1]+1, seqs[i]-1)
			}
			add(SeqGap, bySeq[seqs[i]], fmt.Sprint(seqs[i-1]+1), fmt.Sprint(seqs[i]), missing+" missing")
		}
	}
	// Links.
	for _, r := range uniq {
		if r.seq == 0 || !r.hasPrev {
			continue
		}
		if p, ok := bySeq[r.seq-1]; ok && p.hash != r.prev {
			add(BrokenLink, r, string(p.hash[:]), string(r.prev[:]), "prev_hash is not the hash of the previous envelope")
		}
	}
	return out
}

// intact reports, in one pass, whether the chain is exactly seq 0, 1, 2, ...
// in order with every link in place: the common case, which needs none of
// analyze's bookkeeping.
func (c *chain) intact() bool {
	for i := range c.recs {
		r := &c.recs[i]
		if r.seq != uint64(i) {
			return false
		}
		if i == 0 {
			if r.hasPrev {
				return false
			}
			continue
		}
		if !r.hasPrev || r.prev != c.recs[i-1].hash {
			return false
		}
	}
	return true
}

func where(r rec) string {
	switch {
	case r.line > 0:
		return fmt.Sprintf("line %d", r.line)
	case r.streamSeq > 0:
		return fmt.Sprintf("stream seq %d", r.streamSeq)
	}
	return "an earlier position"
}
