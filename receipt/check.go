package receipt

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/seal"
)

// Checker checks agentledger's signed records, envelope by envelope: each
// record's signature with the keyring, its exact form, and that each
// receipt and resolution attests the action recorded where it points. The
// envelopes of one session must come in seq order, from its genesis (as
// exports and the store give them); chain integrity itself is the
// ledger.Verifier's to check.
type Checker struct {
	ring Keyring
	// asks holds, per session, the action digest of every ask verdict by
	// the seq of the event it judged: what a resolution may answer.
	asks map[ledger.SessionKey]map[uint64]string
	// unjudged holds, per session, the hook event read last if no verdict
	// has judged it yet.
	unjudged map[ledger.SessionKey]*ledger.ChainError
	// signed marks the sessions in which a signed record was read: an
	// unsigned record after one is a fault, never a legacy record.
	signed map[ledger.SessionKey]bool
	// legacy holds, per session, the records verified under format 1, and
	// legacyAt each one's place and time; firstSigned is the earliest time
	// of any signed record read (0: none yet).
	legacy      map[ledger.SessionKey]*ledger.Legacy
	legacyAt    []legacyRecord
	firstSigned int64
}

// legacyRecord is a record read as format 1: the fault it is if a signed
// record was written before it, and its time.
type legacyRecord struct {
	fault *ledger.ChainError
	ts    int64
}

// NewChecker returns a Checker trusting the keys of ring.
func NewChecker(ring Keyring) *Checker {
	return &Checker{ring: ring, asks: map[ledger.SessionKey]map[uint64]string{}, unjudged: map[ledger.SessionKey]*ledger.ChainError{},
		signed: map[ledger.SessionKey]bool{}, legacy: map[ledger.SessionKey]*ledger.Legacy{}}
}

// event checks a hook event: the one before it in its session must have
// been judged (the engine appends each event with its verdict in one
// atomic batch, so an event without one was written by someone else), and
// every sealed value in it must be sealed with a key of the session (or
// of the data subject it names).
func (c *Checker) event(e *ledger.Envelope) *ledger.ChainError {
	k := e.Key()
	prev := c.unjudged[k]
	c.unjudged[k] = &ledger.ChainError{Kind: ledger.UnjudgedEvent, Tenant: k.Tenant, Session: k.Session, Seq: e.Seq(),
		Detail: e.EventType() + ": no verdict judges this event"}
	if seal.Has(e.Payload()) {
		if bad := seal.Unreadable(e.Payload()); len(bad) > 0 {
			return &ledger.ChainError{Kind: ledger.UnknownVersion, Tenant: k.Tenant, Session: k.Session, Seq: e.Seq(),
				Detail: e.EventType() + ": " + bad[0]}
		}
		scopes := seal.ScopesOf(e.Payload(), k.Tenant, k.Session)
		for _, r := range seal.Refs(e.Payload()) {
			if !slices.Contains(scopes, r.ScopeID()) {
				return &ledger.ChainError{Kind: ledger.ForeignSealed, Tenant: k.Tenant, Session: k.Session, Seq: e.Seq(),
					Detail: fmt.Sprintf("%s: a %s value sealed with key %s, which is not this session's", e.EventType(), r.Kind, r.Kid)}
			}
		}
	}
	return prev
}

// Finish implements ledger.Finisher: the last event of each session that
// no verdict judged, and every unsigned record written at or after the
// first signed one (a ledger that signs records never went back to not
// signing them: such a record was downgraded or made up).
func (c *Checker) Finish() []*ledger.ChainError {
	var out []*ledger.ChainError
	for _, f := range c.unjudged {
		if f != nil {
			out = append(out, f)
		}
	}
	if c.firstSigned == 0 {
		return out
	}
	for _, r := range c.legacyAt {
		if r.ts >= c.firstSigned {
			out = append(out, r.fault)
			if l := c.legacy[ledger.SessionKey{Tenant: r.fault.Tenant, Session: r.fault.Session}]; l != nil {
				l.Records-- // no longer a legacy record
			}
		}
	}
	return out
}

