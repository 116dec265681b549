package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/replay"
)

var update = flag.Bool("update", false, "rewrite the golden reports in fixtures/reports")

const (
	fx       = "../../fixtures"
	sessions = fx + "/sessions/coding-agent"
	manifest = fx + "/manifests/coding-agent.json"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmdline.Run(context.Background(), newApp(&out, &errb), append([]string{"replay"}, args...), &errb)
	return code, out.String(), errb.String()
}

// golden compares got with fixtures/reports/name, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(fx, "reports", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/replay -update)", err)
	}
	if got != string(want) {
		t.Fatalf("report differs from %s:\n%s", path, got)
	}
}

func decode(t *testing.T, out string) *replay.Report {
	t.Helper()
	var rep replay.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return &rep
}

func TestRecordedPolicyAndManifestReplayIdentically(t *testing.T) {
	dirs, _ := filepath.Glob(fx + "/sessions/*")
	for _, dir := range dirs {
		code, out, errs := run(t, "exact", "--bundle", dir, "--manifest", filepath.Join(fx, "manifests", filepath.Base(dir)+".json"), "--fail-on", "any", "--format", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s%s", dir, code, errs, out)
		}
		rep := decode(t, out)
		if rep.Summary.Sessions == 0 || rep.Summary.Identical != rep.Summary.Sessions || !rep.Gate.Passed {
			t.Fatalf("%s: %+v", dir, rep.Summary)
		}
	}
}

// TestTighteningChangeGolden replays with the strict layer (commits and
// installs need approval): exactly the golden report, and the default gate
// passes since nothing moves toward allow.
func TestTighteningChangeGolden(t *testing.T) {
	for _, workers := range []string{"1", "4"} {
		code, out, errs := run(t, "exact", "--bundle", sessions, "--policy", "default", "--policy", fx+"/policies/strict",
			"--manifest", manifest, "--format", "json", "--workers", workers)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		golden(t, "strict.json", out)
		rep := decode(t, out)
		if rep.Summary.Transitions["allow→ask"] != 2 || len(rep.Summary.Transitions) != 1 || rep.Summary.Changed != 2 {
			t.Fatalf("summary %+v", rep.Summary)
		}
		// json round-trips.
		var again bytes.Buffer
		enc := json.NewEncoder(&again)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil || again.String() != out {
			t.Fatal("the json report does not round-trip")
		}
	}
}

// TestLooseningChangeFailsDefaultGate drops the recursive-delete ask rule
// from the manifest: the default gate fails; an --expect file listing
// exactly those diffs passes; one listing more fails again.
func TestLooseningChangeFailsDefaultGate(t *testing.T) {
	loose := fx + "/manifests/coding-agent-loose.json"
	code, out, errs := run(t, "exact", "--bundle", sessions, "--manifest", loose, "--format", "json")
	if code != 1 || !strings.Contains(errs, "gate failed") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden(t, "loose.json", out)
	rep := decode(t, out)
	if rep.Summary.Transitions["deny→allow"]+rep.Summary.Transitions["ask→allow"] == 0 {
		t.Fatalf("no loosening found: %+v", rep.Summary)
	}
	code, _, errs = run(t, "exact", "--bundle", sessions, "--manifest", loose, "--expect", fx+"/reports/loose.expect.json")
	if code != 0 {
		t.Fatalf("with the reviewed expectations: exit %d: %s", code, errs)
	}
	var exp []replay.Expectation
	raw, _ := os.ReadFile(fx + "/reports/loose.expect.json")
	json.Unmarshal(raw, &exp)
	exp = append(exp, replay.Expectation{SessionID: "clean-fix-checkout", Seq: 6, Field: "decision", Value: "deny"})
	extra := filepath.Join(t.TempDir(), "extra.json")
	raw, _ = json.Marshal(exp)
	os.WriteFile(extra, raw, 0o644)
	code, out, _ = run(t, "exact", "--bundle", sessions, "--manifest", loose, "--expect", extra)
	if code != 1 || !strings.Contains(out, "clean-fix-checkout seq 6: expected decision to become deny, which did not happen") {
		t.Fatalf("an unmet expectation: exit %d: %s", code, out)
	}
}

