package seal

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
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
	plain, err := Unseal(sealed, keys, "acme", "s1")
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
	if _, err := Unseal(sealed, keys, "acme", "s1"); !errors.Is(err, ErrShredded) {
		t.Fatalf("after shred: %v, want ErrShredded", err)
	}
	// A fresh store on the same directory cannot either (nothing cached).
	again, _ := OpenFileStore(keys.dir)
	if _, err := Unseal(sealed, again, "acme", "s1"); !errors.Is(err, ErrShredded) {
		t.Fatalf("after shred, reopened: %v", err)
	}
	// New values of the session get a new key.
	if _, _, err := s.Seal("acme", "s1", in); err != nil {
		t.Fatal(err)
	}
}

// TestShredSubject: values of events that name a data subject are sealed
// under the subject's key, in every session; shredding the subject erases
// them everywhere and leaves other values readable.
func TestShredSubject(t *testing.T) {
	keys, err := OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &Sealer{Keys: keys, Policy: Policy{Classes: map[string]bool{reducer.ClassSecret: true, reducer.ClassPII: true}}}
	ev := func(session, extra string) []byte {
		return []byte(`{"hook_point":"PostToolUse","session_id":"` + session + `","timestamp":"2026-11-23T10:00:00Z","host_id":"my-agent","aarts_version":"0.1"` + extra + `,"tool_result":"write to ` + email + `"}`)
	}
	a, _, _ := s.Seal("acme", "s1", ev("s1", `,"data_subject":"cust-42"`))
	b, _, _ := s.Seal("acme", "s2", ev("s2", `,"data_subject":"cust-42"`))
	other, _, _ := s.Seal("acme", "s1", ev("s1", ""))
	if !strings.Contains(string(a), `"data_subject":"cust-42"`) {
		t.Fatalf("the subject id is sealed or gone: %s", a)
	}
	kids, err := keys.Shred(Scope{Tenant: "acme", Subject: "cust-42"})
	if err != nil || len(kids) != 1 {
		t.Fatalf("shred subject: %v %v", kids, err)
	}
	for session, p := range map[string][]byte{"s1": a, "s2": b} {
		if _, err := Unseal(p, keys, "acme", session); !errors.Is(err, ErrShredded) {
			t.Errorf("a subject's value after the shred: %v", err)
		}
	}
	if plain, err := Unseal(other, keys, "acme", "s1"); err != nil || !strings.Contains(string(plain), email) {
		t.Errorf("a session-scoped value after the subject's shred: %v", err)
	}
}

// TestSealedValuesStayInTheirSession: a sealed value copied into another
// session's event never opens there (a reveal of the decoy would
// otherwise name only the decoy), and a sender cannot plant a "$sealed"
// object at all.
func TestSealedValuesStayInTheirSession(t *testing.T) {
	keys, err := OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &Sealer{Keys: keys, Policy: Policy{Classes: map[string]bool{reducer.ClassSecret: true}}}
	sealed, _, err := s.Seal("acme", "victim", secretEvent())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Unseal(sealed, keys, "acme", "victim"); err != nil {
		t.Fatalf("in its own session: %v", err)
	}
	for _, k := range [][2]string{{"acme", "decoy"}, {"other", "victim"}} {
		if _, err := Unseal(sealed, keys, k[0], k[1]); !errors.Is(err, ErrForeign) {
			t.Errorf("opened in %s/%s: %v, want ErrForeign", k[0], k[1], err)
		}
	}
	// The decoy's sender copies the reference into an event of its own.
	var ev map[string]any
	json.Unmarshal(sealed, &ev)
	ref, _ := json.Marshal(ev["tool_input"])
	planted := []byte(`{"hook_point":"PreToolUse","session_id":"decoy","timestamp":"2026-11-23T10:00:00Z","host_id":"my-agent","aarts_version":"0.1","tool_input":` + string(ref) + `}`)
	_, _, err = s.Seal("acme", "decoy", planted)
	var ie *ledger.InputError
	if !errors.As(err, &ie) || !strings.HasPrefix(ie.Path, "$.tool_input") {
		t.Fatalf("a planted sealed value: %v, want an input error at $.tool_input", err)
	}
}

