package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/receipt"
)

const fixtureKey = "../../fixtures/keys/fixture-ed25519.pub.pem"

// TestExportOCSF: a shipped recording exported from the store and from its
// bundle gives the same events, one JSON object per line, each with its
// attestation; a tampered bundle is refused and nothing is written, and so
// is a forged one whose chain was rebuilt (its records' signatures fail),
// and the engine's records are never exported without a key to check them.
func TestExportOCSF(t *testing.T) {
	const rec = "../../fixtures/sessions/coding-agent/host-claude-code.ndjson"
	data := filepath.Join(t.TempDir(), "d")
	if code, _, errs := run(t, "", "--data", data, "import", rec); code != 0 {
		t.Fatal(errs)
	}
	if code, out, errs := run(t, "", "--data", data, "--format", "ocsf", "export"); code != 2 || out != "" || !strings.Contains(errs, "--pubkey") {
		t.Fatalf("records without a key: exit %d %q %s", code, out, errs)
	}
	code, fromStore, errs := run(t, "", "--data", data, "--format", "ocsf", "export", "--session", "host-claude-code", "--pubkey", fixtureKey)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, fromBundle, errs := run(t, "", "--format", "ocsf", "export", "--bundle", rec, "--session", "host-claude-code", "--pubkey", fixtureKey)
	if code != 0 || fromBundle != fromStore {
		t.Fatalf("from the bundle: exit %d %s; same as from the store: %v", code, errs, fromBundle == fromStore)
	}
	// A session of another tenant (or none) is a mistake, not an empty
	// export.
	for _, src := range [][]string{{"--data", data}, {"--bundle", rec}} {
		args := append([]string{"--format", "ocsf", "export", "--session", "host-claude-code", "--tenant", "acme", "--pubkey", fixtureKey}, src...)
		if code, out, errs := run(t, "", args...); code != 2 || out != "" || !strings.Contains(errs, "no session acme/host-claude-code") {
			t.Fatalf("%v: exit %d %q %s", src, code, out, errs)
		}
	}
	if code, _, errs := run(t, "", "--data", data, "export", "--session", "nope"); code != 2 || !strings.Contains(errs, "no session default/nope") {
		t.Fatalf("bundle export of no session: exit %d %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(fromStore), "\n")
	classes := map[float64]int{}
	for _, l := range lines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if atts, _ := ev["attestation_list"].([]any); len(atts) == 0 {
			t.Fatalf("no attestation: %s", l)
		}
		classes[ev["class_uid"].(float64)]++
	}
	for _, c := range []float64{1007, 1001, 4002, 6003, 2004} {
		if classes[c] == 0 {
			t.Errorf("no class %v event: %v", c, classes)
		}
	}

	raw, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	tampered := filepath.Join(t.TempDir(), "tampered.ndjson")
	os.WriteFile(tampered, []byte(strings.Replace(string(raw), `"decision":"deny"`, `"decision":"allow"`, 1)), 0o644)
	out := filepath.Join(t.TempDir(), "out.ndjson")
	code, stdout, errs := run(t, "", "--format", "ocsf", "export", "--bundle", tampered, "-o", out, "--pubkey", fixtureKey)
	if code != 1 || !strings.Contains(errs, "refused") || stdout != "" {
		t.Fatalf("tampered bundle: exit %d %q %s", code, stdout, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a refused export left %s", out)
	}
	// Forged: denials turned into allows and every hash rebuilt. The
	// chain verifies; the signatures do not.
	forgedLines := strings.Split(strings.TrimSpace(strings.ReplaceAll(string(raw), `"decision":"deny"`, `"decision":"allow"`)), "\n")
	forged := filepath.Join(t.TempDir(), "forged.ndjson")
	os.WriteFile(forged, []byte(strings.Join(resealAll(t, forgedLines), "\n")+"\n"), 0o644)
	if code, _, _ := run(t, "", "verify", "--deep", "--bundle", forged); code != 0 {
		t.Fatalf("the forged chain should verify as a chain (exit %d)", code)
	}
	code, stdout, errs = run(t, "", "--format", "ocsf", "export", "--bundle", forged, "--pubkey", fixtureKey)
	if code != 1 || !strings.Contains(errs, "bad_signature") || stdout != "" {
		t.Fatalf("forged bundle: exit %d %q %s", code, stdout, errs)
	}
}

// TestTailOCSF follows a store as OCSF: events appear as envelopes are
// stored, each hook event with its verdict folded in.
func TestTailOCSF(t *testing.T) {
	srv, out, finish := startTail(t, "--format", "ocsf", "--pubkey", fixtureKey)
	f, err := os.Open("../../fixtures/sessions/coding-agent/destructive-commands.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var chain []*ledger.Envelope
	if err := ledger.ReadLines(f, ledger.Limits{}, func(line []byte, n int) error {
		e, err := ledger.Decode(line, ledger.Limits{})
		chain = append(chain, e)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	appendUntil(t, srv, out, "acme", "probe", "SessionEnd", `"chain_uid":"acme/probe"`)
	if _, err := srv.Import(context.Background(), [][]*ledger.Envelope{chain}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(out.String(), `"class_uid":2004`) || strings.Count(out.String(), "\n") < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("tail --format ocsf: %q", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	finish()
	if !strings.Contains(out.String(), `"disposition":"Blocked"`) || !strings.Contains(out.String(), `"chain_uid":"default/cleanup-gone-wrong"`) {
		t.Fatalf("tail output: %s", out.String())
	}
}

// TestExportOCSFBundleKeys: without --pubkey, a bundle holding the
// engine's records is checked with the data directory's key (an export
// of this machine's record), and a bundle of hook events alone (README's
// demo, on a machine whose engine has run) is exported as recorded, said
// on stderr; with --pubkey, its events must be judged, and are refused.
func TestExportOCSFBundleKeys(t *testing.T) {
	data := filepath.Join(t.TempDir(), "d")
	_, pub := receipt.KeyFiles(data, receipt.KeyRecords)
	raw, err := os.ReadFile(fixtureKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(pub), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	const demo = "../../fixtures/demo/demo.bundle.ndjson"
	code, out, errs := run(t, "", "--data", data, "--format", "ocsf", "export", "--bundle", demo)
	if code != 0 || strings.Count(out, "\n") == 0 || !strings.Contains(errs, "hook events only") {
		t.Fatalf("the demo bundle with the data directory's key about: exit %d, %d lines, %s", code, strings.Count(out, "\n"), errs)
	}
	if code, out, errs := run(t, "", "--data", data, "--format", "ocsf", "export", "--bundle", demo, "--pubkey", fixtureKey); code != 1 || out != "" || !strings.Contains(errs, "unjudged_events") {
		t.Fatalf("the demo bundle with --pubkey: exit %d %q %s", code, out, errs)
	}
	const rec = "../../fixtures/sessions/coding-agent/host-claude-code.ndjson"
	if code, out, errs := run(t, "", "--data", data, "--format", "ocsf", "export", "--bundle", rec); code != 0 || out == "" || errs != "" {
		t.Fatalf("a bundle of the engine's records with the data directory's key: exit %d %s", code, errs)
	}
}
