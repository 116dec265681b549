package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/receipt"
)

// TestProofsAndWitness (issue 23): checkpoints commit to a log that only
// grows. Inclusion proofs of an envelope and of a session's head, and a
// consistency proof between two checkpoints, verify with the shipped
// Python verifier; a checkpoint taken right after another (nothing
// appended between) is consistent with it; the witness cosigns each in
// turn and refuses a fork of the same size, a smaller size, and a larger
// one without a proof; a Reveal triggers a checkpoint, and a bundle whose
// Reveal was cut off fails against it in ledger verify and verify.py.
func TestProofsAndWitness(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d")
	if code, _, errs := run(t, events([]string{"s-1", "s-2", "s-3"}, 13), "--data", data, "append"); code != 0 {
		t.Fatal(errs)
	}
	cp := func(name string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if code, _, errs := run(t, "", "--data", data, "checkpoint", "-o", path); code != 0 {
			t.Fatalf("checkpoint: %s", errs)
		}
		return path
	}
	cp1, cp1b := cp("cp1.note"), cp("cp1b.note")
	if code, _, errs := run(t, events([]string{"s-2", "s-4"}, 6), "--data", data, "append"); code != 0 {
		t.Fatal(errs)
	}
	cp2 := cp("cp2.note")
	cpKey := filepath.Join(data, "keys", "checkpoint-ed25519.pub.pem")
	prove := func(name string, args ...string) string {
		t.Helper()
		code, out, errs := run(t, "", append([]string{"--data", data, "prove"}, args...)...)
		if code != 0 {
			t.Fatalf("prove %v: exit %d %s", args, code, errs)
		}
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(out), 0o600)
		return path
	}
	proofs := map[string]string{
		"inclusion": prove("inc.json", "inclusion", "--checkpoint", cp2, "--tenant", "acme", "--session", "s-2", "--seq", "1"),
		"head":      prove("head.json", "inclusion", "--checkpoint", cp1, "--tenant", "acme", "--session", "s-3"),
		"prefix":    prove("cons.json", "consistency", "--old", cp1b, "--new", cp2),
		"next":      prove("next.json", "consistency", "--old", cp1, "--new", cp1b),
	}
	for name, p := range proofs {
		kind := "inclusion"
		if name == "prefix" || name == "next" {
			kind = "consistency"
		}
		if out, err := python(t, kind, "--checkpoint-pubkey", cpKey, p); err != nil || !strings.Contains(out, "OK") {
			t.Errorf("verify.py %s %s: %v\n%s", kind, name, err, out)
		}
	}
	// The proofs fail when anything in them changes.
	raw, _ := os.ReadFile(proofs["inclusion"])
	var inc InclusionOutput
	json.Unmarshal(raw, &inc)
	// 19 appended envelopes and the records of the two checkpoints before.
	if inc.TreeSize != 21 || len(inc.Path) == 0 {
		t.Fatalf("inclusion proof: %+v", inc.InclusionProof)
	}
	inc.Path[0] = inc.Path[len(inc.Path)-1]
	if len(inc.Path) == 1 {
		inc.Index++
	}
	bad, _ := json.Marshal(inc)
	os.WriteFile(filepath.Join(dir, "bad.json"), bad, 0o600)
	if out, err := python(t, "inclusion", "--checkpoint-pubkey", cpKey, filepath.Join(dir, "bad.json")); err == nil {
		t.Errorf("a changed audit path verifies:\n%s", out)
	}
	// A proof of a version no verifier knows, valid in every other way,
	// does not verify.
	for kind, name := range map[string]string{"inclusion": "inclusion", "consistency": "prefix"} {
		raw, _ := os.ReadFile(proofs[name])
		v2 := filepath.Join(dir, "v2-"+name+".json")
		os.WriteFile(v2, bytes.Replace(raw, []byte(`"v": 1,`), []byte(`"v": 2,`), 1), 0o600)
		if !bytes.Contains(raw, []byte(`"v": 1,`)) {
			t.Fatalf("%s proof names no version: %s", kind, raw)
		}
		if out, err := python(t, kind, "--checkpoint-pubkey", cpKey, v2); err == nil || !strings.Contains(out, "unknown_version") {
			t.Errorf("verify.py took a version 2 %s proof: %v\n%s", kind, err, out)
		}
	}

	// The witness: cp1, then cp1b (taken right after: its own record is
	// all it adds) and cp2, each with its consistency proof; a fork and a
	// rollback are refused, and the cosignature verifies.
	wkey, state := filepath.Join(dir, "witness.pem"), filepath.Join(dir, "witness.json")
	witness := func(note string, extra ...string) (int, string, string) {
		args := append([]string{"witness", "--key", wkey, "--name", "witness.example/w1", "--state", state, "--checkpoint-pubkey", cpKey}, extra...)
		return run(t, "", append(args, note)...)
	}
	for _, step := range []struct {
		note  string
		extra []string
	}{{cp1, nil}, {cp1b, []string{"--proof", proofs["next"]}}, {cp2, []string{"--proof", proofs["prefix"]}}} {
		code, out, errs := witness(step.note, step.extra...)
		if code != 0 || !strings.Contains(out, "— witness.example/w1 ") {
			t.Fatalf("witness %s: exit %d %s %s", step.note, code, out, errs)
		}
	}
	code, cosigned, _ := witness(cp2) // the same checkpoint again: consistent
	if code != 0 {
		t.Fatal("the witness refused the checkpoint it cosigned last")
	}
	os.WriteFile(filepath.Join(dir, "cosigned.note"), []byte(cosigned), 0o600)
	wpub := filepath.Join(dir, "witness.pub.pem")
	if out, err := python(t, "cosignature", "witness.example/w1", wpub, filepath.Join(dir, "cosigned.note")); err != nil {
		t.Errorf("verify.py cosignature: %v\n%s", err, out)
	}
	if code, out, errs := run(t, "", "--data", data, "verify", "--checkpoint", filepath.Join(dir, "cosigned.note"), "--checkpoint-pubkey", cpKey,
		"--witness", "witness.example/w1="+wpub); code != 0 {
		t.Errorf("verify --witness: exit %d %s %s", code, out, errs)
	}
	if code, out, errs := run(t, "", "--data", data, "verify", "--checkpoint", cp1b, "--checkpoint-pubkey", cpKey, "--witness", "witness.example/w1="+wpub); code != 1 || !strings.Contains(out, "not_cosigned") {
		t.Errorf("verify --witness of a checkpoint the witness never saw: exit %d %s%s", code, out, errs)
	}
	// Without --witness, a cosignature is named as not checked.
	if code, out, errs := run(t, "", "--data", data, "verify", "--checkpoint", filepath.Join(dir, "cosigned.note"), "--checkpoint-pubkey", cpKey); code != 0 ||
		!strings.Contains(out, `LIMIT checkpoint `) || !strings.Contains(out, `cosignature of "witness.example/w1", not checked`) {
		t.Errorf("verify of a cosigned checkpoint without --witness: exit %d %s%s", code, out, errs)
	}
	before, _ := os.ReadFile(state)
	key, err := receipt.LoadKey(filepath.Join(data, "keys", "checkpoint-ed25519.pem"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := os.ReadFile(cp2)
	ck, err := checkpoint.ParseNote(body)
	if err != nil {
		t.Fatal(err)
	}
	ck.Root[0] ^= 1 // a fork: another log of the same size, signed with the log's own key
	forked, _ := ck.Sign(key)
	os.WriteFile(filepath.Join(dir, "fork.note"), forked, 0o600)
	for name, c := range map[string][]string{
		"fork":                 {filepath.Join(dir, "fork.note")},
		"rollback":             {cp1},
		"larger without proof": nil,
	} {
		if c == nil {
			if code, _, _ := run(t, events([]string{"s-5"}, 2), "--data", data, "append"); code != 0 {
				t.Fatal("append")
			}
			c = []string{cp("cp3.note")}
		}
		if code, out, errs := witness(c[0]); code != 1 || !strings.Contains(errs, "not consistent") {
			t.Errorf("witness, %s: exit %d, want 1 refusing it:\n%s%s", name, code, out, errs)
		}
	}
	if after, _ := os.ReadFile(state); !bytes.Equal(before, after) {
		t.Errorf("a refused checkpoint changed the witness's state:\n%s\n%s", before, after)
	}
	// The witness's line copied from the note it cosigned onto the fork
	// of the same size: the cosignature is over a note this verifier did
	// not receive, and says so (in ledger verify and verify.py).
	var line string
	for _, l := range strings.Split(cosigned, "\n") {
		if strings.HasPrefix(l, "— witness.example/w1 ") {
			line = l
		}
	}
	copied := filepath.Join(dir, "fork-with-copied-cosignature.note")
	os.WriteFile(copied, append(forked, []byte(line+"\n")...), 0o600)
	if code, out, errs := run(t, "", "--data", data, "verify", "--checkpoint", copied, "--checkpoint-pubkey", cpKey, "--witness", "witness.example/w1="+wpub); code != 1 ||
		!strings.Contains(out, "cosigned_other") || !strings.Contains(out, "a view the verifier did not receive") {
		t.Errorf("verify --witness of a cosignature copied onto a fork: exit %d %s%s", code, out, errs)
	}
	if out, err := python(t, "cosignature", "witness.example/w1", wpub, copied); err == nil || !strings.Contains(out, "cosigned_other") {
		t.Errorf("verify.py cosignature of a cosignature copied onto a fork: %v\n%s", err, out)
	}

	// A Reveal records a checkpoint; a bundle that lost the Reveal fails
	// against it.
	if code, _, errs := run(t, "", "--data", data, "show", "--reveal", "--tenant", "acme", "s-1"); code != 0 || !strings.Contains(errs, "checkpoint") {
		t.Fatalf("show --reveal: exit %d %s", code, errs)
	}
	// ledger checkpoint took four (each a file here and a record), the
	// reveal one more: the newest.
	notes, _ := filepath.Glob(filepath.Join(data, "checkpoints", "*.note"))
	if len(notes) != 5 {
		t.Fatalf("%d checkpoints after the reveal, want 5", len(notes))
	}
	slices.Sort(notes) // checkpoint-<unix ms>.note
	notes = notes[len(notes)-1:]
	bundle := filepath.Join(dir, "all.ndjson")
	if code, _, errs := run(t, "", "--data", data, "export", "-o", bundle); code != 0 {
		t.Fatal(errs)
	}
	all, _ := os.ReadFile(bundle)
	var kept []string
	for _, l := range strings.Split(strings.TrimSpace(string(all)), "\n") {
		if !strings.Contains(l, `"event_type":"Reveal"`) {
			kept = append(kept, l)
		}
	}
	cut := filepath.Join(dir, "cut.ndjson")
	os.WriteFile(cut, []byte(strings.Join(kept, "\n")+"\n"), 0o600)
	if code, out, _ := run(t, "", "verify", "--bundle", cut, "--checkpoint", notes[0], "--checkpoint-pubkey", cpKey); code != 1 ||
		!strings.Contains(out, "agentledger/audit seq 0: truncated") {
		t.Errorf("ledger verify of the cut bundle: exit %d\n%s", code, out)
	}
	if out, err := python(t, "bundle", "--checkpoint", notes[0], "--checkpoint-pubkey", cpKey, cut); err == nil ||
		!strings.Contains(out, "('agentledger', 'audit') seq 0: truncated") {
		t.Errorf("verify.py of the cut bundle: %v\n%s", err, out)
	}
	// So does a Shred: cut off, it is caught by the checkpoint it took.
	if code, _, errs := run(t, "", "--data", data, "shred", "--tenant", "acme", "--session", "s-2"); code != 0 || !strings.Contains(errs, "checkpoint") {
		t.Fatalf("shred: exit %d %s", code, errs)
	}
	notes, _ = filepath.Glob(filepath.Join(data, "checkpoints", "*.note"))
	if len(notes) != 6 {
		t.Fatalf("%d checkpoints after the shred, want 6", len(notes))
	}
	slices.Sort(notes)
	notes = notes[len(notes)-2:]
	if code, _, errs := run(t, "", "--data", data, "export", "-o", bundle); code != 0 {
		t.Fatal(errs)
	}
	all, _ = os.ReadFile(bundle)
	kept = kept[:0]
	for _, l := range strings.Split(strings.TrimSpace(string(all)), "\n") {
		if !strings.Contains(l, `"event_type":"Shred"`) {
			kept = append(kept, l)
		}
	}
	os.WriteFile(cut, []byte(strings.Join(kept, "\n")+"\n"), 0o600)
	if code, out, _ := run(t, "", "verify", "--bundle", cut, "--checkpoint", notes[1], "--checkpoint-pubkey", cpKey); code != 1 ||
		!strings.Contains(out, "agentledger/audit seq 1: truncated") {
		t.Errorf("ledger verify of the bundle without its Shred: exit %d\n%s", code, out)
	}
	if out, err := python(t, "bundle", "--checkpoint", notes[1], "--checkpoint-pubkey", cpKey, cut); err == nil ||
		!strings.Contains(out, "('agentledger', 'audit') seq 1: truncated") {
		t.Errorf("verify.py of the bundle without its Shred: %v\n%s", err, out)
	}
	// A Reveal downgraded to an unsigned record (and edited) is no legacy
	// record: record keys signed this ledger's records before it.
	recPub := filepath.Join(data, "keys", "receipt-ed25519.pub.pem")
	all, _ = os.ReadFile(bundle)
	var downgraded []string
	for _, l := range strings.Split(strings.TrimSpace(string(all)), "\n") {
		if strings.Contains(l, `"event_type":"Reveal"`) {
			m := envelopeOf(t, l)
			var p map[string]json.RawMessage
			json.Unmarshal(m["payload"], &p)
			delete(p, "sig")
			p["by"] = json.RawMessage(`"mallory"`)
			m["payload"], _ = json.Marshal(p)
			raw, _ := json.Marshal(m)
			l = string(raw)
		}
		downgraded = append(downgraded, l)
	}
	os.WriteFile(cut, []byte(strings.Join(resealAll(t, downgraded), "\n")+"\n"), 0o600)
	if code, out, _ := run(t, "", "verify", "--bundle", cut, "--pubkey", recPub); code != 1 || !strings.Contains(out, "agentledger/audit seq 0: unsigned_record") {
		t.Errorf("ledger verify of a downgraded Reveal: exit %d\n%s", code, out)
	}
	if out, err := python(t, "bundle", "--pubkey", recPub, cut); err == nil || !strings.Contains(out, "('agentledger', 'audit') seq 0: unsigned_record") {
		t.Errorf("verify.py of a downgraded Reveal: %v\n%s", err, out)
	}
	// The whole store verifies against every checkpoint it holds.
	if code, out, errs := run(t, "", "--data", data, "verify", "--checkpoint", cp2, "--checkpoint-pubkey", cpKey); code != 0 {
		t.Errorf("verify against cp2: exit %d %s %s", code, out, errs)
	}
}
