package receipt

import (
	"errors"
	"testing"
)

func TestSignVerify(t *testing.T) {
	keyPEM, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := ParsePrivateKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSigner(key)
	pub, err := ParsePublicKey(s.PublicKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	r := Receipt{Action: Action{HookPoint: "PreToolUse", Tool: "shell", ParamsSHA256: ParamsDigest([]byte(`{"b":1, "a":2}`)), TsUnixMs: 1},
		Context: Context{EventHash: "e", EventSeq: 4, SnapshotHash: "s"}, Identity: Identity{Tenant: "acme", Session: "s1"},
		Decision: Decision{AARTS: "deny", AARM: "DENY", ReasonCode: "FORBIDDEN"}, PolicyDigest: "p"}
	if err := s.Sign(&r); err != nil {
		t.Fatal(err)
	}
	if r.V != Version || r.KeyID != KeyID(pub) || r.Signature == "" {
		t.Fatalf("signed receipt: %+v", r)
	}
	if err := Verify(r, pub); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if ParamsDigest([]byte(`{"a":2,"b":1}`)) != r.Action.ParamsSHA256 {
		t.Error("params digest depends on key order")
	}
	for name, edit := range map[string]func(*Receipt){
		"decision": func(r *Receipt) { r.Decision.AARTS = "allow" },
		"event":    func(r *Receipt) { r.Context.EventSeq++ },
		"identity": func(r *Receipt) { r.Identity.Principal = "mallory" },
		"policy":   func(r *Receipt) { r.PolicyDigest = "q" },
		"sig":      func(r *Receipt) { r.Signature = r.Signature[:10] },
	} {
		c := r
		edit(&c)
		if err := Verify(c, pub); !errors.Is(err, ErrBadSignature) {
			t.Errorf("edited %s: got %v, want ErrBadSignature", name, err)
		}
	}
	if _, err := ParsePrivateKey(s.PublicKeyPEM()); err == nil {
		t.Error("a public key parsed as a private key")
	}
}
