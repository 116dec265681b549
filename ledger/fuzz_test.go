package ledger

import (
	"bytes"
	"testing"
)

// FuzzDecode holds the fast frame scanner to the full decoder: whatever
// bytes come in, when both read an envelope they read the same one, and a
// decoded envelope re-seals to the same bytes and hash.
func FuzzDecode(f *testing.F) {
	for _, e := range chainOf(f, "acme", "s.1 \"q\" \\ é", 3) {
		f.Add(e.Bytes())
	}
	f.Add([]byte(`{"event_type":"PreToolUse","hash":"` + string(bytes.Repeat([]byte("a"), 64)) + `","payload":{"prev_hash":null,"x":",\"prev_hash\":"},"prev_hash":null,"seq":0,"session_id":"s","tenant_id":"t","ts_unix_ms":1,"v":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, scanned := scanFrame(b)
		e, canonical, err := decode(b, Limits{})
		if err != nil && e == nil {
			return
		}
		if scanned && canonical {
			if fr.seq != e.seq || fr.ts != e.ts || fr.tenant.String() != e.tenant || fr.session.String() != e.session ||
				string(fr.hash) != e.hash || string(fr.prevHash) != e.prevHash || fr.eventType.String() != e.eventType ||
				!bytes.Equal(b[fr.payloadAt:fr.payloadEnd], e.payload) {
				t.Fatalf("scanFrame and decode disagree on %q", b)
			}
		}
		if err != nil || !canonical || (e.seq == 0) != (e.prevHash == "") {
			return
		}
		head := Head{}
		if e.seq > 0 {
			head = Head{Seq: e.seq - 1, Hash: e.prevHash}
		}
		again, serr := Seal(head, Event{TenantID: e.tenant, SessionID: e.session, EventType: e.eventType, TsUnixMs: e.ts, Payload: e.payload}, Limits{})
		if serr != nil {
			t.Fatalf("decoded envelope does not re-seal: %v", serr)
		}
		if !bytes.Equal(again.Bytes(), b) || again.Hash() != e.hash {
			t.Fatalf("re-seal differs:\n got %s\nwant %s", again.Bytes(), b)
		}
	})
}
