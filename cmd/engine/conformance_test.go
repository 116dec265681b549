package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/junit"
)

// TestConformanceCommand: `engine conformance` prints each built-in
// adapter's level and its pack's digest, and exits 0 when every case
// passes; an external adapter speaking the protocol (the engine's own
// reference adapter, through the binary) passes too; the broken adapter
// in testdata exits 1 with its failing cases named; the JUnit report
// parses, counts what the run counted and names each pack by its digest;
// a pack below its host's coverage is refused with exit 2.
func TestConformanceCommand(t *testing.T) {
	code, out, errOut := run(t, "", "conformance")
	if code != 0 {
		t.Fatalf("built-in: exit %d\n%s%s", code, out, errOut)
	}
	for _, host := range []string{"claude-code", "cursor", "gemini", "copilot", "codex"} {
		// Every case passes, but no host lets a deny stop a session at
		// SessionStart, which level 1 requires.
		if !strings.Contains(out, host+": level 0  (") || !strings.Contains(out, "where a deny does nothing at "+host) {
			t.Errorf("output lacks %s's level and its reason:\n%s", host, out)
		}
	}
	for _, line := range []string{"every case passes", "sha256:", "(the shipped pack)", " 0 fail"} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}

	code, out, errOut = run(t, "", "conformance", "--format", "json", "--host", "gemini")
	var rep struct {
		Hosts []struct {
			Host string
			Pack struct {
				SHA256  string
				Shipped bool
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || len(rep.Hosts) != 1 || len(rep.Hosts[0].Pack.SHA256) != 64 || !rep.Hosts[0].Pack.Shipped {
		t.Fatalf("json: exit %d, %v: %+v\n%s", code, err, rep, errOut)
	}

	bin := buildEngine(t)
	code, out, errOut = run(t, "", "conformance", "--adapter", bin+" conformance adapter", "--host", "cursor", "--host", "gemini")
	if code != 0 || !strings.Contains(out, "cursor: level 0  (25 of 25 cases pass; every case passes)") || strings.Contains(out, "claude-code") {
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
		if !strings.Contains(s.Name, "sha256:") {
			t.Errorf("suite %q does not name its pack's digest", s.Name)
		}
		for _, c := range s.Cases {
			if c.Failure == nil || c.Failure.Message == "" {
				t.Errorf("%s/%s: passes or fails without a message", s.Name, c.Name)
			}
		}
	}
	if len(doc.Suites) != 10 || doc.Tests == 0 || doc.Failures != doc.Tests || failures != doc.Failures {
		t.Errorf("JUnit: %d suites, %d tests, %d failures (%d counted)", len(doc.Suites), doc.Tests, doc.Failures, failures)
	}

	code, _, errOut = run(t, "", "conformance", "--pack", "../../conformance/testdata/tiny-pack")
	if code != 2 || !strings.Contains(errOut, "cursor.json") || !strings.Contains(errOut, "below the minimum coverage") {
		t.Errorf("tiny pack: exit %d, stderr %q; want 2 and the pack refused", code, errOut)
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
