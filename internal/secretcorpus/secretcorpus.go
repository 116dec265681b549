// Package secretcorpus gives tests the shared corpus of secret and
// personal-data shapes (detect/testdata/secrets.json), which every test of
// a surface that writes or shows text feeds through it, and the JSON
// escaping a host may legally apply to hide them.
package secretcorpus

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Case is one shape: a text carrying it, and the secret substring that must
// never appear in the clear.
type Case struct {
	Name   string `json:"name"`
	Text   string `json:"text"`
	Secret string `json:"secret"`
}

// Load reads the corpus at path.
func Load(path string) ([]Case, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cs []Case
	if err := json.Unmarshal(raw, &cs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cs, nil
}

// Escaped is s as the body of a JSON string with every ASCII letter and
// digit written as \u00XX and every slash as \/: what a host may send.
func Escaped(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == '/':
			b.WriteString(`\/`)
		default:
			q, _ := json.Marshal(string(r))
			b.Write(q[1 : len(q)-1])
		}
	}
	return b.String()
}