// VerifySignature checks a record's signature alone (its receipt and
// where it points are Check's): nil when a key of ring verifies it,
// ledger.ErrUnsigned when it has none, else a bad_signature fault.
func VerifySignature(ring Keyring, e *ledger.Envelope) error {
	sigRaw, msg, err := ledger.SignedRecord(e)
	if err != nil {
		return err
	}
	if detail := checkSig(ring, sigRaw, msg); detail != "" {
		return &ledger.ChainError{Kind: ledger.BadSignature, Tenant: e.TenantID(), Session: e.SessionID(), Seq: e.Seq(), Detail: e.EventType() + ": " + detail}
	}
	return nil
}

// checkSig checks a record signature over msg with ring: "" when it
// verifies, else what is wrong.
func checkSig(ring Keyring, sigRaw json.RawMessage, msg []byte) string {
	var sig ledger.RecordSig
	if err := ledger.DecodeExact(sigRaw, &sig); err != nil {
		return "sig: " + err.Error()
	}
	pub, ok := ring[sig.KeyID]
	switch {
	case sig.Alg != Alg:
		return fmt.Sprintf("sig.alg %q, want %q", sig.Alg, Alg)
	case !ok:
		return fmt.Sprintf("signed by key %q, which is not among the public keys given", sig.KeyID)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(sig.Value)
	if err != nil || len(raw) != ed25519.SignatureSize || base64.StdEncoding.EncodeToString(raw) != sig.Value {
		return fmt.Sprintf("sig.value is not the canonical base64 of a %d-byte signature", ed25519.SignatureSize)
	}
	if !ed25519.Verify(pub, msg, raw) {
		return "signature does not verify: the record, its time or its place in the chain was changed"
	}
	return ""
}

// Check checks one envelope and returns its fault, or nil. Hook events are
// the hosts' words and carry no signature: they are vouched for by the
// verdict that follows them.
func (c *Checker) Check(e *ledger.Envelope) *ledger.ChainError {
	if aarts.IsHookPoint(e.EventType()) {
		return c.event(e)
	}
	if !ledger.IsRecordType(e.EventType()) {
		return nil
	}
	fault := func(kind ledger.FaultKind, format string, args ...any) *ledger.ChainError {
		return &ledger.ChainError{Kind: kind, Tenant: e.TenantID(), Session: e.SessionID(), Seq: e.Seq(),
			Detail: e.EventType() + ": " + fmt.Sprintf(format, args...)}
	}
	sigRaw, msg, err := ledger.SignedRecord(e)
	k := e.Key()
	if errors.Is(err, ledger.ErrUnsigned) {
		if c.signed[k] {
			return fault(ledger.UnsignedRecord, "no sig member, after signed records in this session")
		}
		return c.format1(e, fault)
	}
	if ledger.UnknownEnvelopeVersion(err) {
		return fault(ledger.UnknownVersion, "%v", err)
	}
	if err != nil {
		return fault(ledger.BadRecord, "%v", err)
	}
	c.signed[k] = true
	if c.firstSigned == 0 || e.TsUnixMs() < c.firstSigned {
		c.firstSigned = e.TsUnixMs()
	}
	// The record's form, then where it points, then who signed it: a
	// record moved or re-pointed is named as such even though its
	// signature fails too.
	var v aarts.VerdictRecord
	var res aarts.ResolutionRecord
	switch e.EventType() {
	case ledger.EventVerdict:
		if err := ledger.DecodeExact(e.Payload(), &v); err != nil {
			return fault(ledger.BadRecord, "%v", err)
		}
		if e.Seq() == 0 || v.ForSeq != e.Seq()-1 || v.ForHash != e.PrevHash() {
			return fault(ledger.ReceiptMismatch, "judges seq %d (%s), but the envelope before it is seq %d (%s)",
				v.ForSeq, short(v.ForHash), e.Seq()-min(e.Seq(), 1), short(e.PrevHash()))
		}
		if u := c.unjudged[k]; u != nil && u.Seq == v.ForSeq {
			c.unjudged[k] = nil
		}
	case ledger.EventResolution:
		if err := ledger.DecodeExact(e.Payload(), &res); err != nil {
			return fault(ledger.BadRecord, "%v", err)
		}
		action, ok := c.asks[k][res.ForSeq]
		switch {
		case !ok:
			return fault(ledger.ReceiptMismatch, "answers seq %d, where no ask was recorded before it", res.ForSeq)
		case res.ActionSHA256 != action:
			return fault(ledger.ReceiptMismatch, "names action %s, but the ask at seq %d was about action %s", short(res.ActionSHA256), res.ForSeq, short(action))
		}
	}
	if detail := checkSig(c.ring, sigRaw, msg); detail != "" {
		return fault(ledger.BadSignature, "%s", detail)
	}
	if e.EventType() != ledger.EventVerdict {
		return nil
	}
	if len(v.Receipt) == 0 {
		return fault(ledger.BadReceipt, "no receipt")
	}
	var r Receipt
	if err := ledger.DecodeExact(v.Receipt, &r); err != nil {
		return fault(ledger.BadReceipt, "receipt: %v", err)
	}
	if r.V != Version {
		return fault(ledger.UnknownVersion, "a receipt of version %d (this build reads version %d)", r.V, Version)
	}
	if msg := mismatch(&r, &v, e); msg != "" {
		return fault(ledger.ReceiptMismatch, "%s", msg)
	}
	if v.Verdict.Decision == aarts.Ask || v.AARMDecision == aarts.AARMStepUp || v.AARMDecision == aarts.AARMDefer {
		if c.asks[k] == nil {
			c.asks[k] = map[uint64]string{}
		}
		c.asks[k][v.ForSeq] = v.ActionSHA256
	}
	return nil
}

// mismatch says how a receipt fails to attest its verdict, or "".
func mismatch(r *Receipt, v *aarts.VerdictRecord, e *ledger.Envelope) string {
	switch {
	case r.Context.EventSeq != v.ForSeq || r.Context.EventHash != v.ForHash:
		return fmt.Sprintf("receipt names event seq %d (%s), the verdict seq %d (%s)", r.Context.EventSeq, short(r.Context.EventHash), v.ForSeq, short(v.ForHash))
	case r.Context.SnapshotHash != v.SnapshotHash:
		return fmt.Sprintf("receipt snapshot %s, the verdict's %s", short(r.Context.SnapshotHash), short(v.SnapshotHash))
	case r.Identity.Tenant != e.TenantID() || r.Identity.Session != e.SessionID():
		return fmt.Sprintf("receipt is for %s/%s, recorded in %s", r.Identity.Tenant, r.Identity.Session, e.Key())
	case r.Action.HookPoint != v.HookPoint:
		return fmt.Sprintf("receipt judges a %s, the verdict a %s", r.Action.HookPoint, v.HookPoint)
	case r.Action.ParamsSHA256 != v.ActionSHA256:
		return fmt.Sprintf("receipt judges action %s, the verdict action %s", short(r.Action.ParamsSHA256), short(v.ActionSHA256))
	case r.Decision.AARTS != v.Verdict.Decision || r.Decision.AARM != v.AARMDecision || r.Decision.ReasonCode != v.ReasonCode:
		return fmt.Sprintf("receipt attests %s/%s/%s, the verdict records %s/%s/%s", r.Decision.AARTS, r.Decision.AARM, r.Decision.ReasonCode, v.Verdict.Decision, v.AARMDecision, v.ReasonCode)
	case r.PolicyDigest != v.PolicyDigest:
		return fmt.Sprintf("receipt policy %s, the verdict records %s", short(r.PolicyDigest), short(v.PolicyDigest))
	case (r.Outcome == nil) != (v.Completes == nil):
		return "receipt and verdict disagree on the call this result completes"
	case r.Outcome != nil && (r.Outcome.Completes != v.Completes.VerdictHash || r.Outcome.CompletesSeq != v.Completes.VerdictSeq || r.Outcome.ResultSHA256 != v.OutcomeSHA256):
		return fmt.Sprintf("receipt binds the result to verdict %s, the verdict to %s", short(r.Outcome.Completes), short(v.Completes.VerdictHash))
	}
	return ""
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	if h == "" {
		return "none"
	}
	return h
}

// recordCheck is Checker as a ledger.Check.
type recordCheck struct {
	chk  *Checker
	mode ledger.Mode
	lim  ledger.Limits
}

// RecordCheck returns a ledger.Check that checks every record's signature
// and receipt with a Checker on ring, in the pass that verifies the chains
// (ledger verify --pubkey). In fast mode, where chain verification reads
// only an envelope's frame, a record that does not decode (keys that
// collide under case folding, say) is named bad_record here; in deep mode
// chain verification names it malformed itself.
func RecordCheck(ring Keyring, mode ledger.Mode, lim ledger.Limits) ledger.Check {
	return &recordCheck{chk: NewChecker(ring), mode: mode, lim: lim}
}

func (r *recordCheck) Envelope(raw []byte, e *ledger.Envelope, at ledger.Position) []*ledger.ChainError {
	if e == nil && r.mode == ledger.Deep {
		return nil // chain verification reports why it does not decode
	}
	var err error
	if e == nil {
		e, err = ledger.Decode(raw, r.lim)
	}
	var ce *ledger.ChainError
	if err != nil && r.mode == ledger.Fast && !errors.As(err, &ce) {
		var where struct {
			Tenant  string `json:"tenant_id"`
			Session string `json:"session_id"`
			Seq     uint64 `json:"seq"`
		}
		_ = json.Unmarshal(raw, &where)
		return []*ledger.ChainError{{Kind: ledger.BadRecord, Tenant: where.Tenant, Session: where.Session, Seq: where.Seq,
			Line: at.Line, StreamSeq: at.StreamSeq, Detail: err.Error()}}
	}
	if err != nil && r.mode == ledger.Fast && errors.As(err, &ce) && isRecord(raw) {
		// A signature covers the canonical form, so a record stored in
		// another (8.0 for 8, its hash taken over what is stored) would
		// verify; fast mode reads every record whole anyway, so it holds
		// records to their canonical bytes.
		if c, cerr := ledger.Canonicalize(raw, r.lim); cerr == nil && !bytes.Equal(c, bytes.TrimRight(raw, "\r\n")) {
			return []*ledger.ChainError{{Kind: ledger.NotCanonical, Tenant: ce.Tenant, Session: ce.Session, Seq: ce.Seq,
				Line: at.Line, StreamSeq: at.StreamSeq, Detail: "a signed record not stored in its RFC 8785 form"}}
		}
	}
	if err != nil {
		return nil // chain verification reports it
	}
	legacy := len(r.chk.legacyAt)
	f := r.chk.Check(e)
	if u := r.chk.unjudged[e.Key()]; u != nil && u.Seq == e.Seq() {
		u.Line, u.StreamSeq = at.Line, at.StreamSeq
	}
	if len(r.chk.legacyAt) > legacy {
		l := r.chk.legacyAt[legacy].fault
		l.Line, l.StreamSeq = at.Line, at.StreamSeq
	}
	if f != nil {
		if f.Line == 0 && f.StreamSeq == 0 {
			f.Line, f.StreamSeq = at.Line, at.StreamSeq
		}
		return []*ledger.ChainError{f}
	}
	return nil
}

// format1Types are the record types that existed before record signatures:
// only they can be format 1 records.
var format1Types = map[string]bool{ledger.EventVerdict: true, ledger.EventResolution: true, ledger.EventEngineFailure: true,
	ledger.EventCheckpoint: true, ledger.EventRejected: true}

// Format 1 is how records were written before record signatures: no sig
// member; a Verdict's receipt (version 1) carried its own Ed25519 signature
// over its RFC 8785 form without its signature member.
const (
	format1 = "format 1 (records before record signatures)"
	// format1Guarantees is what format 1 proves.
	format1Guarantees = "a verdict's v1 receipt is signed (the action, the judged event's hash, the snapshot, the identity, " +
		"the decision and the policy); its reasons, rule and constraints, and every other record, are vouched for by the chain alone"
)

// format1 checks a record without a signature in a session that has had
// no signed record: a Verdict's version 1 receipt must verify with the
// keyring; the record is counted as a legacy record.
func (c *Checker) format1(e *ledger.Envelope, fault func(ledger.FaultKind, string, ...any) *ledger.ChainError) *ledger.ChainError {
	if !format1Types[e.EventType()] {
		return fault(ledger.UnsignedRecord, "no sig member (a %s record was never written unsigned)", e.EventType())
	}
	if e.EventType() == ledger.EventVerdict {
		var v struct {
			ForSeq  uint64          `json:"for_seq"`
			ForHash string          `json:"for_hash"`
			Receipt json.RawMessage `json:"receipt"`
		}
		if err := json.Unmarshal(e.Payload(), &v); err != nil {
			return fault(ledger.BadRecord, "%v", err)
		}
		if e.Seq() == 0 || v.ForSeq != e.Seq()-1 || v.ForHash != e.PrevHash() {
			return fault(ledger.ReceiptMismatch, "judges seq %d, but the envelope before it is seq %d", v.ForSeq, e.Seq()-min(e.Seq(), 1))
		}
		if u := c.unjudged[e.Key()]; u != nil && u.Seq == v.ForSeq {
			c.unjudged[e.Key()] = nil
		}
		if len(v.Receipt) == 0 {
			return fault(ledger.UnsignedRecord, "no sig member and no receipt")
		}
		if f := c.receiptV1(v.Receipt, e, fault); f != nil {
			return f
		}
	}
	// Whether a signed record was written before it is known only once
	// everything is read (Finish).
	c.legacyAt = append(c.legacyAt, legacyRecord{fault(ledger.UnsignedRecord, "no sig member, and written after records were signed: not a format 1 record"), e.TsUnixMs()})
	l := c.legacy[e.Key()]
	if l == nil {
		l = &ledger.Legacy{Tenant: e.TenantID(), Session: e.SessionID(), Format: format1, FirstSeq: e.Seq(), Guarantees: format1Guarantees}
		c.legacy[e.Key()] = l
	}
	l.Records++
	l.LastSeq = e.Seq()
	return nil
}

// receiptV1 verifies a version 1 receipt: its signature (by key_id) over
// its RFC 8785 form without the signature member, and that it names the
// event right before its verdict.
func (c *Checker) receiptV1(raw json.RawMessage, e *ledger.Envelope, fault func(ledger.FaultKind, string, ...any) *ledger.ChainError) *ledger.ChainError {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(raw, &r); err != nil {
		return fault(ledger.BadReceipt, "%v", err)
	}
	var v, seq int
	var keyID, sig, hash string
	_ = json.Unmarshal(r["v"], &v)
	_ = json.Unmarshal(r["key_id"], &keyID)
	_ = json.Unmarshal(r["signature"], &sig)
	var ctx struct {
		EventHash string `json:"event_hash"`
		EventSeq  int    `json:"event_seq"`
	}
	_ = json.Unmarshal(r["context"], &ctx)
	hash, seq = ctx.EventHash, ctx.EventSeq
	if v != 1 {
		return fault(ledger.UnsignedRecord, "no sig member, and a version %d receipt (format 1 has version 1)", v)
	}
	if hash != e.PrevHash() || uint64(seq)+1 != e.Seq() {
		return fault(ledger.ReceiptMismatch, "the receipt names event seq %d, not the envelope before its verdict", seq)
	}
	if msg := mismatchV1(r, e); msg != "" {
		return fault(ledger.ReceiptMismatch, "%s", msg)
	}
	pub, ok := c.ring[keyID]
	if !ok {
		return fault(ledger.BadSignature, "receipt signed by key %q, which is not among the public keys given", keyID)
	}
	delete(r, "signature")
	body, _ := json.Marshal(r)
	msg, err := ledger.Canonicalize(body, ledger.Limits{})
	s, derr := base64.StdEncoding.DecodeString(sig)
	if err != nil || derr != nil || !ed25519.Verify(pub, msg, s) {
		return fault(ledger.BadSignature, "the version 1 receipt's signature does not verify")
	}
	return nil
}

// mismatchV1 compares a version 1 receipt with its verdict (e) as the
// version 2 check does: the decision, the hook point, the policy and the
// snapshot it attests must be the verdict's, its identity the envelope's.
func mismatchV1(r map[string]json.RawMessage, e *ledger.Envelope) string {
	var rec struct {
		Action struct {
			HookPoint    string `json:"hook_point"`
			ParamsSHA256 string `json:"params_sha256"`
		} `json:"action"`
		Context struct {
			SnapshotHash string `json:"snapshot_hash"`
		} `json:"context"`
		Identity struct {
			Tenant  string `json:"tenant"`
			Session string `json:"session"`
		} `json:"identity"`
		Decision     Decision `json:"decision"`
		PolicyDigest string   `json:"policy_digest"`
	}
	raw, _ := json.Marshal(r)
	var v aarts.VerdictRecord
	if json.Unmarshal(raw, &rec) != nil || json.Unmarshal(e.Payload(), &v) != nil {
		return "the receipt or its verdict does not read"
	}
	switch {
	case rec.Decision.AARTS != v.Verdict.Decision || rec.Decision.AARM != v.AARMDecision || rec.Decision.ReasonCode != v.ReasonCode:
		return fmt.Sprintf("receipt attests %s/%s/%s, the verdict records %s/%s/%s", rec.Decision.AARTS, rec.Decision.AARM, rec.Decision.ReasonCode, v.Verdict.Decision, v.AARMDecision, v.ReasonCode)
	case rec.Action.HookPoint != v.HookPoint || rec.PolicyDigest != v.PolicyDigest || rec.Context.SnapshotHash != v.SnapshotHash:
		return "receipt and verdict name another hook point, policy or snapshot"
	case v.ActionSHA256 != "" && rec.Action.ParamsSHA256 != v.ActionSHA256:
		return fmt.Sprintf("receipt judges action %s, the verdict action %s", short(rec.Action.ParamsSHA256), short(v.ActionSHA256))
	case rec.Identity.Tenant != e.TenantID() || rec.Identity.Session != e.SessionID():
		return fmt.Sprintf("receipt is for %s/%s, recorded in %s", rec.Identity.Tenant, rec.Identity.Session, e.Key())
	}
	return ""
}

// Legacy implements ledger.LegacyReporter.
func (c *Checker) Legacy() []ledger.Legacy {
	var out []ledger.Legacy
	for _, l := range c.legacy {
		if l.Records > 0 {
			out = append(out, *l)
		}
	}
	slices.SortFunc(out, func(a, b ledger.Legacy) int {
		return strings.Compare(a.Tenant+"\x00"+a.Session, b.Tenant+"\x00"+b.Session)
	})
	return out
}

// isRecord reports whether raw, a stored envelope, is an engine record.
func isRecord(raw []byte) bool {
	var head struct {
		EventType string `json:"event_type"`
	}
	return json.Unmarshal(raw, &head) == nil && ledger.IsRecordType(head.EventType)
}

// Finish implements ledger.Finisher.
func (r *recordCheck) Finish() []*ledger.ChainError { return r.chk.Finish() }

// Legacy implements ledger.LegacyReporter.
func (r *recordCheck) Legacy() []ledger.Legacy { return r.chk.Legacy() }
