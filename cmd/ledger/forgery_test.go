package main

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/seal"
)

// resign replaces line i of lines (a signed record) with the same record
// edited by edit and signed by signer, at its place: what a forger holding
// signer's private key writes. The lines after it must be resealed.
func resign(t *testing.T, lines []string, i int, signer ledger.RecordSigner, edit func(map[string]any)) []string {
	t.Helper()
	prev, err := ledger.Decode([]byte(lines[i-1]), ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ledger.Decode([]byte(lines[i]), ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var payload map[string]any
	json.Unmarshal(rec.Payload(), &payload)
	delete(payload, "sig")
	edit(payload)
	raw, _ := json.Marshal(payload)
	env, err := ledger.Seal(prev.Head(), ledger.Event{TenantID: rec.TenantID(), SessionID: rec.SessionID(), EventType: rec.EventType(),
		TsUnixMs: rec.TsUnixMs(), Payload: raw, Signer: signer}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	out := append([]string(nil), lines...)
	out[i] = string(env.Bytes())
	return out
}

// TestForgeriesAreCaught (issues 23 and 37): the project's forgery corpus.
// Each forgery, resealed so that every chain holds, is caught with its
// kind and seq by ledger verify (fast and deep) on a bundle and on a store
// it was written into, and by the shipped Python verifier; the OCSF
// exporter exports none of them. The classes: a record signed with the
// checkpoint key; a checkpoint signed with the record key (format 2 and
// format 0, given or carried as a Checkpoint record, or cosigned by a
// witness); a session fabricated from hook events alone; an event appended
// after the session's last verdict; a sealed value copied into a decoy
// session; a record stored as 14.0 where 14 is canonical; a sealed value,
// an envelope and a receipt of versions no verifier knows; unsigned
// records dated before the signed ones; a Checkpoint record misstating its
// note; a split view and a rollback between checkpoints, and against a
// store's log. (Cuts a bundle's own checkpoints catch are in
// TestCheckpointCatchesWhatChainsCannot; a witness's cosignature copied
// onto a fork in TestProofsAndWitness.)
func TestForgeriesAreCaught(t *testing.T) {
	lines := readLines(t, "../../fixtures/sessions/coding-agent/destructive-commands.ndjson")
	if !strings.Contains(lines[8], "sudo rm -rf /") || !strings.Contains(lines[9], `"decision":"deny"`) {
		t.Fatalf("the recording changed: %s / %s", lines[8], lines[9])
	}
	dir := t.TempDir()
	cpPriv, err := receipt.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	cpKey, _ := receipt.ParsePrivateKey(cpPriv)
	cpSigner := receipt.NewSigner(cpKey)
	cpPub := filepath.Join(dir, "checkpoint.pub.pem")
	os.WriteFile(cpPub, cpSigner.PublicKeyPEMFor(receipt.PurposeCheckpoints), 0o644)

	session := func(ls []string, name string) []string {
		out := make([]string, 0, len(ls))
		for _, l := range ls {
			m := envelopeOf(t, l)
			m["session_id"] = json.RawMessage(`"` + name + `"`)
			raw, _ := json.Marshal(m)
			out = append(out, string(raw))
		}
		return out
	}
	var hookEvents []string
	for _, l := range lines {
		if e, err := ledger.Decode([]byte(l), ledger.Limits{}); err == nil && aarts.IsHookPoint(e.EventType()) {
			hookEvents = append(hookEvents, l)
		}
	}
	// A value sealed for session "victim", copied into this session's
	// sudo call.
	keys, err := seal.OpenFileStore(filepath.Join(dir, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	sealer := &seal.Sealer{Keys: keys, Policy: seal.Policy{Classes: map[string]bool{"SECRET": true}}}
	victim, _, err := sealer.Seal("default", "victim", []byte(`{"command":"curl -H 'Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c9b8a' https://x"}`))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]json.RawMessage
	json.Unmarshal(victim, &v)
	decoy := append([]string(nil), lines...)
	decoy[8] = strings.Replace(decoy[8], `"command":"sudo rm -rf / --no-preserve-root"`, `"command":`+string(v["command"]), 1)

	recKey, err := receipt.LoadKey("../../fixtures/keys/fixture-ed25519.pem")
	if err != nil {
		t.Fatal(err)
	}
	first, _ := ledger.Decode([]byte(lines[0]), ledger.Limits{})
	var fabricatedLegacy []string
	var madeUp ledger.Head
	for i, answered := range []string{"allow", "allow"} {
		rej := fmt.Sprintf(`{"id":"made-up-%d","defect":"input could not be read","sha256":"%064d","length":1,"excerpt":"x","answered":%q}`, i, i, answered)
		env, err := ledger.Seal(madeUp, ledger.Event{TenantID: "default", SessionID: "made-up", EventType: ledger.EventRejected,
			TsUnixMs: first.TsUnixMs() - 1000 + int64(i), Payload: []byte(rej)}, ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		madeUp = env.Head()
		fabricatedLegacy = append(fabricatedLegacy, strings.TrimSpace(string(env.Bytes())))
	}

	unknownSealed := append([]string(nil), decoy...)
	if !strings.Contains(unknownSealed[8], `"v":1`) {
		t.Fatalf("no sealed value in the decoy's call: %s", unknownSealed[8])
	}
	unknownSealed[8] = strings.Replace(unknownSealed[8], `"v":1`, `"v":2`, 1)

	// 8.0 for 8 in a verdict, the hash taken over the bytes as stored (as
	// the fast pass reads them) and the chain relinked after it: the
	// signature, over the canonical form, still verifies.
	// (The session's last record: the verdict after any other binds the
	// hash of the event before it, which relinking would change.)
	notCanonical := append([]string(nil), lines...)
	last := len(lines) - 1
	oldHash := string(envelopeOf(t, lines[last])["hash"])
	forSeq := fmt.Sprintf(`"for_seq":%d`, last-1)
	notCanonical[last] = strings.Replace(lines[last], forSeq, forSeq+".0", 1)
	sum := sha256.Sum256([]byte(strings.Replace(notCanonical[last], `"hash":`+oldHash+`,`, "", 1)))
	notCanonical[last] = strings.Replace(notCanonical[last], oldHash, `"`+hex.EncodeToString(sum[:])+`"`, 1)

	type want struct {
		session string
		seq     int
		kind    ledger.FaultKind
	}
	forgeries := []struct {
		name  string
		lines []string
		want  want
	}{
		{"verdict re-signed with the checkpoint key", resign(t, lines, 9, cpSigner, func(p map[string]any) {
			p["verdict"].(map[string]any)["decision"] = "allow"
		}), want{"cleanup-gone-wrong", 9, ledger.BadSignature}},
		{"session fabricated from hook events", append(append([]string(nil), lines...), session(hookEvents, "fabricated")...),
			want{"fabricated", 0, ledger.UnjudgedEvent}},
		{"event after the last verdict", append(append([]string(nil), lines...), strings.Replace(lines[8], `"turn_id":"`, `"turn_id":"x`, 1)),
			want{"cleanup-gone-wrong", len(lines), ledger.UnjudgedEvent}},
		{"sealed value of another session", decoy, want{"cleanup-gone-wrong", 8, ledger.ForeignSealed}},
		{"record stored as 14.0", notCanonical, want{"cleanup-gone-wrong", len(lines) - 1, ledger.NotCanonical}},
		// A sealed value of a version no verifier knows: nothing unknown
		// verifies (it is neither read as sealed nor passed over as data).
		{"sealed value of an unknown version", unknownSealed, want{"cleanup-gone-wrong", 8, ledger.UnknownVersion}},
		// An envelope of a version no verifier knows (its chain resealed),
		// and a verdict whose receipt names another version (re-signed
		// by a records-key holder).
		{"envelope of an unknown version", func() []string {
			l := append([]string(nil), lines...)
			l[8] = strings.Replace(l[8], `"v":1}`, `"v":2}`, 1)
			return l
		}(), want{"cleanup-gone-wrong", 8, ledger.UnknownVersion}},
		{"receipt of an unknown version", resign(t, lines, 9, receipt.NewSigner(recKey), func(p map[string]any) {
			p["receipt"].(map[string]any)["v"] = 3
		}), want{"cleanup-gone-wrong", 9, ledger.UnknownVersion}},
		// With no key at all: a session of unsigned records dated before
		// the recording's first signed one (format 1's legacy), which no
		// checkpoint signed with a checkpoint key covers.
		{"unsigned session dated before signed records", append(append([]string(nil), lines...), fabricatedLegacy...),
			want{"made-up", 0, ledger.UnsignedRecord}},
	}
	for i, f := range forgeries {
		t.Run(f.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("forged-%d.ndjson", i))
			body := f.lines
			if f.want.kind != ledger.NotCanonical {
				body = resealAll(t, f.lines)
			}
			os.WriteFile(path, []byte(strings.Join(body, "\n")+"\n"), 0o600)
			want := fmt.Sprintf("default/%s seq %d: %s", f.want.session, f.want.seq, f.want.kind)
			for _, deep := range []bool{false, true} {
				args := []string{"verify", "--bundle", path, "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub}
				if deep {
					args = append(args, "--deep")
				}
				code, out, errs := run(t, "", args...)
				if code != 1 || !strings.Contains(out, want) {
					t.Errorf("ledger %v: exit %d, want 1 with %q:\n%s%s", args, code, want, out, errs)
				}
			}
			out, err := python(t, "bundle", "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub, path)
			if err == nil || !strings.Contains(out, fmt.Sprintf("'%s') seq %d: %s", f.want.session, f.want.seq, f.want.kind)) {
				t.Errorf("verify.py: %v, want %q:\n%s", err, want, out)
			}
			// The same lines written into a store's stream.
			data := storeOf(t, body)
			inStore(t, data, want, "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub)
			// The OCSF exporter exports nothing of it, from either.
			for _, src := range [][]string{{"--bundle", path}, {"--data", data}} {
				if code, out, errs := run(t, "", append([]string{"--format", "ocsf", "export", "--pubkey", fixturePub}, src...)...); code != 1 || out != "" || !strings.Contains(errs, "refused") {
					t.Errorf("ocsf export %v: exit %d, want 1 refusing it, nothing written:\n%.300s%s", src[0], code, out, errs)
				}
			}
		})
	}

	// A checkpoint signed with the record key: no verifier takes it for a
	// checkpoint, whichever flag names the key.
	t.Run("checkpoint signed with the record key", func(t *testing.T) {
		recKey, err := receipt.LoadKey("../../fixtures/keys/fixture-ed25519.pem")
		if err != nil {
			t.Fatal(err)
		}
		bundle := filepath.Join(dir, "genuine.ndjson")
		os.WriteFile(bundle, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
		last, _ := ledger.Decode([]byte(lines[len(lines)-1]), ledger.Limits{})
		log := logOf(lines)
		ck, err := checkpoint.New("agentledger", log, []checkpoint.Head{{Tenant: "default", Session: last.SessionID(), Seq: last.Seq(), Hash: last.Hash()}})
		if err != nil {
			t.Fatal(err)
		}
		note, err := ck.Sign(recKey)
		if err != nil {
			t.Fatal(err)
		}
		cp := filepath.Join(dir, "by-record-key.note")
		os.WriteFile(cp, note, 0o600)
		for _, args := range [][]string{
			{"verify", "--bundle", bundle, "--checkpoint", cp, "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub},
			{"verify", "--bundle", bundle, "--checkpoint", cp, "--pubkey", fixturePub},
		} {
			if code, out, errs := run(t, "", args...); code == 0 {
				t.Errorf("ledger %v: exit 0, the checkpoint was accepted:\n%s%s", args, out, errs)
			}
		}
		if code, _, errs := run(t, "", "verify", "--bundle", bundle, "--checkpoint", cp, "--checkpoint-pubkey", fixturePub); code == 0 || !strings.Contains(errs, "signs records") && !strings.Contains(errs, "checkpoint") {
			t.Errorf("the record key given as a checkpoint key: exit %d %s", code, errs)
		}
		// Nor does a witness cosign it, named as the log's key or not.
		for _, key := range []string{fixturePub, cpPub} {
			if code, out, errs := run(t, "", "witness", "--key", filepath.Join(dir, "w.pem"), "--name", "w.example/1", "--state", filepath.Join(dir, "w.json"),
				"--checkpoint-pubkey", key, cp); code == 0 {
				t.Errorf("ledger witness --checkpoint-pubkey %s cosigned a checkpoint the record key signed:\n%s%s", key, out, errs)
			}
		}
		if out, err := python(t, "bundle", "--pubkey", fixturePub, "--checkpoint", cp, "--checkpoint-pubkey", cpPub, bundle); err == nil ||
			!strings.Contains(out, "FAULT checkpoint") {
			t.Errorf("verify.py took a checkpoint signed with the record key: %v\n%s", err, out)
		}
	})
	// A records key that signs a checkpoint in format 0 (no version line,
	// the session heads its size, its root over NUL-separated text
	// leaves), listing no session: it would hide whatever was deleted.
	// No verifier opens it, in any format, whichever flag names the key.
	t.Run("format 0 checkpoint signed with the record key", func(t *testing.T) {
		recKey, err := receipt.LoadKey("../../fixtures/keys/fixture-ed25519.pem")
		if err != nil {
			t.Fatal(err)
		}
		bundle := filepath.Join(dir, "genuine0.ndjson")
		os.WriteFile(bundle, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
		empty := sha256.Sum256(nil) // the root of no heads
		note, err := (&checkpoint.Checkpoint{Version: 0, Origin: "agentledger", Size: 0, Root: empty}).Sign(recKey)
		if err != nil {
			t.Fatal(err)
		}
		if ck, err := checkpoint.ParseNote(note); err != nil || ck.Version > 1 {
			t.Fatalf("not a heads-only checkpoint: %+v %v", ck, err)
		}
		cp := filepath.Join(dir, "format0-by-record-key.note")
		os.WriteFile(cp, note, 0o600)
		for _, args := range [][]string{
			{"verify", "--bundle", bundle, "--checkpoint", cp, "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub},
			{"verify", "--bundle", bundle, "--checkpoint", cp, "--pubkey", fixturePub, "--deep"},
		} {
			if code, out, errs := run(t, "", args...); code == 0 || !strings.Contains(errs, "records key") {
				t.Errorf("ledger %v: exit %d, want the checkpoint refused as signed with a records key:\n%s%s", args, code, out, errs)
			}
		}
		if out, err := python(t, "bundle", "--pubkey", fixturePub, "--checkpoint", cp, "--checkpoint-pubkey", cpPub, bundle); err == nil ||
			!strings.Contains(out, "records key") {
			t.Errorf("verify.py took a format 0 checkpoint signed with the record key: %v\n%s", err, out)
		}
	})
	// A split view: a genuine checkpoint and a forked one of the same
	// size, each signed with the checkpoint key; and a rollback: a later
	// checkpoint that lists the session further back. Every --checkpoint
	// is checked, and any two must agree.
	t.Run("split view and rollback between checkpoints", func(t *testing.T) {
		bundle := filepath.Join(dir, "genuine-split.ndjson")
		os.WriteFile(bundle, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
		log := logOf(lines)
		lastEnv, _ := ledger.Decode([]byte(lines[len(lines)-1]), ledger.Limits{})
		atEnv, _ := ledger.Decode([]byte(lines[9]), ledger.Limits{})
		head := func(e *ledger.Envelope) []checkpoint.Head {
			return []checkpoint.Head{{Tenant: e.TenantID(), Session: e.SessionID(), Seq: e.Seq(), Hash: e.Hash()}}
		}
		write := func(name string, ck *checkpoint.Checkpoint) string {
			note, err := ck.Sign(cpKey)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, name)
			os.WriteFile(p, note, 0o600)
			return p
		}
		genuine, err := checkpoint.New("agentledger", log, head(lastEnv))
		if err != nil {
			t.Fatal(err)
		}
		forked := *genuine
		forked.Root[0] ^= 1
		rolled := *genuine
		rolled.Heads = head(atEnv)
		rolled.Size++ // a later log that has the session back at seq 9
		g, f, r := write("genuine.note", genuine), write("forked.note", &forked), write("rolled.note", &rolled)
		for _, c := range []struct {
			name, other string
			kind        ledger.FaultKind
		}{{"split view", f, checkpoint.SplitView}, {"rollback", r, checkpoint.RolledBack}} {
			code, out, errs := run(t, "", "verify", "--bundle", bundle, "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub, "--checkpoint", g, "--checkpoint", c.other)
			if code != 1 || !strings.Contains(out, string(c.kind)) {
				t.Errorf("%s: ledger verify exit %d, want %s:\n%s%s", c.name, code, c.kind, out, errs)
			}
			out, err := python(t, "bundle", "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub, "--checkpoint", g, "--checkpoint", c.other, bundle)
			if err == nil || !strings.Contains(out, string(c.kind)) {
				t.Errorf("%s: verify.py %v, want %s:\n%s", c.name, err, c.kind, out)
			}
		}
		if code, out, errs := run(t, "", "verify", "--bundle", bundle, "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub, "--checkpoint", g, "--checkpoint", g); code != 0 {
			t.Errorf("the genuine checkpoint twice: exit %d\n%s%s", code, out, errs)
		}
	})
	// Checkpoint records a records-key holder writes: a note in format 0
	// or 2 signed with the records key (hiding whatever it leaves out), and
	// a genuine note whose record misstates its size. Each is bad_record in
	// a bundle, in a store and in verify.py, with or without the checkpoint
	// key given.
	t.Run("checkpoint records outside their purpose", func(t *testing.T) {
		recKey, err := receipt.LoadKey("../../fixtures/keys/fixture-ed25519.pem")
		if err != nil {
			t.Fatal(err)
		}
		lastEnv, _ := ledger.Decode([]byte(lines[len(lines)-1]), ledger.Limits{})
		log := logOf(lines)
		full, err := checkpoint.New("agentledger", log, []checkpoint.Head{{Tenant: lastEnv.TenantID(), Session: lastEnv.SessionID(), Seq: lastEnv.Seq(), Hash: lastEnv.Hash()}})
		if err != nil {
			t.Fatal(err)
		}
		empty := &checkpoint.Checkpoint{Version: 0, Origin: "agentledger", Root: sha256.Sum256(nil)}
		record := func(ck *checkpoint.Checkpoint, key ed25519.PrivateKey, size int64) string {
			return checkpointRecords(t, recKey, lastEnv.TsUnixMs()+1, carriedCheckpoint{ck, key, size})[0]
		}
		for _, c := range []struct {
			name, line, want string
		}{
			{"format 0 note signed with the records key", record(empty, recKey, 0), "records key"},
			{"format 2 note signed with the records key", record(full, recKey, full.Size), "records key"},
			{"a record misstating its note's size", record(full, cpKey, full.Size+1), "says size"},
		} {
			body := append(append([]string(nil), lines...), c.line)
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".ndjson")
			os.WriteFile(path, []byte(strings.Join(body, "\n")+"\n"), 0o600)
			data := storeOf(t, body)
			for _, keys := range [][]string{{"--pubkey", fixturePub}, {"--pubkey", fixturePub, "--checkpoint-pubkey", cpPub}} {
				code, out, errs := run(t, "", append([]string{"verify", "--bundle", path}, keys...)...)
				if code != 1 || !strings.Contains(out, "agentledger/checkpoints seq 0: bad_record") || !strings.Contains(out, c.want) {
					t.Errorf("%s, bundle %v: exit %d, want bad_record with %q:\n%s%s", c.name, keys, code, c.want, out, errs)
				}
				inStore(t, data, "agentledger/checkpoints seq 0: bad_record", keys...)
				inStore(t, data, c.want, keys...)
				// The incident page (ledger show, the inbox) does not take
				// it for a checkpoint either.
				code, out, errs = run(t, "", "--data", data, "--format", "html", "show", "--pubkey", fixturePub, "cleanup-gone-wrong")
				if code != 0 || !strings.Contains(out, `id="checkpoint-status"><b class="fail">failed</b>`) {
					i := strings.Index(out, "checkpoint-status")
					t.Errorf("%s: the incident page's checkpoint status: exit %d %s\n%s", c.name, code, errs, out[max(i, 0):min(max(i, 0)+200, len(out))])
				}
				pyArgs := append(append([]string{"bundle"}, keys...), path)
				if out, err := python(t, pyArgs...); err == nil || !strings.Contains(out, "bad_record") || !strings.Contains(out, c.want) {
					t.Errorf("%s, verify.py %v: %v, want bad_record with %q:\n%s", c.name, keys, err, c.want, out)
				}
			}
		}
	})
	// Two checkpoints a bundle carries that cannot both be true: one log
	// size with two roots (a split view), and a later, larger log that
	// has the session further back (a rollback). Each pair is caught from
	// the bundle alone, in ledger verify and verify.py; a store holding
	// them fails them against its log.
	t.Run("split view and rollback between carried checkpoints", func(t *testing.T) {
		lastEnv, _ := ledger.Decode([]byte(lines[len(lines)-1]), ledger.Limits{})
		atEnv, _ := ledger.Decode([]byte(lines[9]), ledger.Limits{})
		log := logOf(lines)
		head := func(e *ledger.Envelope) []checkpoint.Head {
			return []checkpoint.Head{{Tenant: e.TenantID(), Session: e.SessionID(), Seq: e.Seq(), Hash: e.Hash()}}
		}
		genuine, err := checkpoint.New("agentledger", log, head(lastEnv))
		if err != nil {
			t.Fatal(err)
		}
		forked, rolled := *genuine, *genuine
		forked.Root[0] ^= 1
		rolled.Heads, rolled.Size = head(atEnv), genuine.Size+1
		records := func(cks ...*checkpoint.Checkpoint) []string {
			carried := make([]carriedCheckpoint, len(cks))
			for i, ck := range cks {
				carried[i] = carriedCheckpoint{ck, cpKey, ck.Size}
			}
			return checkpointRecords(t, recKey, lastEnv.TsUnixMs()+1, carried...)
		}
		for _, c := range []struct {
			name string
			cks  []*checkpoint.Checkpoint
			kind ledger.FaultKind
		}{{"split view", []*checkpoint.Checkpoint{genuine, &forked}, checkpoint.SplitView}, {"rollback", []*checkpoint.Checkpoint{genuine, &rolled}, checkpoint.RolledBack}} {
			body := append(append([]string(nil), lines...), records(c.cks...)...)
			path := filepath.Join(dir, "carried-"+strings.ReplaceAll(c.name, " ", "-")+".ndjson")
			os.WriteFile(path, []byte(strings.Join(body, "\n")+"\n"), 0o600)
			for _, keys := range [][]string{nil, {"--pubkey", fixturePub, "--checkpoint-pubkey", cpPub}} {
				code, out, errs := run(t, "", append([]string{"verify", "--bundle", path}, keys...)...)
				if code != 1 || !strings.Contains(out, string(c.kind)) {
					t.Errorf("%s carried, keys %v: exit %d, want %s:\n%s%s", c.name, keys, code, c.kind, out, errs)
				}
				out, err := python(t, append(append([]string{"bundle"}, keys...), path)...)
				if err == nil || !strings.Contains(out, string(c.kind)) {
					t.Errorf("%s carried, verify.py %v: %v, want %s:\n%s", c.name, keys, err, c.kind, out)
				}
			}
			inStore(t, storeOf(t, body), "FAULT", "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub)
		}
	})
	// A session cut behind the checkpoint the bundle itself carries (the
	// deny at seq 9 and all after it gone, the checkpoint record kept):
	// truncated, with no key given at all.
	t.Run("a session cut behind its carried checkpoint", func(t *testing.T) {
		lastEnv, _ := ledger.Decode([]byte(lines[len(lines)-1]), ledger.Limits{})
		log := logOf(lines)
		ck, err := checkpoint.New("agentledger", log, []checkpoint.Head{{Tenant: lastEnv.TenantID(), Session: lastEnv.SessionID(), Seq: lastEnv.Seq(), Hash: lastEnv.Hash()}})
		if err != nil {
			t.Fatal(err)
		}
		rec := checkpointRecords(t, recKey, lastEnv.TsUnixMs()+1, carriedCheckpoint{ck, cpKey, ck.Size})
		body := append(append([]string(nil), lines[:9]...), rec...)
		path := filepath.Join(dir, "cut-behind-carried.ndjson")
		os.WriteFile(path, []byte(strings.Join(body, "\n")+"\n"), 0o600)
		want := "default/cleanup-gone-wrong seq " + fmt.Sprint(lastEnv.Seq()) + ": truncated"
		for _, keys := range [][]string{nil, {"--pubkey", fixturePub, "--checkpoint-pubkey", cpPub}} {
			for _, deep := range []string{"", "--deep"} {
				args := append([]string{"verify", "--bundle", path}, keys...)
				if deep != "" {
					args = append(args, deep)
				}
				if code, out, errs := run(t, "", args...); code != 1 || !strings.Contains(out, want) {
					t.Errorf("ledger %v: exit %d, want %q:\n%s%s", args, code, want, out, errs)
				}
			}
			if out, err := python(t, append(append([]string{"bundle"}, keys...), path)...); err == nil || !strings.Contains(out, "truncated") {
				t.Errorf("verify.py %v: %v, want truncated:\n%s", keys, err, out)
			}
		}
		inStore(t, storeOf(t, body), "log_truncated", "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub)
	})
	// Unsigned records a checkpoint genuinely covers are exported (the
	// checkpoint vouches for them); the same session rewritten behind that
	// checkpoint, in a store, is refused by ledger verify and the OCSF
	// exporter alike: a checkpoint the log does not match vouches for
	// nothing.
	t.Run("unsigned records rewritten behind their checkpoint", func(t *testing.T) {
		build := func(legacy []string) []string {
			body := append(append([]string(nil), lines...), legacy...)
			log := logOf(body)
			madeUpHead, _ := ledger.Decode([]byte(fabricatedLegacy[len(fabricatedLegacy)-1]), ledger.Limits{})
			ck, err := checkpoint.New(checkpoint.Origin("LEDGER", log), log, []checkpoint.Head{{Tenant: "default", Session: "made-up", Seq: madeUpHead.Seq(), Hash: madeUpHead.Hash()}})
			if err != nil {
				t.Fatal(err)
			}
			return append(body, checkpointRecords(t, recKey, first.TsUnixMs()+10, carriedCheckpoint{ck, cpKey, ck.Size})...)
		}
		genuine := build(fabricatedLegacy)
		ocsf := func(data string) (int, string, string) {
			return run(t, "", "--data", data, "--format", "ocsf", "export", "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub)
		}
		data := storeOf(t, genuine)
		if code, out, errs := ocsf(data); code != 0 || !strings.Contains(out, "made-up") {
			t.Fatalf("covered unsigned records: exit %d %.200s %s", code, out, errs)
		}
		// The session rewritten with its hashes recomputed, the checkpoint
		// record kept as it was.
		var rewritten []string
		var h ledger.Head
		for i := range fabricatedLegacy {
			rej := fmt.Sprintf(`{"id":"made-up-%d","defect":"input could not be read","sha256":"%064d","length":2,"excerpt":"y","answered":"allow"}`, i, i)
			env, err := ledger.Seal(h, ledger.Event{TenantID: "default", SessionID: "made-up", EventType: ledger.EventRejected,
				TsUnixMs: first.TsUnixMs() - 1000 + int64(i), Payload: []byte(rej)}, ledger.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			h = env.Head()
			rewritten = append(rewritten, strings.TrimSpace(string(env.Bytes())))
		}
		forged := append(append(append([]string(nil), lines...), rewritten...), genuine[len(genuine)-1])
		data = storeOf(t, forged)
		inStore(t, data, "log_rewritten", "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub)
		if code, out, errs := ocsf(data); code != 1 || out != "" || !strings.Contains(errs, "refused") {
			t.Errorf("OCSF export of unsigned records rewritten behind their checkpoint: exit %d %.200s %s", code, out, errs)
		}
	})
	// Against a store's own log: a checkpoint of the log's size with
	// another root (a fork the log key signed), alone and beside the
	// genuine one.
	t.Run("split view against the store's log", func(t *testing.T) {
		data := storeOf(t, lines)
		genuine := filepath.Join(dir, "store-genuine.note")
		if code, _, errs := run(t, "", "--data", data, "checkpoint", "-o", genuine); code != 0 {
			t.Fatal(errs)
		}
		pub := filepath.Join(data, "keys", "checkpoint-ed25519.pub.pem")
		key, err := receipt.LoadKey(filepath.Join(data, "keys", "checkpoint-ed25519.pem"))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := os.ReadFile(genuine)
		ck, err := checkpoint.Open(msg, key.Public().(ed25519.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		ck.Root[0] ^= 1
		note, err := ck.Sign(key)
		if err != nil {
			t.Fatal(err)
		}
		forked := filepath.Join(dir, "store-forked.note")
		os.WriteFile(forked, note, 0o600)
		_, recPub := receipt.KeyFiles(data, receipt.KeyRecords) // ledger checkpoint signed its record with it
		if code, out, errs := run(t, "", "--data", data, "verify", "--pubkey", fixturePub, "--pubkey", recPub, "--checkpoint-pubkey", pub, "--checkpoint", genuine); code != 0 {
			t.Fatalf("the genuine store: exit %d\n%s%s", code, out, errs)
		}
		inStore(t, data, "root", "--checkpoint-pubkey", pub, "--checkpoint", forked)
		inStore(t, data, string(checkpoint.SplitView), "--checkpoint-pubkey", pub, "--checkpoint", genuine, "--checkpoint", forked)
	})
	// The genuine lines in a store verify: what the store-mode checks
	// above find is the forgery, not the store.
	if code, out, errs := run(t, "", "--data", storeOf(t, lines), "verify", "--deep", "--pubkey", fixturePub, "--checkpoint-pubkey", cpPub); code != 0 {
		t.Errorf("the genuine recording in a store: exit %d\n%s%s", code, out, errs)
	}
	// The genuine recording verifies with both keys given for their
	// purposes.
	if code, out, errs := run(t, "", "verify", "--bundle", "../../fixtures/sessions/coding-agent/destructive-commands.ndjson",
		"--pubkey", fixturePub, "--checkpoint-pubkey", cpPub, "--deep"); code != 0 {
		t.Fatalf("genuine: exit %d %s %s", code, out, errs)
	}
}

// storeOf writes lines into a new data directory's stream as a forger
// with write access to it would, session by session in the order given
// (each line's chain must already hold), and returns the directory: what
// `ledger --data DIR verify` then reads in store mode.
func storeOf(t *testing.T, lines []string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	st, err := store.Open(context.Background(), store.Config{DataDir: dir, Listen: "127.0.0.1:0", Sync: store.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	nc, err := nats.Connect(st.ClientURL()) // the writer's rights, no ledger code
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	for i, l := range lines {
		var k struct {
			Tenant  string `json:"tenant_id"`
			Session string `json:"session_id"`
		}
		if err := json.Unmarshal([]byte(l), &k); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if _, err := js.Publish(st.Subject(ledger.SessionKey{Tenant: k.Tenant, Session: k.Session}), []byte(l)); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
	}
	return dir
}

// inStore runs ledger verify (fast and deep) on the data directory dir
// with args added, and reports unless it exits 1 naming want.
func inStore(t *testing.T, dir, want string, args ...string) {
	t.Helper()
	for _, deep := range []bool{false, true} {
		a := append([]string{"--data", dir, "verify"}, args...)
		if deep {
			a = append(a, "--deep")
		}
		code, out, errs := run(t, "", a...)
		if code != 1 || !strings.Contains(out+errs, want) {
			t.Errorf("store mode: ledger %v: exit %d, want 1 with %q:\n%s%s", a, code, want, out, errs)
		}
	}
}

// logOf is the Merkle log of lines, in their order.
func logOf(lines []string) *checkpoint.Log {
	var log checkpoint.Log
	for _, l := range lines {
		log.Add([]byte(l))
	}
	return &log
}

// carriedCheckpoint is a checkpoint to carry as a Checkpoint record: its
// note signed with key, the record saying size beside it.
type carriedCheckpoint struct {
	ck   *checkpoint.Checkpoint
	key  ed25519.PrivateKey
	size int64
}

// checkpointRecords seals one Checkpoint record per checkpoint, chained
// in session agentledger/checkpoints at time ts and signed with the
// records key signer, as the engine records them (or a forger would).
func checkpointRecords(t *testing.T, signer ed25519.PrivateKey, ts int64, cks ...carriedCheckpoint) []string {
	t.Helper()
	var out []string
	var prev ledger.Head
	for _, c := range cks {
		note, err := c.ck.Sign(c.key)
		if err != nil {
			t.Fatal(err)
		}
		payload, _ := json.Marshal(map[string]any{"note": string(note), "size": c.size, "sessions": len(c.ck.Heads)})
		env, err := ledger.Seal(prev, ledger.Event{TenantID: "agentledger", SessionID: "checkpoints", EventType: ledger.EventCheckpoint,
			TsUnixMs: ts, Payload: payload, Signer: receipt.NewSigner(signer)}, ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		prev = env.Head()
		out = append(out, strings.TrimSpace(string(env.Bytes())))
	}
	return out
}
