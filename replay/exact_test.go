package replay

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/policy"
)

const fixtures = "../fixtures"

// recorded returns the recorded fixture sessions, grouped by the manifest
// they were recorded under (fixtures/sessions/<manifest>/).
func recorded(t testing.TB) map[string][]Chain {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(fixtures, "sessions", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	out := map[string][]Chain{}
	for _, dir := range dirs {
		chains, err := ReadBundles([]string{dir}, ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(dir)+".json"] = chains
	}
	return out
}

func constant(d *engine.Decider) DeciderFor {
	return func(ledger.SessionKey) (*engine.Decider, error) { return d, nil }
}

func decider(t testing.TB, policyDir, manifestName string) *engine.Decider {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtures, "manifests", manifestName))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(context.Background(), policyDir, m)
	if err != nil {
		t.Fatal(err)
	}
	return engine.NewDecider(p)
}

func TestReplayRecordedSessionsIsIdentical(t *testing.T) {
	var reports []*SessionReport
	for mf, chains := range recorded(t) {
		rs, err := RunExact(context.Background(), chains, constant(decider(t, "", mf)), 0)
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, rs...)
	}
	rep := NewReport(reports, "")
	if len(rep.Sessions) < 14 {
		t.Fatalf("%d fixture sessions, want every scenario", len(rep.Sessions))
	}
	for _, r := range rep.Sessions {
		if !r.Identical || r.StepsReplayed == 0 {
			t.Errorf("%s: identical=%v steps=%d fault=%q diffs=%+v", r.SessionID, r.Identical, r.StepsReplayed, r.Fault, r.Diffs)
		}
	}
	if rep.Summary.Identical != len(rep.Sessions) || rep.Summary.Steps < 100 {
		t.Fatalf("summary %+v", rep.Summary)
	}
	if err := rep.ApplyGate(FailOnAny, nil); err != nil || !rep.Gate.Passed {
		t.Fatalf("gate: %v %+v", err, rep.Gate)
	}
}

func TestReplayRefusesTamperedBundle(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(fixtures, "sessions", "coding-agent", "loop.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	// Rewrite the last recorded verdict's decision without resealing: its
	// hash no longer matches.
	tampered := false
	for i := len(lines) - 1; i >= 0 && !tampered; i-- {
		for _, d := range []string{"allow", "ask", "deny"} {
			from := []byte(`"verdict":{"category"`)
			if bytes.Contains(lines[i], []byte(`"decision":"`+d+`"`)) && bytes.Contains(lines[i], from) {
				lines[i] = bytes.Replace(lines[i], []byte(`"decision":"`+d+`"`), []byte(`"decision":"x`+d+`"`), 1)
				tampered = true
				break
			}
		}
	}
	if !tampered {
		t.Fatal("no verdict to tamper with")
	}
	chains, err := ReadBundle(bytes.NewReader(bytes.Join(lines, []byte("\n"))), "loop.ndjson", ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	reports, err := RunExact(context.Background(), chains, constant(decider(t, "", "coding-agent.json")), 1)
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(reports, "")
	if rep.Summary.Faulty != 1 || rep.Summary.Steps != 0 {
		t.Fatalf("summary %+v", rep.Summary)
	}
	f := rep.Sessions[0].Fault
	if !strings.Contains(f, "retry-loop") || !strings.Contains(f, "seq ") || !strings.Contains(f, "hash_mismatch") {
		t.Fatalf("fault %q does not name the session, seq and kind", f)
	}
	if rep.ApplyGate(FailOnNone, nil); rep.Gate.Passed {
		t.Fatal("a faulty session passed the gate")
	}
}
