package replay

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/canon"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/receipt"
)

// ahead is a recorded verdict read ahead, with the hook event it answers:
// the members of its canonical payload, and of them what the replay must
// know before it judges the event (whom the receipt attests, what the
// session inherited, whether the step was enforced).
//
// Most replayed verdicts are the recorded ones again. Such a verdict is
// recognised by its members (same), and then nothing else of the recorded
// one is decoded; any other is decoded whole, exactly, as before.
type ahead struct {
	seq     uint64 // the verdict envelope's seq
	members []canon.Member
	context aarts.VerdictRecord // ForSeq, Enforced, Inherited and Receipt only
}

// decodeEveryVerdict turns the read-ahead off: every recorded verdict is
// decoded whole (tests compare the two ways).
var decodeEveryVerdict = false

// readAhead reads the recorded verdict payload p (the envelope at seq)
// that follows a hook event. It reports false for anything but a
// canonical object whose keys are unique and in order and whose context
// members have their plain form; the caller then decodes p exactly.
//
// The members are appended to buf[:0] (a buffer the caller keeps for the
// next read ahead, once this one is done with).
func readAhead(p []byte, seq uint64, buf []canon.Member) (*ahead, bool) {
	ms, err := canon.AppendMembers(buf[:0], p)
	if err != nil {
		return nil, false
	}
	a := &ahead{seq: seq, members: ms}
	forSeq := false
	for i, m := range ms {
		if i > 0 && bytes.Compare(ms[i-1].Key, m.Key) >= 0 {
			return nil, false // a twin or out of order: not what a sealer writes
		}
		switch string(m.Key) {
		case "for_seq":
			n, err := strconv.ParseUint(string(m.Value), 10, 64)
			if err != nil {
				return nil, false
			}
			a.context.ForSeq, forSeq = n, true
		case "enforced":
			var b bool
			switch string(m.Value) {
			case "true":
				b = true
			case "false":
			default:
				return nil, false
			}
			a.context.Enforced = &b
		case "inherited":
			a.context.Inherited = json.RawMessage(m.Value)
		case "receipt":
			a.context.Receipt = json.RawMessage(m.Value)
		}
	}
	return a, forSeq
}

// unjudged are the members of a verdict that exact replay does not
// compare (see verdictFields): the receipt and the record signature (the
// replay signs nothing), the hashes of the replayed chain (for_hash,
// completes: unsigned verdicts make it another chain), and the policy
// digest (a candidate policy has its own). Every other member must be the
// same bytes, a stricter test than compare's.
var unjudged = map[string]bool{"receipt": true, "sig": true, "policy_digest": true, "for_hash": true, "completes": true}

// same reports whether the replayed verdict payload got has every member
// of the recorded one a (but the unjudged) with the same bytes, and no
// other; if so it returns the recorded policy digest.
func (a *ahead) same(got []byte) (digest string, ok bool) {
	var buf [24]canon.Member
	gs, err := canon.AppendMembers(buf[:0], got)
	if err != nil {
		return "", false
	}
	i, j := 0, 0
	for i < len(a.members) || j < len(gs) {
		switch {
		case i < len(a.members) && unjudged[string(a.members[i].Key)]:
			if string(a.members[i].Key) == "policy_digest" {
				v := a.members[i].Value
				if len(v) < 2 || bytes.IndexByte(v, '\\') >= 0 {
					return "", false
				}
				digest = string(v[1 : len(v)-1])
			}
			i++
		case j < len(gs) && unjudged[string(gs[j].Key)]:
			j++
		case i < len(a.members) && j < len(gs) && bytes.Equal(a.members[i].Key, gs[j].Key) && bytes.Equal(a.members[i].Value, gs[j].Value):
			i, j = i+1, j+1
		default:
			return "", false
		}
	}
	return digest, digest != ""
}

// lastIdentity is the identity a receipt attested last, with the bytes it
// was decoded from.
type lastIdentity struct {
	raw []byte
	id  receipt.Identity
}

// receiptIdentity reads the identity a version 2 receipt attests. Only the
// identity is read, held to its exact form (its members by their exact
// names, as any exact reader takes them); ledger verify checks the rest of
// the receipt.
//
// last is the identity read before and the bytes it was read from: a
// session's receipts attest one identity over and over, which is then
// decoded once.
func receiptIdentity(raw []byte, last *lastIdentity) (receipt.Identity, bool) {
	var id receipt.Identity
	var buf [16]canon.Member
	ms, err := canon.AppendMembers(buf[:0], raw)
	if err != nil {
		// Not in canonical form (a record not written by a sealer): read
		// as a JSON decoder reads it.
		var r struct {
			V        int              `json:"v"`
			Identity receipt.Identity `json:"identity"`
		}
		ok := len(raw) > 0 && json.Unmarshal(raw, &r) == nil && r.V == receipt.Version
		return r.Identity, ok
	}
	version, found := false, false
	for i, m := range ms {
		if i > 0 && bytes.Compare(ms[i-1].Key, m.Key) >= 0 {
			return id, false
		}
		switch string(m.Key) {
		case "v":
			version = string(m.Value) == strconv.Itoa(receipt.Version)
		case "identity":
			if last != nil && last.raw != nil && bytes.Equal(last.raw, m.Value) {
				id, found = last.id, true
				continue
			}
			if found = ledger.DecodeExact(m.Value, &id) == nil; found && last != nil {
				last.raw, last.id = append(last.raw[:0], m.Value...), id
			}
		}
	}
	return id, version && found
}
