// Package receipt signs agentledger's own records and checks them: every
// Verdict, Resolution, EngineFailure, Checkpoint and Rejected record is
// signed with Ed25519 where it is sealed, over its whole envelope at its
// chain position (ledger.SignedRecord), and a Verdict carries the decision
// receipt of AARM R5 — what action was judged, in what context, for whom,
// with what decision under which policy — which the signature covers with
// everything else the verdict says.
//
// An auditor checks the records offline with the public keys (Checker): the
// signature, its exact encoding, the record's exact form, and that every
// receipt and resolution attests the action recorded where it points.
//
// The package is pure: keys are read and written by its callers.
package receipt

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/agentledger/agentledger/ledger"
)

// Version of the receipt format. Version 2 receipts are covered by their
// record's signature; version 1 receipts carried a signature of their own
// over a re-encoding and are no longer accepted.
const Version = 2

// Alg is the signature algorithm of every record signature.
const Alg = "Ed25519"

// Receipt is the decision receipt a Verdict carries (AARM R5).
type Receipt struct {
	V            int      `json:"v"`
	Action       Action   `json:"action"`
	Context      Context  `json:"context"`
	Identity     Identity `json:"identity"`
	Decision     Decision `json:"decision"`
	PolicyDigest string   `json:"policy_digest"`
	// Outcome, in the receipt of a tool result, binds it to the call it
	// completes (AARM R5.5).
	Outcome *Outcome `json:"outcome,omitempty"`
}

// Outcome is what became of a judged call: the verdict (and receipt) that
// let it run, and a digest of its result.
type Outcome struct {
	// Completes is the hash of the PreToolUse verdict envelope whose call
	// this is the result of; CompletesSeq its seq.
	Completes    string `json:"completes"`
	CompletesSeq uint64 `json:"completes_seq"`
	// ResultSHA256 is the SHA-256 of the recorded canonical tool_result.
	ResultSHA256 string `json:"result_sha256"`
	// Failed: the call failed, or the host refused it.
	Failed bool `json:"failed,omitempty"`
}

// Action is what was judged.
type Action struct {
	HookPoint    string `json:"hook_point"`
	Tool         string `json:"tool,omitempty"`
	ToolNative   string `json:"tool_native,omitempty"`
	ParamsSHA256 string `json:"params_sha256"` // of the canonical tool input (or event)
	TsUnixMs     int64  `json:"ts_unix_ms"`
}

// Context binds the receipt to the record: the judged event is the
// envelope right before the verdict, so its hash is the chain head the
// verdict extends and the receipt vouches for the whole chain before it.
type Context struct {
	EventHash    string `json:"event_hash"`
	EventSeq     uint64 `json:"event_seq"`
	SnapshotHash string `json:"snapshot_hash"`
}

