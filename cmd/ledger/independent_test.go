package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const pyVerifier = "../../fixtures/vectors/verify.py"

// python runs the independent Python verifier. CI installs python3 (.ci/run);
// its absence is a failure, not a skip.
func python(t *testing.T, args ...string) (string, error) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed for the independent verifier: %v", err)
	}
	out, err := exec.Command(py, append([]string{pyVerifier}, args...)...).CombinedOutput()
	return string(out), err
}

// TestIndependentVerifierAgrees appends events carrying every vector's
// payload (plus ones with hostile session ids), exports them, and has the
// Python verifier, with its own JCS implementation, check the bundle and the
// vectors; then it checks that the Python verifier does see a tampered line.
func TestIndependentVerifierAgrees(t *testing.T) {
	if out, err := python(t, "vectors", "../../fixtures/vectors/vectors.ndjson"); err != nil {
		t.Fatalf("vectors: %v\n%s", err, out)
	}
	f, err := os.Open("../../fixtures/vectors/vectors.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var in strings.Builder
	sc := bufio.NewScanner(f)
	i := 0
	for sc.Scan() {
		var v struct {
			Canonical string `json:"canonical"`
		}
		json.Unmarshal(sc.Bytes(), &v)
		var env struct {
			Payload json.RawMessage `json:"payload"`
		}
		json.Unmarshal([]byte(v.Canonical), &env)
		session := []string{"plain", "a.b*c> d", "ünï/😀", "tab\tnl\nq\""}[i%4]
		sid, _ := json.Marshal(session)
		fmt.Fprintf(&in, `{"tenant_id":"t-%d","session_id":%s,"event_type":"PostToolUse","ts_unix_ms":%d,"payload":%s}`+"\n", i%2, sid, 1763830000000+i, env.Payload)
		i++
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "d")
	if code, _, errs := run(t, in.String(), "--data", data, "append"); code != 0 {
		t.Fatalf("append: %s", errs)
	}
	bundle := filepath.Join(dir, "b.ndjson")
	if code, _, errs := run(t, "", "--data", data, "export", "-o", bundle); code != 0 {
		t.Fatalf("export: %s", errs)
	}
	out, err := python(t, "bundle", bundle)
	if err != nil || !strings.Contains(out, fmt.Sprintf("%d envelopes", i)) || !strings.Contains(out, "0 faults") {
		t.Fatalf("python verifier disagrees: %v\n%s", err, out)
	}
	raw, _ := os.ReadFile(bundle)
	tampered := filepath.Join(dir, "t.ndjson")
	os.WriteFile(tampered, []byte(strings.Replace(string(raw), `"v":1}`, `"v":1 }`, 1)), 0o600)
	if out, err := python(t, "bundle", tampered); err == nil || !strings.Contains(out, "not_canonical") {
		t.Fatalf("python verifier missed a tampered line: %v\n%s", err, out)
	}
}
