package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestFoldedTwinKeysRejected: in agentledger's own records, keys that
// differ only by case folding are refused, at any depth, with U+017F (ſ)
// and U+212A (Kelvin sign) twins; hook events keep whatever keys the host
// sent.
func TestFoldedTwinKeysRejected(t *testing.T) {
	for _, in := range []string{
		`{"decision":"allow","deciſion":"deny"}`,
		`{"verdict":{"decision":"allow","deci\u017fion":"deny"}}`,
		`{"kind":1,"\u212aind":2}`,
		`{"Decision":"x","decision":"y"}`,
		`{"a":[{"Key":1,"KEY":2}]}`,
		`{"Ä":1,"ä":2}`,
	} {
		_, err := Seal(Head{}, Event{SessionID: "s", EventType: EventVerdict, Payload: []byte(in)}, Limits{})
		if err == nil || !strings.Contains(err.Error(), "case folding") {
			t.Errorf("verdict %s: got %v, want a folded-twin error", in, err)
		}
		if _, err := Seal(Head{}, Event{SessionID: "s", EventType: "PreToolUse", Payload: []byte(in)}, Limits{}); err != nil {
			t.Errorf("hook event %s: %v, want it kept as sent", in, err)
		}
	}
	if _, err := Seal(Head{}, Event{SessionID: "s", EventType: EventVerdict, Payload: []byte(`{"decision":"allow","session_id":"s","kind":1}`)}, Limits{}); err != nil {
		t.Errorf("plain keys: %v", err)
	}
}

// TestFoldedTwinsInStoredVerdict: a stored verdict whose payload carries
// folded twin keys (resealed, so its hash is right) is a fault to deep
// verification, not a record that reads one way to jq and another to Go.
func TestFoldedTwinsInStoredVerdict(t *testing.T) {
	body := `{"event_type":"Verdict","payload":{"decision":"allow","deciſion":"deny"},"prev_hash":null,"seq":0,"session_id":"s","tenant_id":"t","ts_unix_ms":1,"v":1}`
	c, err := Canonicalize([]byte(body), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c)
	full := strings.Replace(string(c), `"event_type":"Verdict",`, `"event_type":"Verdict","hash":"`+hex.EncodeToString(sum[:])+`",`, 1)
	if _, err := Decode([]byte(full), Limits{}); err == nil || !strings.Contains(err.Error(), "case folding") {
		t.Fatalf("Decode: got %v, want a folded-twin error", err)
	}
	rep, err := VerifyBundle(strings.NewReader(full+"\n"), Deep, Limits{})
	if err != nil || rep.OK() || rep.Faults[0].Kind != Malformed {
		t.Fatalf("deep verify: %v %+v, want a malformed fault", err, rep)
	}
}
