package seal

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/reducer"
)

// Secrets of the shapes the detectors know; none is a live credential.
const (
	awsSecret   = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	githubToken = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
	email       = "jane.doe@example.com"
	privateKey  = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
)

func secretEvent() []byte {
	return []byte(`{"hook_point":"PreToolUse","session_id":"s1","timestamp":"2026-11-23T10:00:00Z","host_id":"my-agent","aarts_version":"0.1","tool_name":"shell","tool_name_native":"Bash","artifacts":[],` +
		`"tool_input":{"command":"AWS_SECRET_ACCESS_KEY=` + awsSecret + ` curl -H 'Authorization: token ` + githubToken + `' https://api.github.com/user","description":"mail ` + email + `","key":` + quote(privateKey) + `}}`)
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, "\n", `\n`) + `"` }

func TestSealUnsealShred(t *testing.T) {
	keys, err := OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &Sealer{Keys: keys, Policy: Policy{Classes: map[string]bool{reducer.ClassSecret: true, reducer.ClassPII: true}}}
	in := secretEvent()
	sealed, n, err := s.Seal("acme", "s1", in)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{awsSecret, githubToken, email, "MIIEowIBAAKCAQEA"} {
		if strings.Contains(string(sealed), secret) {
			t.Errorf("sealed payload holds %q: %s", secret, sealed)
		}
	}
	if n != 3 || !Has(sealed) || !strings.Contains(string(sealed), `"hook_point":"PreToolUse"`) {
		t.Fatalf("sealed %d values: %s", n, sealed)
	}
	want, _ := ledger.Canonicalize(in, ledger.Limits{})
	plain, err := Unseal(sealed, keys)
	if err != nil || string(plain) != string(want) {
		t.Fatalf("unseal: %v\n got %s\nwant %s", err, plain, want)
	}
	shown := string(Render(sealed))
	if !strings.Contains(shown, "‹sealed:github_token›") || !strings.Contains(shown, "curl -H 'Authorization: token ‹sealed:github_token›'") || strings.Contains(shown, githubToken) {
		t.Fatalf("render: %s", shown)
	}
	// Nothing to seal: the payload comes back as it was, unparsed.
	plainEvent := []byte(`{"hook_point":"SessionStart","session_id":"s1","timestamp":"2026-11-23T10:00:00Z","host_id":"my-agent","aarts_version":"0.1"}`)
	if out, n, _ := s.Seal("acme", "s1", plainEvent); n != 0 || string(out) != string(plainEvent) {
		t.Fatalf("nothing to seal: %d %s", n, out)
	}
	kids, err := keys.Shred(Scope{Tenant: "acme", Session: "s1"})
	if err != nil || len(kids) != 1 {
		t.Fatalf("shred: %v %v", kids, err)
	}
	if _, err := Unseal(sealed, keys); !errors.Is(err, ErrShredded) {
		t.Fatalf("after shred: %v, want ErrShredded", err)
	}
	// A fresh store on the same directory cannot either (nothing cached).
	again, _ := OpenFileStore(keys.dir)
	if _, err := Unseal(sealed, again); !errors.Is(err, ErrShredded) {
		t.Fatalf("after shred, reopened: %v", err)
	}
	// New values of the session get a new key.
	if _, _, err := s.Seal("acme", "s1", in); err != nil {
		t.Fatal(err)
	}
}
