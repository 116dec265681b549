package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
)

func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmdline.Run(context.Background(), newApp(strings.NewReader(stdin), &out, &errb), append([]string{"engine"}, args...), &errb)
	return code, out.String(), errb.String()
}

const scenario = "../../fixtures/scenarios/prompt-injection-curl-sh.ndjson"

func TestEvalPrintsOneLinePerEvent(t *testing.T) {
	code, out, errs := run(t, "", "eval", "--manifest", "../../fixtures/manifests/coding-agent.json", scenario)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	in, _ := os.ReadFile(scenario)
	if got, want := strings.Count(out, "\n"), strings.Count(string(in), "\n"); got != want {
		t.Fatalf("got %d lines, want %d", got, want)
	}
	for _, f := range []string{`"session_id":`, `"index":`, `"hook_point":`, `"decision":`, `"aarm_decision":`, `"reason_code":`, `"matched_rule_id":`, `"reasons":`, `"snapshot_hash":`} {
		if !strings.Contains(out, f) {
			t.Errorf("output lacks %s", f)
		}
	}
	// stdin and the built-in manifest work too, and give the same hashes.
	code, out2, _ := run(t, string(in), "eval", "-", "--manifest", "../../fixtures/manifests/coding-agent.json")
	if code != 0 || out2 != out {
		t.Fatalf("stdin run differs (exit %d)", code)
	}
	if code, _, errs := run(t, string(in), "eval"); code != 0 {
		t.Fatalf("built-in manifest: exit %d: %s", code, errs)
	}
}

func TestEvalBadInputsExit2(t *testing.T) {
	dir := t.TempDir()
	badManifest := filepath.Join(dir, "m.json")
	os.WriteFile(badManifest, []byte(`{"version":1,"name":"x","network":{"domains":["Bad Domain"]}}`), 0o600)
	badRego := filepath.Join(dir, "rego")
	os.MkdirAll(badRego, 0o700)
	os.WriteFile(filepath.Join(badRego, "p.rego"), []byte("package agentledger.policy\n\nimport rego.v1\n\ndecision := {\"decision\": }\n"), 0o600)
	good := `{"hook_point":"SessionStart","session_id":"s","timestamp":"2026-11-22T10:00:00Z","host_id":"claude-code","aarts_version":"0.1"}`
	tests := []struct {
		name, stdin string
		args        []string
		want        []string
	}{
		{"bad manifest", good, []string{"eval", "--manifest", badManifest}, []string{"m.json", "network.domains[0]"}},
		{"missing manifest", good, []string{"eval", "--manifest", filepath.Join(dir, "none.json")}, []string{"none.json"}},
		{"bad rego", good, []string{"eval", "--policy", badRego}, []string{"p.rego:5"}},
		{"bad event", good + "\n" + `{"hook_point":"PreToolUse","session_id":"s","timestamp":"2026-11-22T10:00:01Z","host_id":"claude-code","aarts_version":"0.1"}`, []string{"eval"}, []string{"line 2", "turn_id", "missing"}},
		{"not json", "nope\n", []string{"eval"}, []string{"line 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, tt.stdin, tt.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, errs)
			}
			if out != "" {
				t.Errorf("printed verdicts despite the error: %s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("message %q lacks %q", errs, w)
				}
			}
		})
	}
}

// TestCheckpointEvery: --checkpoint-every takes what its usage says: a
// duration, 0 (only after SessionEnd) or a negative number such as -1
// (never); a bare positive number has no unit and is refused.
func TestCheckpointEvery(t *testing.T) {
	for v, want := range map[string]time.Duration{"10m": 10 * time.Minute, "0": 0, "-1": -1, "-1s": -time.Second} {
		if got, err := checkpointEvery(v); err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"5", "often", ""} {
		if _, err := checkpointEvery(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}
