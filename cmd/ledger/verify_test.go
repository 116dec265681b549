package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyDeepNamesRejectedLines: ledger verify --deep names a line it
// cannot read by its line, and by its session and seq where readable.
func TestVerifyDeepNamesRejectedLines(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	run(t, events([]string{"s-1"}, 3), "--data", a, "append")
	_, bundle, _ := run(t, "", "--data", a, "export")
	lines := strings.SplitAfter(bundle, "\n")
	lines[1] = "not an envelope\n"
	lines[2] = `{"v":1,` + lines[2][1:] // acme/s-1 seq 2, a duplicate key
	p := filepath.Join(dir, "bad.ndjson")
	os.WriteFile(p, []byte(strings.Join(lines, "")), 0o600)
	code, out, _ := run(t, "", "verify", "--deep", "--bundle", p)
	for _, want := range []string{"FAULT line 2: malformed: rejected", "FAULT acme/s-1 seq 2: malformed: rejected", "[line 3]"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("verify --deep: exit %d\n%s\nwant it to say %q", code, out, want)
		}
	}
	if strings.Contains(out, "seq 0: malformed") {
		t.Errorf("verify --deep names a rejected line seq 0:\n%s", out)
	}
}
