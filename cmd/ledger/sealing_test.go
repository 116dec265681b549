package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Secrets of the shapes the detectors know; none is a live credential.
const (
	sealAWS    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	sealGitHub = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
	sealEmail  = "jane.doe@example.com"
	sealKey    = "MIIEowIBAAKCAQEAz8x0examplekeybody"
)

// buildCmd builds one of the project's programs into dir.
func buildCmd(t *testing.T, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

func noSecrets(t *testing.T, what string, b []byte) {
	t.Helper()
	for _, s := range []string{sealAWS, sealGitHub, sealEmail, sealKey} {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s holds %q in plaintext", what, s)
		}
	}
}

// servedEngine is an engine serve process a test started.
type servedEngine struct {
	addr, logPath string
	cmd           *exec.Cmd
}

// serveEngine starts engineBin serve on data (HTTP on a free port, no
// token, no socket, no checkpoints) with manifest and a telemetry file,
// its output in dir/engine.log; it is killed when the test ends.
func serveEngine(t *testing.T, engineBin, dir, data, manifest, telemetry string) *servedEngine {
	t.Helper()
	return serveEngineWith(t, engineBin, dir, "--data", data, "--insecure-dev", "--socket", "",
		"--manifest", manifest, "--telemetry", telemetry, "--checkpoint-every", "-1")
}

// serveEngineWith starts engineBin serve with args, HTTP on a free port,
// its output in dir/engine.log; it is killed when the test ends.
func serveEngineWith(t *testing.T, engineBin, dir string, args ...string) *servedEngine {
	t.Helper()
	s := &servedEngine{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), logPath: filepath.Join(dir, "engine.log")}
	s.cmd = exec.Command(engineBin, append([]string{"serve", "--listen", s.addr}, args...)...)
	logFile, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	s.cmd.Stderr, s.cmd.Stdout = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill() })
	return s
}

// request sends a request to the engine, waiting for it to listen, and
// returns the answer's body.
func (s *servedEngine) request(t *testing.T, method, path, body string) []byte {
	t.Helper()
	var resp *http.Response
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		req, _ := http.NewRequest(method, "http://"+s.addr+path, strings.NewReader(body))
		if resp, err = http.DefaultClient.Do(req); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		log, _ := os.ReadFile(s.logPath)
		t.Fatalf("engine serve: %v\n%s", err, log)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return out
}

// stop stops the engine and waits for it.
func (s *servedEngine) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
}

