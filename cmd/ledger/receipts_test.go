package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/receipt"
)

func TestVerifyReceiptsWithPubkey(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d")
	st, err := store.Open(context.Background(), store.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(context.Background(), "", policy.DefaultManifest())
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := receipt.GenerateKey()
	key, _ := receipt.ParsePrivateKey(keyPEM)
	d := decide.NewDecider(p)
	d.Signer = receipt.NewSigner(key)
	pub := filepath.Join(dir, "pub.pem")
	os.WriteFile(pub, d.Signer.PublicKeyPEM(), 0o644)
	e, err := engine.New(d, st)
	if err != nil {
		t.Fatal(err)
	}
	for i, cmd := range []string{"ls", "rm -rf /"} {
		ts := time.Date(2026, 11, 22, 9, 0, i, 0, time.UTC).Format(time.RFC3339)
		ev := `{"hook_point":"PreToolUse","session_id":"r1","timestamp":"` + ts + `","host_id":"claude-code","aarts_version":"0.1","turn_id":"t","tool_name":"shell","tool_name_native":"Bash","artifacts":[],"tool_input":{"command":"` + cmd + `"}}`
		if _, err := e.Decide(context.Background(), "", []byte(ev)); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	if code, out, errs := run(t, "", "--data", data, "verify", "--pubkey", pub); code != 0 || !strings.Contains(out, "OK: 4 envelopes") {
		t.Fatalf("store: exit %d: %s %s", code, out, errs)
	}
	bundle := filepath.Join(dir, "b.ndjson")
	run(t, "", "--data", data, "export", "-o", bundle)
	raw, _ := os.ReadFile(bundle)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	// Turn the recorded deny into an allow, resealing the hash as a forger
	// would: the chain then breaks at the next link only if there is one,
	// but the receipt never verifies.
	lines[3] = reseal(t, strings.Replace(lines[3], `"decision":"deny"`, `"decision":"allow"`, 1))
	forged := filepath.Join(dir, "forged.ndjson")
	os.WriteFile(forged, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	code, out, _ := run(t, "", "verify", "--bundle", forged, "--pubkey", pub)
	if code != 1 || !strings.Contains(out, "default/r1 seq 3: bad_signature") {
		t.Fatalf("forged verdict: exit %d: %s", code, out)
	}
	if code, out, _ := run(t, strings.Join(lines, "\n")+"\n", "verify", "--bundle", "-", "--pubkey", pub); code != 1 || !strings.Contains(out, "bad_signature") {
		t.Fatalf("forged verdict on stdin: exit %d: %s", code, out)
	}
	if code, out, _ := run(t, "", "verify", "--bundle", forged); code != 0 {
		t.Fatalf("without --pubkey the resealed tail verifies as a chain (exit %d: %s); the receipt is what catches it", code, out)
	}
}
