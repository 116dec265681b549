package seal

import (
	"strings"
	"testing"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/reducer"
)

// TestBareSecretIsSealed (issue 37): an AWS secret access key with no name
// beside it, in a tool's input or its result (after a JSON escape such as
// \n, or \u-escaped whole), is sealed like any named secret: it is in the
// record only encrypted, so a shred erases it.
func TestBareSecretIsSealed(t *testing.T) {
	const bare = "JtL6KKKYEoTpPfNinZZqR5PqNg0zN4UEFuTSGti3"
	escaped := `\u004a\u0074L6KKKYEoTpPfNinZZqR5PqNg0zN4UEFuTSGti3`
	for name, members := range map[string]string{
		"input":          `"tool_input":{"command":"echo ` + bare + ` > ~/.aws/key"}`,
		"result":         `"tool_input":{"command":"cat key.txt"},"tool_response":{"stdout":"` + bare + `\n"}`,
		"after_newline":  `"tool_input":{"command":"cat creds"},"tool_response":{"stdout":"AKIAZ3XQ7MDKQ2B4LT9P\n` + bare + `"}`,
		"escaped_result": `"tool_input":{"command":"cat key.txt"},"tool_response":{"stdout":"` + escaped + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			keys, err := OpenFileStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			s := &Sealer{Keys: keys, Policy: Policy{Classes: map[string]bool{reducer.ClassSecret: true}}}
			in := []byte(`{"hook_point":"PostToolUse","session_id":"s1","timestamp":"2026-12-02T10:00:00Z","host_id":"my-agent","aarts_version":"0.1","tool_name":"shell","tool_name_native":"Bash","artifacts":[],` + members + `}`)
			if !s.Reencodes(in) {
				t.Fatal("Reencodes is false: the cheap gate lets the bare key through unsealed")
			}
			sealed, n, err := s.Seal("acme", "s1", in)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 || strings.Contains(string(sealed), bare[8:]) || !strings.Contains(string(Render(sealed)), "‹sealed:bare_aws_secret›") {
				t.Fatalf("sealed %d values: %s", n, sealed)
			}
			want, _ := ledger.Canonicalize(in, ledger.Limits{})
			if plain, err := Unseal(sealed, keys, "acme", "s1"); err != nil || string(plain) != string(want) {
				t.Fatalf("unseal: %v\n got %s\nwant %s", err, plain, want)
			}
		})
	}
}
