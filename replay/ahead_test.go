package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// TestReadAheadIsTheWholeDecode replays every recording under its own
// manifest and under a looser one that changes verdicts (so that the
// tracks part), once recognising replayed verdicts by their members and
// once decoding every recorded verdict whole: the reports must be the same
// bytes.
func TestReadAheadIsTheWholeDecode(t *testing.T) {
	run := func(whole bool, manifest string) []byte {
		t.Helper()
		decodeEveryVerdict = whole
		defer func() { decodeEveryVerdict = false }()
		var reports []*SessionReport
		for mf, chains := range recorded(t) {
			m := mf
			if manifest != "" {
				m = manifest
			}
			rs, err := RunExact(context.Background(), Chains(chains), constant(decider(t, "", m)), 1)
			if err != nil {
				t.Fatal(err)
			}
			reports = append(reports, rs...)
		}
		out, err := json.Marshal(NewReport(reports, ""))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, manifest := range []string{"", "coding-agent-loose.json"} {
		fast, whole := run(false, manifest), run(true, manifest)
		if !bytes.Equal(fast, whole) {
			t.Errorf("manifest %q: read ahead\n%s\ndecoded whole\n%s", manifest, fast, whole)
		}
		if manifest != "" && !bytes.Contains(fast, []byte(`"field":"decision"`)) {
			t.Errorf("manifest %q changed no decision: the parted tracks were not tried", manifest)
		}
	}
}

// TestReadAheadRefuses: a recorded verdict the read-ahead cannot take as
// a sealer writes it is left to the whole decode.
func TestReadAheadRefuses(t *testing.T) {
	for _, p := range []string{
		`{"for_seq":1,"for_seq":1}`,                           // a twin
		`{"hook_point":"x","for_seq":1}`,                      // out of order
		`{"enforced":"yes","for_seq":1}`,                      // not a boolean
		`{"for_seq":1.0}`,                                     // not an integer
		`{"for_seq": 1}`,                                      // not canonical
		`{"aarm_decision":"ALLOW","hook_point":"PreToolUse"}`, // no for_seq
	} {
		if a, ok := readAhead([]byte(p), 2, nil); ok {
			t.Errorf("readAhead(%s) = %+v, want refused", p, a)
		}
	}
	a, ok := readAhead([]byte(`{"enforced":false,"for_seq":7,"inherited":{"a":1},"receipt":{"v":2}}`), 8, nil)
	if !ok || a.context.ForSeq != 7 || a.context.IsEnforced() || string(a.context.Inherited) != `{"a":1}` || string(a.context.Receipt) != `{"v":2}` {
		t.Fatalf("readAhead = %+v, %v", a, ok)
	}
	// Only the unjudged members may differ.
	const rec = `{"enforced":false,"for_hash":"a","for_seq":7,"inherited":{"a":1},"policy_digest":"p","receipt":{"v":2},"sig":{"k":1}}`
	r, _ := readAhead([]byte(rec), 8, nil)
	for _, tt := range []struct {
		replayed string
		want     bool
	}{
		{`{"enforced":false,"for_hash":"b","for_seq":7,"inherited":{"a":1},"policy_digest":"q"}`, true},
		{`{"enforced":false,"for_seq":7,"inherited":{"a":1}}`, true},
		{`{"enforced":true,"for_hash":"a","for_seq":7,"inherited":{"a":1},"policy_digest":"p"}`, false},
		{`{"for_hash":"a","for_seq":7,"inherited":{"a":1},"policy_digest":"p"}`, false},
		{`{"enforced":false,"for_seq":7,"inherited":{"a":2}}`, false},
		{`{"enforced":false,"for_seq":7,"inherited":{"a":1},"x":1}`, false},
		{`{"enforced":false,"for_seq":7,"inherited":{"a":1} }`, false},
	} {
		digest, ok := r.same([]byte(tt.replayed))
		if ok != tt.want || ok && digest != "p" {
			t.Errorf("recorded %s, replayed %s: same = %q, %v, want %v", rec, tt.replayed, digest, ok, tt.want)
		}
	}
}
