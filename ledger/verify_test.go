package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// chainOf seals n events on one session.
func chainOf(t testing.TB, tenant, session string, n int) []*Envelope {
	t.Helper()
	var head Head
	var out []*Envelope
	for i := 0; i < n; i++ {
		e, err := Seal(head, Event{
			TenantID: tenant, SessionID: session, EventType: "PreToolUse", TsUnixMs: int64(1763830000000 + i),
			Payload: []byte(fmt.Sprintf(`{"tool_name":"Bash","tool_input":{"command":"echo %d"},"n":%d}`, i, i)),
		}, Limits{})
		if err != nil {
			t.Fatalf("seal %d: %v", i, err)
		}
		head = e.Head()
		out = append(out, e)
	}
	return out
}

func TestSealHashIsSHA256OfJCSWithoutHash(t *testing.T) {
	es := chainOf(t, "acme", "s.1 *>/é", 3)
	for _, e := range es {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(e.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		delete(m, "hash")
		without, _ := json.Marshal(m)
		canon, err := jcs.Transform(without)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(canon)
		if got, want := e.Hash(), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("seq %d: got hash %s, want %s", e.Seq(), got, want)
		}
		whole, _ := jcs.Transform(e.Bytes())
		if !bytes.Equal(whole, e.Bytes()) {
			t.Errorf("seq %d: stored bytes are not JCS:\n got %s\nwant %s", e.Seq(), e.Bytes(), whole)
		}
		d, err := Decode(e.Bytes(), Limits{})
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if d.Hash() != e.Hash() || d.Seq() != e.Seq() || d.SessionID() != e.SessionID() || d.PrevHash() != e.PrevHash() || !bytes.Equal(d.Payload(), e.Payload()) {
			t.Errorf("decode round trip differs: %+v vs %+v", d, e)
		}
	}
	if es[0].PrevHash() != "" || !strings.Contains(string(es[0].Bytes()), `"prev_hash":null`) {
		t.Errorf("genesis prev_hash: got %s", es[0].Bytes())
	}
	if es[1].PrevHash() != es[0].Hash() {
		t.Errorf("link: got %s, want %s", es[1].PrevHash(), es[0].Hash())
	}
}

func TestSealRejects(t *testing.T) {
	ok := Event{SessionID: "s", EventType: "PreToolUse", Payload: []byte(`{}`)}
	tests := []struct {
		name     string
		mutate   func(*Event)
		wantPath string
	}{
		{"bad tenant", func(e *Event) { e.TenantID = "Acme" }, "$.tenant_id"},
		{"empty session", func(e *Event) { e.SessionID = "" }, "$.session_id"},
		{"empty event type", func(e *Event) { e.EventType = "" }, "$.event_type"},
		{"unknown event type", func(e *Event) { e.EventType = "TOOL_CALL_PROPOSED" }, "$.event_type"},
		{"negative ts", func(e *Event) { e.TsUnixMs = -1 }, "$.ts_unix_ms"},
		{"array payload", func(e *Event) { e.Payload = []byte(`[1]`) }, "$.payload"},
		{"duplicate in payload", func(e *Event) { e.Payload = []byte(`{"a":{"b":1,"b":2}}`) }, "$.payload.a"},
		{"big int in payload", func(e *Event) { e.Payload = []byte(`{"id":12345678901234567890}`) }, "$.payload.id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := ok
			tt.mutate(&ev)
			_, err := Seal(Head{}, ev, Limits{})
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want *InputError", err)
			}
			if ie.Path != tt.wantPath {
				t.Errorf("got path %q, want %q (%v)", ie.Path, tt.wantPath, err)
			}
		})
	}
}

func TestParseEvent(t *testing.T) {
	ev, hasTime, err := ParseEvent([]byte(`{"session_id":"s","event_type":"SessionStart","payload":{"b":1,"a":2}}`), Limits{})
	if err != nil || hasTime || ev.TenantID != DefaultTenant || string(ev.Payload) != `{"a":2,"b":1}` {
		t.Fatalf("got %+v %v %v", ev, hasTime, err)
	}
	bad := []struct{ in, wantPath, wantMsg string }{
		{`{"event_type":"SessionStart","payload":{}}`, "$.session_id", "missing"},
		{`{"session_id":"","event_type":"SessionStart","payload":{}}`, "$.session_id", "empty"},
		{`{"session_id":1,"event_type":"SessionStart","payload":{}}`, "$.session_id", "must be a string"},
		{`{"session_id":"s","event_type":"","payload":{}}`, "$.event_type", "empty"},
		{`{"session_id":"s","event_type":"SessionStart","payload":"x"}`, "$.payload", "object"},
		{`{"session_id":"s","event_type":"SessionStart","payload":{},"ts_unix_ms":"now"}`, "$.ts_unix_ms", "integer"},
		{`{"session_id":"s","event_type":"SessionStart","payload":{},"tenant_id":"A B"}`, "$.tenant_id", "must match"},
		{`{"session_id":"s","event_type":"SessionStart","payload":{},"sesion":"x"}`, "$", "unknown field"},
		{`{"session_id":"s","session_id":"t","event_type":"SessionStart","payload":{}}`, "$", "duplicate key"},
	}
	for _, tt := range bad {
		_, _, err := ParseEvent([]byte(tt.in), Limits{})
		var ie *InputError
		if !errors.As(err, &ie) || ie.Path != tt.wantPath || !strings.Contains(ie.Msg, tt.wantMsg) {
			t.Errorf("ParseEvent(%s): got %v, want path %s and %q", tt.in, err, tt.wantPath, tt.wantMsg)
		}
	}
}