// TestSealedSecretsEndToEnd posts an event carrying an AWS secret key, a
// GitHub token, a private key block and an email (PII, sealed by the
// manifest) through engine serve; no reader shows them unless --reveal,
// which is recorded; every verification holds; exact replay is identical
// with the keys; after ledger shred the values are gone, verification
// (with a checkpoint taken before) still holds, and replay reports the
// shredded step and passes --fail-on any.
func TestSealedSecretsEndToEnd(t *testing.T) {
	bins := t.TempDir()
	engineBin, replayBin := buildCmd(t, bins, "../engine"), buildCmd(t, bins, "../replay")
	dir := t.TempDir()
	data, tel := filepath.Join(dir, "d"), filepath.Join(dir, "telemetry.ndjson")
	manifest := "../../fixtures/manifests/coding-agent.json"
	srv := serveEngine(t, engineBin, dir, data, manifest, tel)
	post := func(body string) map[string]any {
		t.Helper()
		var out map[string]any
		json.Unmarshal(srv.request(t, "POST", "/v1/hooks", body), &out)
		return out
	}
	ev := func(hook string, sec int, extra string) string {
		return fmt.Sprintf(`{"hook_point":%q,"session_id":"leaky","timestamp":"2026-11-23T10:00:%02dZ","host_id":"my-agent","aarts_version":"0.1","cwd":"/workspace/shop","turn_id":"t%d"%s}`, hook, sec, sec, extra)
	}
	secretCall := `,"tool_name":"shell","tool_name_native":"Bash","artifacts":[],"tool_input":{"command":"AWS_SECRET_ACCESS_KEY=` + sealAWS +
		` git push https://x:` + sealGitHub + `@github.com/shop/web.git","description":"for ` + sealEmail + `","key":"-----BEGIN RSA PRIVATE KEY-----\n` + sealKey + `\n-----END RSA PRIVATE KEY-----"}`
	post(ev("SessionStart", 0, `,"source":"startup"`))
	if r := post(ev("PreToolUse", 1, secretCall)); r["decision"] == nil {
		t.Fatalf("PreToolUse: %v", r)
	}
	post(ev("PreToolUse", 2, `,"tool_name":"file_read","tool_name_native":"Read","artifacts":[],"tool_input":{"file_path":"/workspace/shop/README.md"}`))
	post(ev("SessionEnd", 3, `,"reason":"logout"`))
	srv.stop()

	keys := filepath.Join(data, "keys")
	pubs := []string{"--pubkey", filepath.Join(keys, "receipt-ed25519.pub.pem"), "--pubkey", filepath.Join(keys, "checkpoint-ed25519.pub.pem")}
	cp := filepath.Join(dir, "before-shred.note")
	if code, _, errs := run(t, "", "--data", data, "checkpoint", "-o", cp); code != 0 {
		t.Fatal(errs)
	}
	for _, format := range []string{"text", "json", "html"} {
		code, out, errs := run(t, "", "--data", data, "--format", format, "show", "leaky")
		if code != 0 || !strings.Contains(out, "PreToolUse") {
			t.Fatalf("show --format %s: exit %d %s %s", format, code, out, errs)
		}
		noSecrets(t, "show --format "+format, []byte(out))
		if format == "text" && !strings.Contains(out, "‹sealed:") {
			t.Errorf("show does not say what is sealed:\n%s", out)
		}
		if format == "html" {
			os.WriteFile(filepath.Join(dir, "show.html"), []byte(out), 0o600)
		}
	}
	bundle := filepath.Join(dir, "export.ndjson")
	if code, _, errs := run(t, "", "--data", data, "export", "-o", bundle); code != 0 {
		t.Fatal(errs)
	}
	raw, _ := os.ReadFile(bundle)
	noSecrets(t, "ledger export", raw)
	telemetry, _ := os.ReadFile(tel)
	if len(telemetry) == 0 {
		t.Fatal("no telemetry written")
	}
	noSecrets(t, "the telemetry file", telemetry)
	verify := func(when string, extra ...string) {
		t.Helper()
		if code, out, errs := run(t, "", append(append([]string{"--data", data, "verify", "--deep"}, pubs...), extra...)...); code != 0 {
			t.Fatalf("verify %s: exit %d %s %s", when, code, out, errs)
		}
	}
	verify("sealed")
	if out, err := python(t, "bundle", "--pubkey", filepath.Join(keys, "receipt-ed25519.pub.pem"), bundle); err != nil {
		t.Fatalf("verify.py on the export: %v\n%s", err, out)
	}
	code, out, errs := run(t, "", "--data", data, "show", "--reveal", "leaky")
	if code != 0 || !strings.Contains(out, sealGitHub) && !strings.Contains(out, sealAWS) {
		t.Fatalf("show --reveal: exit %d %s %s", code, out, errs)
	}
	code, audit, _ := run(t, "", "--data", data, "--format", "json", "show", "--tenant", "agentledger", "audit")
	if code != 0 || !strings.Contains(audit, `"event_type":"Reveal"`) || !strings.Contains(audit, `"session":"leaky"`) {
		t.Fatalf("the reveal is not on record: %s", audit)
	}
	replay := func(when string) map[string]any {
		t.Helper()
		out, err := exec.Command(replayBin, "exact", "--data", data, "--session", "leaky", "--manifest", manifest, "--fail-on", "any", "--format", "json").CombinedOutput()
		if err != nil {
			t.Fatalf("replay exact %s: %v\n%s", when, err, out)
		}
		var rep map[string]any
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("replay report %s: %v\n%s", when, err, out)
		}
		return rep
	}
	rep := replay("with keys")
	s0 := rep["sessions"].([]any)[0].(map[string]any)
	if s0["identical"] != true || s0["shredded_steps"] != nil {
		t.Fatalf("replay with keys: %v", s0)
	}
	// The master key rotated: every value still opens.
	if code, out, errs := run(t, "", "--data", data, "keys", "rotate"); code != 0 || !strings.Contains(out, "1 data keys rewrapped") {
		t.Fatalf("keys rotate: exit %d %s %s", code, out, errs)
	}
	if code, out, errs := run(t, "", "--data", data, "show", "--reveal", "leaky"); code != 0 || !strings.Contains(out, sealGitHub) {
		t.Fatalf("show --reveal after the rotation: exit %d %s %s", code, out, errs)
	}
	code, out, errs = run(t, "", "--data", data, "shred", "--session", "leaky")
	if code != 0 || !strings.Contains(out, "1 data keys destroyed") {
		t.Fatalf("shred: exit %d %s %s", code, out, errs)
	}
	code, out, _ = run(t, "", "--data", data, "show", "--reveal", "leaky")
	if code != 0 || !strings.Contains(out, "‹shredded:") {
		t.Fatalf("show --reveal after the shred: exit %d %s", code, out)
	}
	noSecrets(t, "show --reveal after the shred", []byte(out))
	verify("after the shred", "--checkpoint", cp)
	rep = replay("after the shred")
	s0 = rep["sessions"].([]any)[0].(map[string]any)
	if steps, _ := s0["shredded_steps"].([]any); len(steps) != 1 || steps[0] != float64(2) {
		t.Fatalf("replay after the shred: shredded steps %v (%v)", s0["shredded_steps"], s0)
	}
	_, audit, _ = run(t, "", "--data", data, "--format", "json", "show", "--tenant", "agentledger", "audit")
	if !strings.Contains(audit, `"event_type":"Shred"`) {
		t.Fatalf("the shred is not on record: %s", audit)
	}
}