// TestShredReachesHardLinks: the key file is destroyed in its own blocks,
// so a hard link made to it before the shred holds no key after it; a
// master key rotation rewraps every data key in place, so the values still
// open, and a hard link to the old master key file holds the new one.
func TestShredReachesHardLinks(t *testing.T) {
	dir := t.TempDir()
	keys, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &Sealer{Keys: keys, Policy: Policy{Classes: map[string]bool{reducer.ClassSecret: true}}}
	sealedA, _, _ := s.Seal("acme", "a", secretEvent())
	sealedB, _, _ := s.Seal("acme", "b", secretEvent())
	kidA := Refs(sealedA)[0].Kid
	pathA, _ := keys.path(kidA)
	link, masterLink := filepath.Join(t.TempDir(), "kept.key"), filepath.Join(t.TempDir(), "kept-master.key")
	if err := os.Link(pathA, link); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	if err := os.Link(filepath.Join(dir, "master.key"), masterLink); err != nil {
		t.Fatal(err)
	}
	oldMaster, _ := os.ReadFile(masterLink)
	if n, err := keys.Rotate(); err != nil || n != 2 {
		t.Fatalf("rotate: %d %v", n, err)
	}
	if now, _ := os.ReadFile(masterLink); bytes.Equal(now, oldMaster) {
		t.Error("the old master key survives the rotation in a hard link")
	}
	reopened, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for session, p := range map[string][]byte{"a": sealedA, "b": sealedB} {
		if _, err := Unseal(p, reopened, "acme", session); err != nil {
			t.Fatalf("after the rotation, session %s: %v", session, err)
		}
	}
	kept, _ := os.ReadFile(link)
	if _, err := unwrap(reopened.master, kidA, kept); err != nil {
		t.Fatalf("before the shred the link holds the key: %v", err)
	}
	if _, err := reopened.Shred(Scope{Tenant: "acme", Session: "a"}); err != nil {
		t.Fatal(err)
	}
	kept, _ = os.ReadFile(link)
	for _, m := range [][]byte{reopened.master, oldMaster} {
		if _, err := unwrap(m, kidA, kept); err == nil {
			t.Fatal("the hard link still holds the shredded key")
		}
	}
	if _, err := Unseal(sealedA, reopened, "acme", "a"); !errors.Is(err, ErrShredded) {
		t.Fatalf("after the shred: %v", err)
	}
	if _, err := Unseal(sealedB, reopened, "acme", "b"); err != nil {
		t.Fatalf("another session after the shred: %v", err)
	}
}

// TestRotationCutShortIsFinished: a rotation interrupted after some keys
// were rewrapped is finished when the store is next opened.
func TestRotationCutShortIsFinished(t *testing.T) {
	dir := t.TempDir()
	keys, _ := OpenFileStore(dir)
	s := &Sealer{Keys: keys, Policy: Policy{Classes: map[string]bool{reducer.ClassSecret: true}}}
	sealed := map[string][]byte{}
	for _, session := range []string{"a", "b", "c"} {
		sealed[session], _, _ = s.Seal("acme", session, secretEvent())
	}
	next := bytes.Repeat([]byte{7}, 32)
	os.WriteFile(filepath.Join(dir, nextMaster), next, 0o600)
	p, _ := keys.path(Refs(sealed["b"])[0].Kid)
	if err := keys.rewrap(p, Refs(sealed["b"])[0].Kid, next); err != nil {
		t.Fatal(err)
	}
	reopened, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(reopened.master, next) || fileExists(filepath.Join(dir, nextMaster)) {
		t.Fatal("the rotation was not finished")
	}
	for session, p := range sealed {
		if _, err := Unseal(p, reopened, "acme", session); err != nil {
			t.Errorf("session %s: %v", session, err)
		}
	}
}