// Identity says on whose behalf the action ran (AARM R6), as the
// connection was authenticated: never what the event claims about itself
// (the claim stays in the event, which the receipt's event hash covers).
// Flagged lists what authentication did not establish, and "claim_differs"
// when the event claims another identity.
type Identity struct {
	Tenant    string `json:"tenant"`
	Session   string `json:"session"`
	Principal string `json:"principal,omitempty"`
	Service   string `json:"service,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Scope     string `json:"scope,omitempty"`
	// AuthenticatedBy says how: "token:<name>", "unix:uid=<n>", "parent"
	// (inherited from the parent session of a sub-agent), or "none".
	AuthenticatedBy string   `json:"authenticated_by"`
	Flagged         []string `json:"flagged,omitempty"`
}

// Decision is the verdict the receipt attests.
type Decision struct {
	AARTS      string `json:"aarts"`
	AARM       string `json:"aarm"`
	ReasonCode string `json:"reason_code"`
}

// Signer signs records with one Ed25519 key. It is a ledger.RecordSigner.
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

// KeyID returns the id of the signer's key.
func (s *Signer) KeyID() string { return s.keyID }

// Alg returns "Ed25519".
func (s *Signer) Alg() string { return Alg }

// SignMessage signs msg.
func (s *Signer) SignMessage(msg []byte) ([]byte, error) { return ed25519.Sign(s.key, msg), nil }

// PublicKey returns the signer's public key.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

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
func (s *Signer) PublicKeyPEM() []byte { return s.PublicKeyPEMFor("") }

// PurposeHeader is the PEM header of a public key that says what the key
// signs (PurposeRecords or PurposeCheckpoints): a verifier given the file
// learns the key's purpose from the key itself, and a record signed with a
// checkpoint key, or a checkpoint signed with a record key, does not
// verify.
const PurposeHeader = "Agentledger-Purpose"

// Key purposes.
const (
	PurposeRecords     = "records"
	PurposeCheckpoints = "checkpoints"
)

// PublicKeyPEMFor is PublicKeyPEM saying the key's purpose in its
// PurposeHeader (none when purpose is empty).
func (s *Signer) PublicKeyPEMFor(purpose string) []byte {
	der, _ := x509.MarshalPKIXPublicKey(s.key.Public())
	b := &pem.Block{Type: "PUBLIC KEY", Bytes: der}
	if purpose != "" {
		b.Headers = map[string]string{PurposeHeader: purpose}
	}
	return pem.EncodeToMemory(b)
}

// ParsePublicKey reads a PKIX PEM Ed25519 public key: the first PEM block
// of pemBytes.
func ParsePublicKey(pemBytes []byte) (ed25519.PublicKey, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil {
		return nil, errors.New("not a PEM PUBLIC KEY")
	}
	return parsePublicBlock(b)
}

func parsePublicBlock(b *pem.Block) (ed25519.PublicKey, error) {
	if b.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("PEM block %q, want PUBLIC KEY", b.Type)
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

// Keyring holds the public keys a verifier trusts for one purpose, by key
// id.
type Keyring map[string]ed25519.PublicKey

// Keys are the public keys a verifier trusts, by purpose: record keys
// verify record signatures and receipts, checkpoint keys checkpoints;
// neither is ever tried for the other.
type Keys struct {
	Records, Checkpoints Keyring
}

// Add adds the public keys of every PEM block in pemBytes, each for the
// purpose its PurposeHeader names, or, without one, for purpose (what the
// flag that named the file says). A block whose header contradicts a
// purpose given is an error.
func (k *Keys) Add(pemBytes []byte, purpose string) error {
	if k.Records == nil {
		k.Records = Keyring{}
	}
	if k.Checkpoints == nil {
		k.Checkpoints = Keyring{}
	}
	n := 0
	for {
		var b *pem.Block
		b, pemBytes = pem.Decode(pemBytes)
		if b == nil {
			break
		}
		pub, err := parsePublicBlock(b)
		if err != nil {
			return err
		}
		p := purpose
		if h, ok := b.Headers[PurposeHeader]; ok {
			if h != PurposeRecords && h != PurposeCheckpoints {
				return fmt.Errorf("key %s: %s %q, want %s or %s", KeyID(pub), PurposeHeader, h, PurposeRecords, PurposeCheckpoints)
			}
			if purpose == PurposeCheckpoints && h != purpose {
				return fmt.Errorf("key %s signs %s, not checkpoints", KeyID(pub), h)
			}
			p = h
		}
		if p == PurposeCheckpoints {
			k.Checkpoints[KeyID(pub)] = pub
		} else {
			k.Records[KeyID(pub)] = pub
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM PUBLIC KEY in it")
	}
	return nil
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

// Authenticated is who a connection was authenticated as: from a token's
// entry, from the peer of a local socket, or inherited from a sub-agent's
// parent session. The zero value is "not authenticated".
type Authenticated struct {
	Principal string `json:"principal,omitempty"`
	Service   string `json:"service,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Scope     string `json:"scope,omitempty"`
	// By says how the identity was established (Identity.AuthenticatedBy).
	By string `json:"by,omitempty"`
}

// Field returns one of the identity's fields by its JSON name.
func (a Authenticated) Field(name string) string {
	switch name {
	case "principal":
		return a.Principal
	case "service":
		return a.Service
	case "agent":
		return a.Agent
	case "scope":
		return a.Scope
	}
	return ""
}

// Identity is the receipt identity of a's action in a session, flagging
// what authentication did not establish.
func (a Authenticated) Identity(tenant, session string) Identity {
	id := Identity{Tenant: tenant, Session: session, Principal: a.Principal, Service: a.Service, Agent: a.Agent, Scope: a.Scope, AuthenticatedBy: a.By}
	if id.AuthenticatedBy == "" {
		id.AuthenticatedBy = "none"
	}
	if a.Principal == "" {
		id.Flagged = append(id.Flagged, "no_principal")
	}
	if a.Agent == "" {
		id.Flagged = append(id.Flagged, "no_agent")
	}
	return id
}

// Map is the identity as the policy reads it (input.identity).
func (a Authenticated) Map() map[string]any {
	return map[string]any{"principal": a.Principal, "agent": a.Agent, "service": a.Service, "scope": a.Scope, "authenticated_by": a.By}
}
