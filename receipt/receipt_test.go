package receipt

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
)

func newSigner(t testing.TB) *Signer {
	t.Helper()
	keyPEM, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := ParsePrivateKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return NewSigner(key)
}

// TestRecordSignature: a record sealed with a signer verifies with its
// key, at its position only; an unknown key, another position, a
// non-canonical signature encoding and a missing signature are named
// faults; hook events are not records and need none.
func TestRecordSignature(t *testing.T) {
	s := newSigner(t)
	ring := Keyring{s.KeyID(): s.PublicKey()}
	ev, err := ledger.Seal(ledger.Head{}, ledger.Event{SessionID: "s", EventType: "SessionStart", TsUnixMs: 1, Payload: []byte(`{"a":1}`)}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rec := ledger.Event{SessionID: "s", EventType: ledger.EventEngineFailure, TsUnixMs: 2, Payload: []byte(`{"id":"f1","error":"x"}`), Signer: s}
	signed, err := ledger.Seal(ev.Head(), rec, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(signed.Payload()), `"sig":{"alg":"Ed25519","key_id":"`+s.KeyID()+`"`) {
		t.Fatalf("no sig member: %s", signed.Payload())
	}
	if f := NewChecker(ring).Check(ev); f != nil {
		t.Fatalf("hook event: %v", f)
	}
	if f := NewChecker(ring).Check(signed); f != nil {
		t.Fatalf("genuine record: %v", f)
	}
	// Deterministic: sealing again gives the same bytes.
	again, _ := ledger.Seal(ev.Head(), rec, ledger.Limits{})
	if string(again.Bytes()) != string(signed.Bytes()) {
		t.Error("signing is not deterministic")
	}
	cases := map[string]struct {
		env  func() *ledger.Envelope
		ring Keyring
		want ledger.FaultKind
	}{
		"unknown key": {func() *ledger.Envelope { return signed }, Keyring{}, ledger.BadSignature},
		"moved to genesis": {func() *ledger.Envelope {
			// The same payload, signature and all, sealed elsewhere.
			e, _ := ledger.Seal(ledger.Head{}, ledger.Event{SessionID: "s", EventType: ledger.EventEngineFailure, TsUnixMs: 2, Payload: signed.Payload()}, ledger.Limits{})
			return e
		}, ring, ledger.BadSignature},
		"other session": {func() *ledger.Envelope {
			e, _ := ledger.Seal(ev.Head(), ledger.Event{SessionID: "t", EventType: ledger.EventEngineFailure, TsUnixMs: 2, Payload: signed.Payload()}, ledger.Limits{})
			return e
		}, ring, ledger.BadSignature},
		"padded base64": {func() *ledger.Envelope {
			p := strings.Replace(string(signed.Payload()), `=="}`, `==\n"}`, 1)
			e, _ := ledger.Seal(ev.Head(), ledger.Event{SessionID: "s", EventType: ledger.EventEngineFailure, TsUnixMs: 2, Payload: []byte(p)}, ledger.Limits{})
			return e
		}, ring, ledger.BadSignature},
		"extra member": {func() *ledger.Envelope {
			p := strings.Replace(string(signed.Payload()), `{"error"`, `{"approved_by":"ciso","error"`, 1)
			e, _ := ledger.Seal(ev.Head(), ledger.Event{SessionID: "s", EventType: ledger.EventEngineFailure, TsUnixMs: 2, Payload: []byte(p)}, ledger.Limits{})
			return e
		}, ring, ledger.BadSignature},
	}
	for name, c := range cases {
		e := c.env()
		if e == nil {
			t.Fatalf("%s: could not build the forgery", name)
		}
		f := NewChecker(c.ring).Check(e)
		if f == nil || f.Kind != c.want || !errors.Is(f, ledger.ErrIntegrity) {
			t.Errorf("%s: got %v, want %s", name, f, c.want)
		}
	}
	// An unsigned record alone reads as record format 1 (legacy); once a
	// signed record was written before it, it is unsigned_record.
	unsigned, _ := ledger.Seal(ev.Head(), ledger.Event{SessionID: "u", EventType: ledger.EventEngineFailure, TsUnixMs: 2, Payload: []byte(`{"id":"f1","error":"x"}`)}, ledger.Limits{})
	alone := NewChecker(ring)
	if f := alone.Check(unsigned); f != nil || len(alone.Finish()) != 0 || len(alone.Legacy()) != 1 {
		t.Errorf("an unsigned record alone: %v %v %v, want one legacy record", f, alone.Finish(), alone.Legacy())
	}
	after := NewChecker(ring)
	after.Check(signed)
	after.Check(unsigned)
	if fs := after.Finish(); len(fs) != 1 || fs[0].Kind != ledger.UnsignedRecord || len(after.Legacy()) != 0 {
		t.Errorf("an unsigned record after a signed one: %v, legacy %v", fs, after.Legacy())
	}
}

// TestKeyPurposes: a key file says what its key signs, and a verifier's
// keys are kept by purpose: a record key is never a checkpoint key, nor
// the reverse; a file that contradicts the flag naming it is refused.
func TestKeyPurposes(t *testing.T) {
	a, b, c := newSigner(t), newSigner(t), newSigner(t)
	var keys Keys
	if err := keys.Add(append(a.PublicKeyPEMFor(PurposeRecords), b.PublicKeyPEMFor(PurposeCheckpoints)...), PurposeRecords); err != nil {
		t.Fatal(err)
	}
	if err := keys.Add(c.PublicKeyPEM(), PurposeCheckpoints); err != nil {
		t.Fatal(err)
	}
	if len(keys.Records) != 1 || keys.Records[a.KeyID()] == nil || len(keys.Checkpoints) != 2 || keys.Checkpoints[b.KeyID()] == nil || keys.Checkpoints[c.KeyID()] == nil {
		t.Fatalf("keys: %d record, %d checkpoint", len(keys.Records), len(keys.Checkpoints))
	}
	if err := keys.Add(a.PublicKeyPEMFor(PurposeRecords), PurposeCheckpoints); err == nil {
		t.Error("a record key given as a checkpoint key was accepted")
	}
	if err := keys.Add([]byte("nothing"), PurposeRecords); err == nil {
		t.Error("a file without keys was accepted")
	}
	if ParamsDigest([]byte(`{"a":2,"b":1}`)) != ParamsDigest([]byte(`{"b":1, "a":2}`)) {
		t.Error("params digest depends on key order")
	}
}

// TestOutcomeMismatch: a result's receipt and its verdict must bind it to
// the same call and the same result digest; either one alone, or another
// call, is a mismatch.
func TestOutcomeMismatch(t *testing.T) {
	env, err := ledger.Seal(ledger.Head{}, ledger.Event{TenantID: "t", SessionID: "s", EventType: ledger.EventVerdict, TsUnixMs: 1, Payload: []byte(`{}`)}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	call := &aarts.CallRef{EventSeq: 0, VerdictSeq: 1, VerdictHash: strings.Repeat("a", 64)}
	v := aarts.VerdictRecord{HookPoint: "PostToolUse", Completes: call, OutcomeSHA256: strings.Repeat("b", 64)}
	r := Receipt{V: Version, Identity: Identity{Tenant: "t", Session: "s"}, Action: Action{HookPoint: "PostToolUse"},
		Outcome: &Outcome{Completes: call.VerdictHash, CompletesSeq: 1, ResultSHA256: v.OutcomeSHA256}}
	if msg := mismatch(&r, &v, env); msg != "" {
		t.Fatalf("matching outcome: %s", msg)
	}
	for name, edit := range map[string]func(r *Receipt, v *aarts.VerdictRecord){
		"another call":   func(r *Receipt, _ *aarts.VerdictRecord) { r.Outcome.Completes = strings.Repeat("c", 64) },
		"another result": func(r *Receipt, _ *aarts.VerdictRecord) { r.Outcome.ResultSHA256 = strings.Repeat("c", 64) },
		"receipt only":   func(_ *Receipt, v *aarts.VerdictRecord) { v.Completes = nil },
		"verdict only":   func(r *Receipt, _ *aarts.VerdictRecord) { r.Outcome = nil },
	} {
		r2, v2 := r, v
		o := *r.Outcome
		r2.Outcome = &o
		edit(&r2, &v2)
		if mismatch(&r2, &v2, env) == "" {
			t.Errorf("%s: no mismatch", name)
		}
	}
}
