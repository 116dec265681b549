package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctor: engine doctor finds a project install whose wrapper has no
// agentledger-hook behind it (exit 1, naming it), passes once one is on
// PATH, and fails a data directory it cannot make or write.
func TestDoctor(t *testing.T) {
	home, project, bin := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("LEDGER_DATA", "")
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	if code, out, errs := run(t, "", "install", "claude-code", "--project", project); code != 0 {
		t.Fatalf("install: %d %s %s", code, out, errs)
	}
	code, out, _ := run(t, "", "doctor", "--project", project)
	if code != 1 || !strings.Contains(out, "FAIL  claude-code (project "+project+") command") || !strings.Contains(out, "every call is blocked") {
		t.Fatalf("doctor without agentledger-hook: exit %d\n%s", code, out)
	}
	if err := os.WriteFile(filepath.Join(bin, "agentledger-hook"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, "", "doctor", "--project", project)
	if strings.Contains(out, "FAIL  claude-code") || !strings.Contains(out, "the project's wrapper runs "+filepath.Join(bin, "agentledger-hook")) {
		t.Fatalf("doctor with agentledger-hook on PATH: exit %d\n%s", code, out)
	}
	// A data directory that cannot be made (its parent is a file).
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if code, out, _ = run(t, "", "doctor", "--project", project, "--data", filepath.Join(file, "data")); code != 1 || !strings.Contains(out, "FAIL  data directory") {
		t.Errorf("doctor on a data directory it cannot write: exit %d\n%s", code, out)
	}
}
