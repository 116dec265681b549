package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/junit"
)

// TestConformanceCommand: `engine conformance` prints each built-in
// adapter's level and exits 0; an external adapter speaking the protocol
// (the engine's own reference adapter, through the binary) passes too; the
// broken adapter in testdata exits 1 with its failing cases named; the
// JUnit report parses and counts what the run counted.
func TestConformanceCommand(t *testing.T) {
	code, out, errOut := run(t, "", "conformance")
	if code != 0 {
		t.Fatalf("built-in: exit %d\n%s%s", code, out, errOut)
	}
	for _, line := range []string{"claude-code: level 1", "cursor: level 1", "gemini: level 1", "copilot: level 1", "codex: level 1", " 0 fail"} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}

	bin := buildEngine(t)
	code, out, errOut = run(t, "", "conformance", "--adapter", bin+" conformance adapter", "--host", "cursor", "--host", "gemini")
	if code != 0 || !strings.Contains(out, "cursor: level 1") || strings.Contains(out, "claude-code") {
		t.Fatalf("reference adapter: exit %d\n%s%s", code, out, errOut)
	}

	broken, _ := filepath.Abs("../../conformance/testdata/broken-adapter.sh")
	report := filepath.Join(t.TempDir(), "conformance.xml")
	code, out, errOut = run(t, "", "conformance", "--adapter", "sh "+broken, "--format", "junit", "--output", report)
	if code != 1 || !strings.Contains(errOut, "cursor/shell curl piped to sh") {
		t.Fatalf("broken adapter: exit %d, stderr %q", code, errOut)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != out {
		t.Error("--output differs from what was printed")
	}
	var doc junit.Suites
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("JUnit output does not parse: %v\n%s", err, data)
	}
	failures := 0
	for _, s := range doc.Suites {
		failures += s.Failures
		for _, c := range s.Cases {
			if c.Failure == nil || c.Failure.Message == "" {
				t.Errorf("%s/%s: passes or fails without a message", s.Name, c.Name)
			}
		}
	}
	if len(doc.Suites) != 5 || doc.Tests == 0 || doc.Failures != doc.Tests || failures != doc.Failures {
		t.Errorf("JUnit: %d suites, %d tests, %d failures (%d counted)", len(doc.Suites), doc.Tests, doc.Failures, failures)
	}

	for _, args := range [][]string{
		{"conformance", "--format", "yaml"},
		{"conformance", "--host", "vscode"},
		{"conformance", "--pack", t.TempDir()},
	} {
		if code, _, errOut := run(t, "", args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d %q, want 2 with a message", args, code, errOut)
		}
	}
}