func TestTamperedBundleIsRefused(t *testing.T) {
	raw, err := os.ReadFile(sessions + "/loop.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	lines[5] = strings.Replace(lines[5], `"ts_unix_ms":`, `"ts_unix_ms":1`, 1)
	path := filepath.Join(t.TempDir(), "loop.ndjson")
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	code, out, errs := run(t, "exact", "--bundle", path, "--manifest", manifest, "--fail-on", "none")
	if code != 1 || !strings.Contains(out, "FAULTY    default/retry-loop") || !strings.Contains(out, "seq 5") || !strings.Contains(errs, "faulty") {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
}

func TestFormats(t *testing.T) {
	args := []string{"exact", "--bundle", sessions, "--manifest", fx + "/manifests/coding-agent-loose.json"}
	// junit: valid XML, one testcase per session, the loosened ones failing.
	code, out, _ := run(t, append(args, "--format", "junit")...)
	if code != 1 {
		t.Fatalf("junit: exit %d", code)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("junit is not XML: %v\n%s", err, out)
	}
	_, js, _ := run(t, append(args, "--format", "json")...)
	n := decode(t, js).Summary.Sessions
	if n < 15 || doc.Tests != n || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != n || doc.Failures != 1 {
		t.Fatalf("junit: %+v", doc)
	}
	// markdown: a summary table, then a table per changed session whose
	// rows have as many cells as its header.
	code, out, _ = run(t, append(args, "--format", "markdown")...)
	if code != 1 || !strings.HasPrefix(out, "## agentledger replay: gate **failed**") {
		t.Fatalf("markdown: exit %d\n%s", code, out)
	}
	cols := 0
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "|") {
			cols = 0
			continue
		}
		n := strings.Count(strings.ReplaceAll(l, `\|`, ""), "|")
		if cols == 0 {
			cols = n
		} else if n != cols {
			t.Fatalf("markdown row with %d cells under a header of %d: %s", n, cols, l)
		}
	}
	if !strings.Contains(out, "| seq | hook | tool call |") || !strings.Contains(out, "rm -rf") {
		t.Fatalf("markdown lacks the changed steps:\n%s", out)
	}
	// github: an error annotation per failing diff, a notice with the summary.
	code, out, _ = run(t, append(args, "--format", "github")...)
	if code != 1 || !strings.Contains(out, "::error file=") || !strings.Contains(out, "::notice title=agentledger replay::") {
		t.Fatalf("github: exit %d\n%s", code, out)
	}
	// -o writes the report to a file.
	path := filepath.Join(t.TempDir(), "r.json")
	if code, out, _ = run(t, append(args, "--format", "json", "-o", path, "--fail-on", "none")...); code != 0 || out != "" {
		t.Fatalf("-o: exit %d, stdout %q", code, out)
	}
	if raw, _ := os.ReadFile(path); !json.Valid(raw) {
		t.Fatal("-o wrote no json")
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"exact", "--bundle", sessions, "--format", "yaml"},
		{"exact", "--bundle", sessions, "--fail-on", "sometimes"},
		{"exact", "--bundle", "no/such/dir"},
		{"exact", "--bundle", sessions, "--session", "x"},
		{"exact", "--bundle", sessions, "--policy", "no/such/policy"},
		{"exact", "--bundle", sessions, "--expect", manifest},
		{"exact", "--bundle", sessions, "extra-arg"},
	} {
		if code, _, errs := run(t, args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d, want 2 with a message: %s", args, code, errs)
		}
	}
}

// TestExactFromTheLedger imports the recordings into an embedded store and
// replays them from there, with the store filters.
func TestExactFromTheLedger(t *testing.T) {
	data := t.TempDir()
	st, err := store.Open(context.Background(), store.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(sessions + "/*.ndjson")
	n := 0
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		chains, rep, err := ledger.LoadBundle(bytes.NewReader(raw), ledger.Limits{})
		if err != nil || !rep.OK() {
			t.Fatal(err, rep.Err())
		}
		n += len(chains)
		if _, err := st.Import(context.Background(), chains, nil); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	code, out, errs := run(t, "exact", "--data", data, "--manifest", manifest, "--fail-on", "any", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if rep := decode(t, out); n < 16 || rep.Summary.Sessions != n || rep.Summary.Identical != rep.Summary.Sessions {
		t.Fatalf("from the ledger: %+v", rep.Summary)
	}
	code, out, _ = run(t, "exact", "--data", data, "--manifest", manifest, "--session", "retry-loop", "--format", "json")
	if rep := decode(t, out); code != 0 || rep.Summary.Sessions != 1 || rep.Sessions[0].SessionID != "retry-loop" {
		t.Fatalf("--session: exit %d %+v", code, rep.Summary)
	}
	if code, _, errs = run(t, "exact", "--data", data, "--since", "2030-01-01T00:00:00Z"); code != 2 || !strings.Contains(errs, "no sessions") {
		t.Fatalf("--since after every session: exit %d %s", code, errs)
	}
}

// TestDemoReplays: README's demo (hook events recorded without verdicts,
// as `ledger append` stores them) replays: each event is judged and
// reported as having no recorded verdict, and no session is faulty.
func TestDemoReplays(t *testing.T) {
	code, out, errs := run(t, "exact", "--bundle", "../../fixtures/demo/demo.bundle.ndjson", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rep := decode(t, out)
	if rep.Summary.Sessions != 2 || rep.Summary.Faulty != 0 || rep.Summary.Steps != 16 {
		t.Fatalf("summary: %+v", rep.Summary)
	}
	if code, out, _ := run(t, "exact", "--help"); code != 0 || !strings.Contains(out, "text, json, markdown, junit, github") {
		t.Fatalf("--help does not list every format: %s", out)
	}
}

// TestNewDenialsAreTighteningOnly replays attack sessions recorded with the
// policy before commands were read by what they do: the new denials and
// asks are all tightening, so the default gate (loosening) passes.
func TestNewDenialsAreTighteningOnly(t *testing.T) {
	code, out, errs := run(t, "exact", "--bundle", "../../fixtures/reports/before-attack-reading",
		"--manifest", "../../fixtures/manifests/coding-agent.json", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rep := decode(t, out)
	tightened := 0
	for tr, n := range rep.Summary.Transitions {
		if !strings.HasPrefix(tr, "allow→") {
			t.Errorf("transition %s (%d): want only moves away from allow", tr, n)
		}
		tightened += n
	}
	if rep.Summary.Sessions != 4 || tightened < 7 {
		t.Fatalf("%d sessions, %d tightened steps: %+v", rep.Summary.Sessions, tightened, rep.Summary)
	}
}
