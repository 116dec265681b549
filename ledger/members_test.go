package ledger

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCanonicalMembers checks the one-pass member split against
// encoding/json on canonical objects.
func FuzzCanonicalMembers(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"a":"x,}]","b":{"c":[1,{"d":"\""}],"e":null},"f":[]}`,
		`{"k\"ey":true,"z":-1.5e3}`, `{"payload":{"a":[[],{}]},"session_id":"s\\"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Canonicalize(data, Limits{})
		if err != nil || c[0] != '{' {
			return
		}
		got, err := canonicalMembers(c)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(c, &want); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d members, want %d", c, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("%s: member %q = %s, want %s", c, k, got[k], v)
			}
		}
	})
}
