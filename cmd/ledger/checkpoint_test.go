package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/ledger"
)

// TestCheckpointCatchesWhatChainsCannot: a truncated tail and a suffix
// rewritten with valid hashes both verify as chains; against a checkpoint
// taken before, each is a fault naming the session. A checkpoint whose
// bytes were edited fails its signature.
func TestCheckpointCatchesWhatChainsCannot(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d")
	events, err := os.ReadFile("../../fixtures/demo/demo.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, string(events), "--data", data, "append"); code != 0 {
		t.Fatal(errs)
	}
	cp := filepath.Join(dir, "cp.note")
	if code, _, errs := run(t, "", "--data", data, "checkpoint", "-o", cp); code != 0 {
		t.Fatal(errs)
	}
	pub := filepath.Join(data, "keys", "checkpoint-ed25519.pub.pem")
	if code, out, errs := run(t, "", "--data", data, "verify", "--checkpoint", cp, "--pubkey", pub); code != 0 {
		t.Fatalf("intact store: exit %d %s %s", code, out, errs)
	}
	bundle := filepath.Join(dir, "b.ndjson")
	if code, _, errs := run(t, "", "--data", data, "export", "-o", bundle); code != 0 {
		t.Fatal(errs)
	}
	raw, _ := os.ReadFile(bundle)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	// The last line of the first session, and the session it belongs to.
	last := 0
	first, err := ledger.Decode([]byte(lines[0]), ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		if e, _ := ledger.Decode([]byte(l), ledger.Limits{}); e != nil && e.Key() == first.Key() {
			last = i
		}
	}
	prev, _ := ledger.Decode([]byte(lines[last-1]), ledger.Limits{})
	forged, err := ledger.Seal(prev.Head(), ledger.Event{TenantID: prev.TenantID(), SessionID: prev.SessionID(), EventType: "SessionEnd",
		TsUnixMs: prev.TsUnixMs() + 1, Payload: []byte(`{"reason":"nothing to see"}`)}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		lines []string
		kind  string
	}{
		{"truncated", append(append([]string{}, lines[:last]...), lines[last+1:]...), "truncated"},
		{"rewritten", append(append(append([]string{}, lines[:last]...), string(bytes.TrimSpace(forged.Bytes()))), lines[last+1:]...), "rewritten"},
	} {
		path := filepath.Join(dir, c.name+".ndjson")
		os.WriteFile(path, []byte(strings.Join(c.lines, "\n")+"\n"), 0o644)
		// Without the checkpoints it carries, the chains alone verify:
		// only a limit says what that does not prove.
		var bare []string
		for _, l := range c.lines {
			if !strings.Contains(l, `"event_type":"Checkpoint"`) {
				bare = append(bare, l)
			}
		}
		barePath := filepath.Join(dir, c.name+"-bare.ndjson")
		os.WriteFile(barePath, []byte(strings.Join(bare, "\n")+"\n"), 0o644)
		if code, out, _ := run(t, "", "verify", "--deep", "--bundle", barePath); code != 0 || !strings.Contains(out, "LIMIT the bundle carries no checkpoint") {
			t.Fatalf("%s without its checkpoints: the chains alone should verify, with a limit: exit %d %s", c.name, code, out)
		}
		// The bundle is held to the checkpoint it carries, with no key
		// given at all.
		if code, out, _ := run(t, "", "verify", "--deep", "--bundle", path); code != 1 || !strings.Contains(out, c.kind) || !strings.Contains(out, "the checkpoint the bundle carries") {
			t.Fatalf("%s: the checkpoint the bundle carries should catch it: exit %d %s", c.name, code, out)
		}
		if out, err := python(t, "bundle", path); err == nil || !strings.Contains(out, c.kind) || !strings.Contains(out, "the checkpoint the bundle carries") {
			t.Fatalf("%s: verify.py should hold the bundle to the checkpoint it carries: %v\n%s", c.name, err, out)
		}
		if out, err := python(t, "bundle", barePath); err != nil || !strings.Contains(out, "LIMIT the bundle carries no checkpoint") {
			t.Fatalf("%s without its checkpoints: verify.py %v\n%s", c.name, err, out)
		}
		code, out, _ := run(t, "", "verify", "--deep", "--bundle", path, "--checkpoint", cp, "--pubkey", pub)
		if code != 1 || !strings.Contains(out, c.kind) || !strings.Contains(out, first.SessionID()) {
			t.Fatalf("%s: exit %d:\n%s", c.name, code, out)
		}
		// From stdin, read once, the same faults: chains, records and the
		// checkpoint are checked in one pass.
		code, fromStdin, _ := run(t, strings.Join(c.lines, "\n")+"\n", "verify", "--deep", "--bundle", "-", "--checkpoint", cp, "--pubkey", pub)
		if code != 1 || fromStdin != out {
			t.Fatalf("%s from stdin: exit %d:\n%s\nwant:\n%s", c.name, code, fromStdin, out)
		}
	}
	// A Checkpoint record that says another size beside its own note (its
	// chain resealed after the edit): bad_record, in ledger verify and
	// verify.py.
	var misstated []string
	edited1 := false
	for _, l := range lines {
		if !edited1 && strings.Contains(l, `"event_type":"Checkpoint"`) {
			l, edited1 = regexp.MustCompile(`"size":\d+`).ReplaceAllString(l, `"size":999`), true
		}
		misstated = append(misstated, l)
	}
	if !edited1 {
		t.Fatal("the export carries no Checkpoint record")
	}
	misPath := filepath.Join(dir, "misstated.ndjson")
	os.WriteFile(misPath, []byte(strings.Join(resealAll(t, misstated), "\n")+"\n"), 0o644)
	if code, out, _ := run(t, "", "verify", "--bundle", misPath); code != 1 || !strings.Contains(out, "bad_record") || !strings.Contains(out, "size 999") {
		t.Errorf("a Checkpoint record misstating its note's size: exit %d\n%s", code, out)
	}
	if out, err := python(t, "bundle", misPath); err == nil || !strings.Contains(out, "bad_record") {
		t.Errorf("verify.py took a Checkpoint record misstating its note's size: %v\n%s", err, out)
	}

	note, _ := os.ReadFile(cp)
	edited := filepath.Join(dir, "edited.note")
	os.WriteFile(edited, bytes.Replace(note, []byte(first.SessionID()), []byte(first.SessionID()+"x"), 1), 0o644)
	if code, _, errs := run(t, "", "verify", "--bundle", bundle, "--checkpoint", edited, "--pubkey", pub); code != 1 || !strings.Contains(errs, "signature") {
		t.Fatalf("edited checkpoint: exit %d %s", code, errs)
	}
	if code, _, _ := run(t, "", "verify", "--bundle", bundle, "--checkpoint", cp); code != 2 {
		t.Fatal("--checkpoint without --pubkey should be a usage error")
	}
}
