package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/natstest"
	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/ledger/store"
)

// TestThreeStreamLedger: engine serve --nats URL --streams 3 --fleet
// records sessions spread over three streams, and every reader given only
// --nats and the ledger's name reads them as one ledger: sessions, verify
// (with the engine's per-stream checkpoints recorded in the ledger),
// checkpoint (one per stream), verify against them and a witness's
// cosignatures, prove inclusion and consistency per stream, export and
// replay exact. Another --streams is refused, and tampering in one stream
// is named with its stream.
func TestThreeStreamLedger(t *testing.T) {
	bins := t.TempDir()
	engineBin, replayBin := buildCmd(t, bins, "../engine"), buildCmd(t, bins, "../replay")
	dir := t.TempDir()
	data, manifest := filepath.Join(dir, "d"), "../../fixtures/manifests/coding-agent.json"
	url := natstest.JetStream(t)
	srv := serveEngineWith(t, engineBin, dir, "--nats", url, "--streams", "3", "--fleet", "--partitions", "8",
		"--data", data, "--insecure-dev", "--socket", "", "--manifest", manifest, "--checkpoint-every", "0")
	const sessions = 12
	for i := range sessions {
		for j, hook := range []string{"SessionStart", "PreToolUse", "SessionEnd"} {
			extra := map[string]string{"SessionStart": `,"source":"startup"`, "SessionEnd": `,"reason":"logout"`,
				"PreToolUse": `,"tool_name":"file_read","tool_name_native":"Read","artifacts":[],"tool_input":{"file_path":"/workspace/shop/README.md"}`}[hook]
			body := fmt.Sprintf(`{"hook_point":%q,"session_id":"s%02d","timestamp":"2026-11-23T10:00:%02dZ","host_id":"my-agent","aarts_version":"0.1","cwd":"/workspace/shop","turn_id":"t%d"%s}`,
				hook, i, j, j, extra)
			if out := srv.request(t, "POST", "/v1/hooks", body); !strings.Contains(string(out), "decision") {
				log, _ := os.ReadFile(srv.logPath)
				t.Fatalf("%s of s%02d: %s\n%s", hook, i, out, log)
			}
		}
	}
	srv.stop()
	// The engine took the partitions, fencing each in every stream that
	// can hold its sessions, and checkpointed each stream after a
	// SessionEnd.
	if log, _ := os.ReadFile(srv.logPath); !strings.Contains(string(log), "on ledger_fence.2.") {
		t.Errorf("the engine's log names no fence in stream LEDGER-2:\n%s", log)
	}
	for _, s := range []string{"LEDGER-0", "LEDGER-1", "LEDGER-2"} {
		if m, _ := filepath.Glob(filepath.Join(data, "checkpoints", "checkpoint-*-"+s+".note")); len(m) == 0 {
			t.Errorf("the engine wrote no checkpoint of %s", s)
		}
	}

	ledger := func(args ...string) (int, string, string) {
		t.Helper()
		return run(t, "", append([]string{"--nats", url, "--data", data}, args...)...)
	}
	code, out, errs := ledger("--format", "json", "sessions", "--tenant", "default")
	var infos []store.SessionInfo
	if err := json.Unmarshal([]byte(out), &infos); code != 0 || err != nil || len(infos) != sessions {
		t.Fatalf("sessions: exit %d, %d sessions (%v) %s", code, len(infos), err, errs)
	}
	streamOf := map[string]string{} // session -> stream
	for _, in := range infos {
		if !strings.HasPrefix(in.Subject, "ledger."+strings.TrimPrefix(in.Stream, "LEDGER-")+".default.") {
			t.Errorf("session %s of stream %s on subject %s", in.Session, in.Stream, in.Subject)
		}
		streamOf[in.Session] = in.Stream
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, s := range streamOf {
			if !seen[s] && !yield(s) {
				return
			}
			seen[s] = true
		}
	}); !slices.Equal(got, []string{"LEDGER-0", "LEDGER-1", "LEDGER-2"}) {
		t.Fatalf("the sessions are in streams %v, want all three", got)
	}

	keys := filepath.Join(data, "keys")
	cpPub := filepath.Join(keys, "checkpoint-ed25519.pub.pem")
	pubs := []string{"--pubkey", filepath.Join(keys, "receipt-ed25519.pub.pem"), "--checkpoint-pubkey", cpPub}
	if code, out, errs := ledger(append([]string{"verify", "--deep"}, pubs...)...); code != 0 || !strings.Contains(out, "OK:") {
		t.Fatalf("verify: exit %d %s %s", code, out, errs)
	}
	cp := filepath.Join(dir, "cp.note")
	if code, out, errs := ledger("checkpoint", "-o", cp); code != 0 || out != "" || strings.Count(errs, "written to") != 3 {
		t.Fatalf("checkpoint: exit %d %q %s", code, out, errs)
	}
	cpOf := func(base, stream string) string { return strings.TrimSuffix(base, ".note") + "." + stream + ".note" }
	var given []string
	for _, s := range []string{"LEDGER-0", "LEDGER-1", "LEDGER-2"} {
		given = append(given, "--checkpoint", cpOf(cp, s))
		raw, err := os.ReadFile(cpOf(cp, s))
		if err != nil {
			t.Fatal(err)
		}
		if c, err := checkpoint.ParseNote(raw); err != nil || checkpoint.StreamOf(c.Origin) != s {
			t.Fatalf("the checkpoint of %s: %v %v", s, c, err)
		}
	}
	// One witness cosigns each stream's log under one log key.
	wstate, wkey := filepath.Join(dir, "witness.json"), filepath.Join(dir, "w.pem")
	for _, s := range []string{"LEDGER-0", "LEDGER-1", "LEDGER-2"} {
		code, out, errs := run(t, "", "witness", "--key", wkey, "--name", "w.example/1", "--state", wstate, "--checkpoint-pubkey", cpPub, cpOf(cp, s))
		if code != 0 {
			t.Fatalf("witness %s: exit %d %s", s, code, errs)
		}
		os.WriteFile(cpOf(cp, s), []byte(out), 0o644)
	}
	witness := []string{"--witness", "w.example/1=" + filepath.Join(dir, "w.pub.pem")}
	code, out, errs = ledger(append(append(append([]string{"verify", "--deep"}, pubs...), given...), witness...)...)
	if code != 0 || strings.Count(errs, " holds") != 3 {
		t.Fatalf("verify against the three checkpoints: exit %d %s %s", code, out, errs)
	}

	// The session's view holds it to its stream's newest checkpoint.
	for _, id := range []string{"s00", "s01", "s02", "s03"} {
		if code, out, errs := ledger("--format", "html", "show", "--tenant", "default", id); code != 0 || !strings.Contains(out, "covers the head") {
			t.Errorf("show %s: exit %d %s %s", id, code, out, errs)
		}
	}

	// Inclusion, with the checkpoint of the session's stream; another
	// stream's says which it needs.
	s := "s03"
	code, out, errs = ledger("prove", "inclusion", "--checkpoint", cpOf(cp, streamOf[s]), "--checkpoint-pubkey", cpPub, "--tenant", "default", "--session", s)
	var proof InclusionOutput
	if err := json.Unmarshal([]byte(out), &proof); code != 0 || err != nil || proof.Stream != streamOf[s] || proof.InclusionProof.Check() != nil {
		t.Fatalf("prove inclusion: exit %d %v %s %s", code, err, out, errs)
	}
	other := "LEDGER-0"
	if streamOf[s] == other {
		other = "LEDGER-1"
	}
	if code, _, errs := ledger("prove", "inclusion", "--checkpoint", cpOf(cp, other), "--checkpoint-pubkey", cpPub, "--session", s, "--tenant", "default", "--seq", "1"); code != 2 || !strings.Contains(errs, "is in stream "+streamOf[s]) {
		t.Fatalf("prove inclusion with another stream's checkpoint: exit %d %s", code, errs)
	}

	// More sessions, a later checkpoint: each stream's log grew from its
	// older one's.
	if code, _, errs := run(t, events([]string{"x1", "x2", "x3", "x4", "x5", "x6"}, 24), "--nats", url, "--data", data, "append"); code != 0 {
		t.Fatalf("append: %s", errs)
	}
	cp2 := filepath.Join(dir, "cp2.note")
	if code, _, errs := ledger("checkpoint", "-o", cp2); code != 0 {
		t.Fatalf("checkpoint: %s", errs)
	}
	for _, s := range []string{"LEDGER-0", "LEDGER-1", "LEDGER-2"} {
		if code, out, errs := ledger("prove", "consistency", "--old", cpOf(cp, s), "--new", cpOf(cp2, s), "--checkpoint-pubkey", cpPub); code != 0 || !strings.Contains(out, "old_root") {
			t.Fatalf("prove consistency of %s: exit %d %s %s", s, code, out, errs)
		}
	}

	// Exact replay reads the sessions of every stream.
	rout, err := exec.Command(replayBin, "exact", "--nats", url, "--data", data, "--tenant", "default", "--manifest", manifest, "--fail-on", "any", "--format", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("replay exact: %v\n%s", err, rout)
	}
	var rep struct {
		Sessions []struct {
			Session string `json:"session_id"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(rout, &rep); err != nil || len(rep.Sessions) != sessions {
		t.Fatalf("replay exact: %d sessions (%v)\n%s", len(rep.Sessions), err, rout)
	}

	// Opening with another layout is refused, whatever the command.
	for _, args := range [][]string{{"--streams", "2", "verify"}, {"--streams", "1", "sessions"}, {"--stream", "LEDGER-1", "verify"}} {
		if code, _, errs := ledger(args...); code != 2 || !strings.Contains(errs, "ledger layout") {
			t.Errorf("%v: exit %d %s, want a usage error naming the layout", args, code, errs)
		}
	}
	for _, args := range [][]string{{"--streams", "0", "verify"}, {"--streams", "1025", "verify"}, {"--streams", "x", "verify"}} {
		if code, _, errs := ledger(args...); code != 2 || !strings.Contains(errs, "--streams") {
			t.Errorf("%v: exit %d %s, want a usage error", args, code, errs)
		}
	}
	if code, _, errs := run(t, "", "--data", filepath.Join(dir, "e"), "--streams", "2", "sessions"); code != 2 || !strings.Contains(errs, "--nats") {
		t.Errorf("--streams 2 on the embedded server: exit %d %s", code, errs)
	}

	// A doctored copy of an envelope stored in one stream behind the
	// ledger's back: verify names the session and its stream.
	// (a JetStream publish returns once the stream has stored it)
	_, js := natstest.Client(t, url)
	stored := infos[5]
	if _, err := js.Publish(context.Background(), stored.Subject, []byte(`{"not":"an envelope"}`)); err != nil {
		t.Fatal(err)
	}
	code, out, _ = ledger("verify")
	if want := "[stream " + streamOf[stored.Session] + " seq "; code != 1 || !strings.Contains(out, want) {
		t.Fatalf("verify after tampering: exit %d, want a fault naming %q:\n%s", code, want, out)
	}
}
