package ledger

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDecodeExact: members are matched by their exact names at every
// level a struct describes; maps, interfaces and raw JSON hold anything.
func TestDecodeExact(t *testing.T) {
	type inner struct {
		Decision string `json:"decision"`
	}
	type rec struct {
		Verdict inner            `json:"verdict"`
		List    []inner          `json:"list"`
		ByName  map[string]inner `json:"by_name"`
		Free    map[string]any   `json:"free"`
		Raw     json.RawMessage  `json:"raw"`
		Ptr     *inner           `json:"ptr"`
	}
	ok := `{"verdict":{"decision":"deny"},"list":[{"decision":"a"}],"by_name":{"x":{"decision":"b"}},"free":{"Decision":1,"deciſion":2},"raw":{"ANY":[1]},"ptr":{"decision":"c"}}`
	var r rec
	if err := DecodeExact([]byte(ok), &r); err != nil || r.Verdict.Decision != "deny" || r.Ptr.Decision != "c" {
		t.Fatalf("exact record: %v %+v", err, r)
	}
	for _, c := range []struct{ in, where string }{
		{`{"verdict":{"Decision":"allow"}}`, `$.verdict: unknown member "Decision"`},
		{`{"verdict":{"deciſion":"allow"}}`, `$.verdict: unknown member "deciſion"`},
		{`{"Verdict":{"decision":"allow"}}`, `$: unknown member "Verdict"`},
		{`{"list":[{"decision":"a"},{"DECISION":"b"}]}`, `$.list[1]: unknown member "DECISION"`},
		{`{"by_name":{"x":{"Decision":"b"}}}`, `$.by_name.x: unknown member "Decision"`},
		{`{"ptr":{"\u212aey":1}}`, `unknown`},
	} {
		var r rec
		err := DecodeExact([]byte(c.in), &r)
		if err == nil || !strings.Contains(err.Error(), c.where) {
			t.Errorf("%s: got %v, want an error naming %s", c.in, err, c.where)
		}
	}
}

// FuzzDecodeExact: whatever the bytes, DecodeExact returns (no panic), and
// what it accepts has every member named exactly.
func FuzzDecodeExact(f *testing.F) {
	f.Add([]byte(`{"verdict":{"decision":"deny"},"list":[{"decision":"a"}],"m":{"k":{"decision":"x"}},"raw":{"A":"\\"}"}}`))
	f.Add([]byte(`{"verdict":{"Decision":"allow"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		type inner struct {
			Decision string `json:"decision"`
		}
		var v struct {
			Verdict inner            `json:"verdict"`
			List    []inner          `json:"list"`
			M       map[string]inner `json:"m"`
			Raw     json.RawMessage  `json:"raw"`
		}
		if DecodeExact(b, &v) != nil {
			return
		}
		var tree map[string]any
		if json.Unmarshal(b, &tree) != nil {
			return
		}
		for k := range tree {
			if k != "verdict" && k != "list" && k != "m" && k != "raw" {
				t.Fatalf("accepted member %q", k)
			}
		}
	})
}