// bundleOf renders envelopes as bundle lines.
func bundleOf(es ...*Envelope) [][]byte {
	var lines [][]byte
	for _, e := range es {
		lines = append(lines, bytes.Clone(e.Bytes()))
	}
	return lines
}

func verifyLines(t *testing.T, m Mode, lines [][]byte) *Report {
	t.Helper()
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	r, err := VerifyBundle(&buf, m, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// reseal recomputes the hash of stored bytes after tampering, as an attacker
// who knows the format would.
func reseal(t *testing.T, raw []byte) []byte {
	t.Helper()
	f, ok := scanFrame(raw)
	if !ok {
		t.Fatalf("reseal: not an envelope: %s", raw)
	}
	out := bytes.Clone(raw)
	copy(out[f.hashAt+len(fieldHash):], hexString(hashWithout(out, f.hashAt, f.hashEnd)))
	return out
}

func TestVerifyTamperKinds(t *testing.T) {
	a := chainOf(t, "acme", "a", 6)
	b := chainOf(t, "acme", "b", 3)
	clean := func() [][]byte { return append(bundleOf(a...), bundleOf(b...)...) }
	tests := []struct {
		name    string
		tamper  func([][]byte) [][]byte
		mode    Mode
		session string
		seq     uint64
		kind    FaultKind
	}{
		{"byte flip in payload", func(l [][]byte) [][]byte {
			i := bytes.Index(l[3], []byte("echo 3"))
			l[3][i+5] = '9'
			return l
		}, Fast, "a", 3, HashMismatch},
		{"deleted envelope", func(l [][]byte) [][]byte { return append(l[:2:2], l[3:]...) }, Fast, "a", 3, SeqGap},
		{"reordered pair", func(l [][]byte) [][]byte { l[2], l[3] = l[3], l[2]; return l }, Fast, "a", 2, SeqReorder},
		{"duplicated envelope", func(l [][]byte) [][]byte {
			return append(l[:4:4], append([][]byte{l[3]}, l[4:]...)...)
		}, Fast, "a", 3, Duplicate},
		{"spliced from another session", func(l [][]byte) [][]byte {
			return append(l[:3:3], append([][]byte{l[7]}, l[3:]...)...)
		}, Fast, "a", 1, ForeignSession},
		{"rewritten envelope with valid hash", func(l [][]byte) [][]byte {
			l[2] = reseal(t, bytes.Replace(l[2], []byte("echo 2"), []byte("rm -rf"), 1))
			return l
		}, Fast, "a", 3, BrokenLink},
		{"genesis removed", func(l [][]byte) [][]byte { return l[1:] }, Fast, "a", 1, BadGenesis},
		{"not canonical", func(l [][]byte) [][]byte {
			l[4] = append([]byte(" "), l[4]...)
			return l
		}, Deep, "a", 4, NotCanonical},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := verifyLines(t, tt.mode, tt.tamper(clean()))
			if r.OK() {
				t.Fatal("got no fault, want one")
			}
			found := false
			for _, f := range r.Faults {
				if f.Kind == tt.kind && f.Session == tt.session && f.Seq == tt.seq {
					found = true
				}
			}
			if !found {
				t.Errorf("want %s at %s seq %d, got %v", tt.kind, tt.session, tt.seq, r.Err())
			}
			if !errors.Is(r.Err(), ErrIntegrity) || !errors.Is(r.Err(), kindErr[tt.kind]) {
				t.Errorf("errors.Is(%v, %s) = false", r.Err(), tt.kind)
			}
		})
	}
	if r := verifyLines(t, Deep, clean()); !r.OK() || len(r.Sessions) != 2 || r.Envelopes != 9 {
		t.Fatalf("clean bundle: got %+v faults %v", r, r.Err())
	}
}

func TestVerifyStoreExpectForeign(t *testing.T) {
	a := chainOf(t, "t1", "a", 2)
	b := chainOf(t, "t1", "b", 1)
	v := NewVerifier(Fast, Limits{})
	key := SessionKey{"t1", "a"}
	v.Add(a[0].Bytes(), Position{StreamSeq: 1, Expect: &key})
	v.Add(b[0].Bytes(), Position{StreamSeq: 2, Expect: &key})
	v.Add(a[1].Bytes(), Position{StreamSeq: 3, Expect: &key})
	r := v.Report()
	if len(r.Faults) != 1 || r.Faults[0].Kind != ForeignSession || r.Faults[0].StreamSeq != 2 || r.Faults[0].Session != "a" {
		t.Fatalf("got %v, want one foreign_session at stream seq 2", r.Err())
	}
}

func TestVerifyMalformedLine(t *testing.T) {
	lines := bundleOf(chainOf(t, "t1", "a", 2)...)
	lines = append(lines, []byte(`{"not":"an envelope"}`))
	r := verifyLines(t, Fast, lines)
	if len(r.Faults) != 1 || r.Faults[0].Kind != Malformed || r.Faults[0].Line != 3 {
		t.Fatalf("got %v, want malformed at line 3", r.Err())
	}
}
