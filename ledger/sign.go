package ledger

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// IsRecordType reports whether t is one of the records agentledger writes
// itself (Verdict, Resolution, EngineFailure, Checkpoint, Rejected, Reveal,
// Shred): the
// records that are signed when the writer has a key, and whose keys must
// not collide under case folding.
func IsRecordType(t string) bool {
	switch t {
	case EventVerdict, EventResolution, EventEngineFailure, EventCheckpoint, EventRejected, EventReveal, EventShred:
		return true
	}
	return false
}

// SigMember is the payload member that holds a record's signature.
const SigMember = "sig"

// RecordSigContext is the domain-separation prefix of every record
// signature's message.
const RecordSigContext = "agentledger/record-sig/v1\n"

// RecordSig is a record's signature, the payload member "sig".
type RecordSig struct {
	Alg   string `json:"alg"`    // "Ed25519"
	KeyID string `json:"key_id"` // the signing key's id
	Value string `json:"value"`  // standard base64 (padded) of the signature
}

// A RecordSigner signs agentledger's own records where they are sealed: the
// signature covers the record's whole envelope at its chain position.
type RecordSigner interface {
	// KeyID names the key; Alg names the algorithm.
	KeyID() string
	Alg() string
	// SignMessage signs msg.
	SignMessage(msg []byte) ([]byte, error)
}

// maxDepthUnbounded bounds re-canonicalization of a payload that was
// already accepted under its writer's limits (encoding/json's own limit).
const maxDepthUnbounded = 10000

// sign returns payload (canonical, without a "sig" member) with the
// signature of the envelope e would be with that payload.
func (e *Envelope) sign(payload []byte, s RecordSigner, lim Limits) ([]byte, error) {
	sig, err := s.SignMessage(e.signedMessage(payload))
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	raw, err := json.Marshal(RecordSig{Alg: s.Alg(), KeyID: s.KeyID(), Value: base64.StdEncoding.EncodeToString(sig)})
	if err != nil {
		return nil, err
	}
	// The member goes last; canonicalizing puts it in its place, and
	// refuses a payload that carries a "sig" of its own (a duplicate key).
	out := make([]byte, 0, len(payload)+len(raw)+8)
	out = append(out, payload[:len(payload)-1]...)
	if len(payload) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"`+SigMember+`":`...)
	out = append(out, raw...)
	out = append(out, '}')
	signed, err := Canonicalize(out, Limits{MaxBytes: max(lim.Bytes(), len(out)+1), MaxDepth: lim.MaxDepth})
	if err != nil {
		return nil, &InputError{Path: "$.payload.sig", Offset: -1, Msg: "a record to be signed must not carry a sig member"}
	}
	return signed, nil
}

// signedMessage is what a record signature signs: RecordSigContext and the
// RFC 8785 form of the envelope without its hash, whose payload is payload
// (the payload without its "sig" member). It binds the record to its
// tenant, session, seq, time, type and the hash of everything before it.
func (e *Envelope) signedMessage(payload []byte) []byte {
	c := *e
	raw := c.encode(payload)
	// encode writes "hash" second: {"event_type":…,"hash":"…",…}.
	at := len(`{"event_type":`) + len(appendString(nil, e.eventType)) + 1
	end := at + len(`"hash":"`) + 64 + len(`",`)
	msg := make([]byte, 0, len(RecordSigContext)+len(raw)-(end-at))
	msg = append(msg, RecordSigContext...)
	msg = append(msg, raw[:at]...)
	return append(msg, raw[end:]...)
}

// SignedRecord returns what a signed record's signature covers: its
// signature member and the message signed (see signedMessage). A record
// without a "sig" member returns ErrUnsigned. The payload is read with
// exact key matching: only a member named exactly "sig" is the signature.
func SignedRecord(e *Envelope) (sig json.RawMessage, msg []byte, err error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(e.payload, &members); err != nil {
		return nil, nil, fmt.Errorf("payload: %w", err)
	}
	sig, ok := members[SigMember]
	if !ok {
		return nil, nil, ErrUnsigned
	}
	delete(members, SigMember)
	out, err := json.Marshal(members)
	if err != nil {
		return nil, nil, err
	}
	payload, err := Canonicalize(out, Limits{MaxBytes: len(out) + 1, MaxDepth: maxDepthUnbounded})
	if err != nil {
		return nil, nil, err
	}
	return sig, e.signedMessage(payload), nil
}
