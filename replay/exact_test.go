package replay

import (
	"bytes"
	"context"
	"encoding/json"
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

// recordedWith returns, for every fixture session, a Decider with the
// default policy and the manifest the session was recorded under.
func recordedWith(t testing.TB) DeciderFor {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtures, "scenarios", "manifests.json"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	if err := json.Unmarshal(raw, &names); err != nil {
		t.Fatal(err)
	}
	deciders := map[string]*engine.Decider{}
	for _, mf := range names {
		if deciders[mf] == nil {
			deciders[mf] = decider(t, "", mf)
		}
	}
	// Scenario files name their sessions; map session id → scenario name.
	bySession := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(fixtures, "sessions", "*.ndjson"))
	for _, f := range files {
		cs, err := readBundleFile(f, ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			bySession[c.Key.Session] = strings.TrimSuffix(filepath.Base(f), ".ndjson")
		}
	}
	return func(k ledger.SessionKey) (*engine.Decider, error) {
		mf := names[bySession[k.Session]]
		if mf == "" {
			mf = names["default"]
		}
		return deciders[mf], nil
	}
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
	chains, err := ReadBundles([]string{filepath.Join(fixtures, "sessions")}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(chains) < 14 {
		t.Fatalf("%d fixture sessions, want every scenario", len(chains))
	}
	reports, err := RunExact(context.Background(), chains, recordedWith(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(reports, "")
	for _, r := range rep.Sessions {
		if !r.Identical || r.StepsReplayed == 0 {
			t.Errorf("%s: identical=%v steps=%d fault=%q diffs=%+v", r.SessionID, r.Identical, r.StepsReplayed, r.Fault, r.Diffs)
		}
	}
	if rep.Summary.Identical != len(chains) || rep.Summary.Steps < 100 {
		t.Fatalf("summary %+v", rep.Summary)
	}
	if err := rep.ApplyGate(FailOnAny, nil); err != nil || !rep.Gate.Passed {
		t.Fatalf("gate: %v %+v", err, rep.Gate)
	}
}

func TestReplayRefusesTamperedBundle(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(fixtures, "sessions", "loop.ndjson"))
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
	reports, err := RunExact(context.Background(), chains, recordedWith(t), 1)
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
