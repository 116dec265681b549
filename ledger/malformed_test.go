package ledger

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestMalformedLinesNamedWhere: a line that is no envelope is reported as
// rejected with its line, and with its session and seq where they can be
// read; never as seq 0 of no session.
func TestMalformedLinesNamedWhere(t *testing.T) {
	a := chainOf(t, "t1", "a", 3)
	dup := append([]byte(`{"v":1,`), a[2].Bytes()[1:]...) // t1/a seq 2, a duplicate key
	tests := []struct {
		name     string
		line     []byte
		wantText string // what the fault's text starts with
		wantSeq  bool   // whether its JSON has a seq
		wantKey  SessionKey
	}{
		{"not json", []byte(`not json at all`), "line 3: malformed: rejected", false, SessionKey{}},
		{"no envelope", []byte(`{"not":"an envelope"}`), "line 3: malformed: rejected", false, SessionKey{}},
		{"duplicate key", dup, "t1/a seq 2: malformed: rejected", true, SessionKey{"t1", "a"}},
	}
	for _, m := range []Mode{Fast, Deep} {
		for _, tc := range tests {
			t.Run(m.String()+"/"+tc.name, func(t *testing.T) {
				r := verifyLines(t, m, append(bundleOf(a[:2]...), tc.line))
				if len(r.Faults) != 1 {
					t.Fatalf("got %v, want one fault", r.Err())
				}
				f := r.Faults[0]
				if f.Kind != Malformed || f.Line != 3 || (SessionKey{f.Tenant, f.Session}) != tc.wantKey {
					t.Errorf("got %+v, want malformed at line 3 of %v", f, tc.wantKey)
				}
				if got := f.Error(); !strings.HasPrefix(got, tc.wantText) || (tc.wantSeq && !strings.HasSuffix(got, "[line 3]")) {
					t.Errorf("got %q, want it to start %q and name line 3", got, tc.wantText)
				}
				b, err := json.Marshal(r)
				if err != nil {
					t.Fatal(err)
				}
				var back struct {
					Faults []map[string]any `json:"faults"`
				}
				json.Unmarshal(b, &back)
				seq, ok := back.Faults[0]["seq"]
				if ok != tc.wantSeq || (ok && seq != 2.0) || back.Faults[0]["line"] != 3.0 {
					t.Errorf("got JSON %s, want line 3 and seq %v", b, tc.wantSeq)
				}
			})
		}
	}
}

// TestMalformedMessageNamedWhere: a stored message that is no envelope is
// named by its session and stream sequence, with no seq.
func TestMalformedMessageNamedWhere(t *testing.T) {
	key := SessionKey{"t1", "a"}
	v := NewVerifier(Deep, Limits{})
	v.Add([]byte(`{"broken`), Position{StreamSeq: 7, Expect: &key})
	r := v.Report()
	if len(r.Faults) != 1 {
		t.Fatalf("got %v, want one fault", r.Err())
	}
	if got, want := r.Faults[0].Error(), "t1/a: malformed: rejected"; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "[stream seq 7]") {
		t.Errorf("got %q, want it to start %q and name stream seq 7", got, want)
	}
	if b, _ := json.Marshal(r.Faults[0]); bytes.Contains(b, []byte(`"seq"`)) {
		t.Errorf("got JSON %s, want no seq", b)
	}
}
