// Package receipt signs and verifies decision receipts (AARM R5): what
// action was judged, in what context, for whom, with what decision under
// which policy — signed with Ed25519 over the receipt's RFC 8785 form, so an
// auditor can check every recorded verdict offline with the public key.
//
// The package is pure: keys are read and written by its callers.
package receipt

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/agentledger/agentledger/ledger"
)

// Version of the receipt format.
const Version = 1

// Receipt is the signed statement a Verdict carries.
type Receipt struct {
	V            int      `json:"v"`
	KeyID        string   `json:"key_id"`
	Action       Action   `json:"action"`
	Context      Context  `json:"context"`
	Identity     Identity `json:"identity"`
	Decision     Decision `json:"decision"`
	PolicyDigest string   `json:"policy_digest"`
	Signature    string   `json:"signature,omitempty"` // base64 Ed25519 over the JCS form without this member
}

// Action is what was judged.
type Action struct {
	HookPoint    string `json:"hook_point"`
	Tool         string `json:"tool,omitempty"`
	ToolNative   string `json:"tool_native,omitempty"`
	ParamsSHA256 string `json:"params_sha256"` // of the canonical tool input (or event)
	TsUnixMs     int64  `json:"ts_unix_ms"`
}

// Context binds the receipt to the record.
type Context struct {
	EventHash    string `json:"event_hash"`
	EventSeq     uint64 `json:"event_seq"`
	SnapshotHash string `json:"snapshot_hash"`
}

// Identity says on whose behalf the action ran (AARM R6). Flagged lists
// what the event did not say.
type Identity struct {
	Tenant    string   `json:"tenant"`
	Session   string   `json:"session"`
	Principal string   `json:"principal,omitempty"`
	Service   string   `json:"service,omitempty"`
	Agent     string   `json:"agent,omitempty"`
	Scope     string   `json:"scope,omitempty"`
	Flagged   []string `json:"flagged,omitempty"`
}

// Decision is the verdict the receipt attests.
type Decision struct {
	AARTS      string `json:"aarts"`
	AARM       string `json:"aarm"`
	ReasonCode string `json:"reason_code"`
}

// Signer signs receipts with one Ed25519 key.
type Signer struct {
	key   ed25519.PrivateKey
	keyID string
}

// KeyID returns the id of a public key: the first 16 hex digits of the
// SHA-256 of its bytes.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// NewSigner returns a Signer for key.
func NewSigner(key ed25519.PrivateKey) *Signer {
	return &Signer{key: key, keyID: KeyID(key.Public().(ed25519.PublicKey))}
}

// GenerateKey returns a new private key as PKCS#8 PEM.
func GenerateKey() ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivateKey reads a PKCS#8 PEM Ed25519 private key.
func ParsePrivateKey(pemBytes []byte) (ed25519.PrivateKey, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil || b.Type != "PRIVATE KEY" {
		return nil, errors.New("not a PEM PRIVATE KEY")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key is %T, want Ed25519", k)
	}
	return ek, nil
}

// PublicKeyPEM returns the PKIX PEM of a signer's public key.
func (s *Signer) PublicKeyPEM() []byte {
	der, _ := x509.MarshalPKIXPublicKey(s.key.Public())
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// ParsePublicKey reads a PKIX PEM Ed25519 public key.
func ParsePublicKey(pemBytes []byte) (ed25519.PublicKey, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil || b.Type != "PUBLIC KEY" {
		return nil, errors.New("not a PEM PUBLIC KEY")
	}
	k, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	ek, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("key is %T, want Ed25519", k)
	}
	return ek, nil
}

// Sign fills in r's version, key id and signature.
func (s *Signer) Sign(r *Receipt) error {
	r.V, r.KeyID, r.Signature = Version, s.keyID, ""
	msg, err := canonical(r)
	if err != nil {
		return err
	}
	r.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(s.key, msg))
	return nil
}

// ErrBadSignature means a receipt's signature does not verify.
var ErrBadSignature = errors.New("receipt signature does not verify")

// Verify checks r's signature with pub.
func Verify(r Receipt, pub ed25519.PublicKey) error {
	if r.KeyID != KeyID(pub) {
		return fmt.Errorf("receipt signed by key %s, not by %s: %w", r.KeyID, KeyID(pub), ErrBadSignature)
	}
	sig, err := base64.StdEncoding.DecodeString(r.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("malformed signature: %w", ErrBadSignature)
	}
	r.Signature = ""
	msg, err := canonical(&r)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, msg, sig) {
		return ErrBadSignature
	}
	return nil
}

func canonical(r *Receipt) ([]byte, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return ledger.Canonicalize(raw, ledger.Limits{})
}

// ParamsDigest returns the SHA-256 of a value's canonical JSON.
func ParamsDigest(raw []byte) string {
	c, err := ledger.Canonicalize(raw, ledger.Limits{MaxBytes: 64 << 20, MaxDepth: 1000})
	if err != nil {
		c = raw
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}

// ErrNoReceipt means a Verdict carries no receipt.
var ErrNoReceipt = errors.New("verdict has no receipt")

// CheckVerdict verifies the receipt of a Verdict envelope's payload with pub
// and that it attests this verdict: the event it names (for_seq, for_hash),
// the decision and the policy digest the payload records.
func CheckVerdict(payload []byte, pub ed25519.PublicKey) error {
	var v struct {
		ForSeq  uint64 `json:"for_seq"`
		ForHash string `json:"for_hash"`
		Verdict struct {
			Decision string `json:"decision"`
		} `json:"verdict"`
		AARMDecision string   `json:"aarm_decision"`
		ReasonCode   string   `json:"reason_code"`
		PolicyDigest string   `json:"policy_digest"`
		Receipt      *Receipt `json:"receipt"`
	}
	if err := json.Unmarshal(payload, &v); err != nil {
		return fmt.Errorf("verdict payload: %w", err)
	}
	if v.Receipt == nil {
		return ErrNoReceipt
	}
	r := *v.Receipt
	if err := Verify(r, pub); err != nil {
		return err
	}
	switch {
	case r.Context.EventHash != v.ForHash || r.Context.EventSeq != v.ForSeq:
		return fmt.Errorf("receipt names event seq %d %s, the verdict seq %d %s", r.Context.EventSeq, r.Context.EventHash, v.ForSeq, v.ForHash)
	case r.Decision.AARTS != v.Verdict.Decision || r.Decision.AARM != v.AARMDecision || r.Decision.ReasonCode != v.ReasonCode:
		return fmt.Errorf("receipt attests %s/%s/%s, the verdict records %s/%s/%s", r.Decision.AARTS, r.Decision.AARM, r.Decision.ReasonCode, v.Verdict.Decision, v.AARMDecision, v.ReasonCode)
	case r.PolicyDigest != v.PolicyDigest:
		return fmt.Errorf("receipt policy %s, the verdict records %s", r.PolicyDigest, v.PolicyDigest)
	}
	return nil
}
