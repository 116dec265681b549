package mcpproxy

import (
	"io"
	"strings"
	"testing"
)

// TestReadInitialize: the stdio proxy reads what a client declares from
// its initialize (roots only when declared: the SDK's own decoding cannot
// tell), and the client's input reaches the proxy whole, that message
// first; anything that is not an initialize it can read declares nothing
// and is passed on as it came.
func TestReadInitialize(t *testing.T) {
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true}},"clientInfo":{"name":"c","version":"1"}}}` + "\n"
	const rest = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	for _, c := range []struct {
		name, input                    string
		sampling, elicitURL, roots, ok bool
	}{
		{"all", initialize + rest, true, true, true, true},
		{"no roots", strings.Replace(initialize, `,"roots":{"listChanged":true}`, "", 1) + rest, true, true, false, true},
		{"not initialize", rest + initialize, false, false, false, false},
		{"not JSON", "hello\n" + rest, false, false, false, false},
		{"no newline", strings.TrimSuffix(initialize, "\n"), true, true, true, true},
		{"oversized", strings.Repeat("x", MaxMessageBytes+10) + "\n" + rest, false, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			caps, r, err := ReadInitialize(strings.NewReader(c.input))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil || string(got) != c.input {
				t.Fatalf("the input passed on differs (%d bytes of %d; %v)", len(got), len(c.input), err)
			}
			if (caps != nil) != c.ok {
				t.Fatalf("capabilities %+v, want read %v", caps, c.ok)
			}
			if caps == nil {
				return
			}
			if (caps.Sampling != nil) != c.sampling || (caps.Elicitation != nil && caps.Elicitation.URL != nil) != c.elicitURL {
				t.Errorf("sampling %v, elicitation %+v", caps.Sampling, caps.Elicitation)
			}
			if (caps.RootsV2 != nil) != c.roots || (c.roots && !caps.RootsV2.ListChanged) {
				t.Errorf("roots %+v, want declared %v", caps.RootsV2, c.roots)
			}
		})
	}
	if _, _, err := ReadInitialize(strings.NewReader("")); err != io.EOF {
		t.Errorf("no input: %v, want EOF", err)
	}
}
