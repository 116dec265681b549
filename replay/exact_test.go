package replay

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/reducer"
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

func constant(d *decide.Decider) DeciderFor {
	return func(ledger.SessionKey) (*decide.Decider, error) { return d, nil }
}

func decider(t testing.TB, policyDir, manifestName string) *decide.Decider {
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
	return decide.NewDecider(p)
}

func TestReplayRecordedSessionsIsIdentical(t *testing.T) {
	var reports []*SessionReport
	for mf, chains := range recorded(t) {
		rs, err := RunExact(context.Background(), Chains(chains), constant(decider(t, "", mf)), 0)
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

// TestGatesChangeNoDecision replays every recorded session under the
// default policy with every gate open (policy/gates.go): each gate is only
// a necessary condition of the rules that test it, so every verdict must
// be the one recorded, as with the gates.
func TestGatesChangeNoDecision(t *testing.T) {
	steps := 0
	for mf, chains := range recorded(t) {
		d := decider(t, "", mf)
		rs, err := RunExact(context.Background(), Chains(chains), constant(decide.NewDecider(d.Policy.GatesOpen())), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			steps += r.StepsReplayed
			if !r.Identical || r.StepsReplayed == 0 {
				t.Errorf("%s (%s), gates open: identical=%v steps=%d fault=%q diffs=%+v", r.SessionID, mf, r.Identical, r.StepsReplayed, r.Fault, r.Diffs)
			}
		}
	}
	if steps < 100 {
		t.Fatalf("%d steps replayed", steps)
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
	reports, err := RunExact(context.Background(), Chains(chains), constant(decider(t, "", "coding-agent.json")), 1)
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
	// The same fault, typed, as the DiffReport carries it: the tampered
	// line's kind and seq.
	if fs := rep.Sessions[0].Faults; len(fs) == 0 || fs[0].Kind != ledger.HashMismatch || fs[0].Session != rep.Sessions[0].SessionID || !strings.Contains(f, fmt.Sprintf("seq %d", fs[0].Seq)) {
		t.Fatalf("typed faults %+v do not match %q", fs, f)
	}
	if rep.ApplyGate(FailOnNone, nil); rep.Gate.Passed {
		t.Fatal("a faulty session passed the gate")
	}
}

// TestReducerChangeIsItsOwnDiff replays with the recorded policy but a
// reducer that labels one more path: the snapshots differ from the step
// that reads it on, as snapshot_hash diffs of their own (no caused_by),
// while no verdict changes.
func TestReducerChangeIsItsOwnDiff(t *testing.T) {
	d := decider(t, "", "coding-agent.json")
	raw, _ := os.ReadFile(filepath.Join(fixtures, "manifests", "coding-agent.json"))
	m, err := manifest.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	m.DataLabels.Paths["/workspace/shop/deploy/**"] = []string{"CONFIDENTIAL"}
	changed := *d
	changed.Reducer = reducer.NewReducer(reducer.Config{Manifest: m})
	chains, err := ReadBundles([]string{filepath.Join(fixtures, "sessions", "coding-agent", "env-exfiltration.ndjson")}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	reports, err := RunExact(context.Background(), Chains(chains), constant(&changed), 1)
	if err != nil {
		t.Fatal(err)
	}
	r := reports[0]
	if r.Identical || len(r.Diffs) == 0 {
		t.Fatalf("no diff: %+v", r)
	}
	for _, df := range r.Diffs {
		if df.Field != "snapshot_hash" || df.CausedBy != nil {
			t.Errorf("unexpected diff %+v", df)
		}
	}
}

// TestCausedBy: a verdict changed (the loose manifest lets a recursive
// delete through) makes later snapshot differences follow from it, and
// each names the seq they follow from.
func TestCausedBy(t *testing.T) {
	chains, err := ReadBundles([]string{filepath.Join(fixtures, "sessions", "coding-agent", "destructive-commands.ndjson")}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	reports, err := RunExact(context.Background(), Chains(chains), constant(decider(t, "", "coding-agent-loose.json")), 1)
	if err != nil {
		t.Fatal(err)
	}
	r := reports[0]
	var first *Diff
	follows := 0
	for i, df := range r.Diffs {
		if df.Field == "decision" && first == nil {
			first = &r.Diffs[i]
		}
		if df.CausedBy != nil {
			follows++
			if first == nil || *df.CausedBy < first.Seq || *df.CausedBy >= df.Seq {
				t.Errorf("diff %+v names cause %d, first change %+v", df, *df.CausedBy, first)
			}
		}
	}
	if first == nil || follows == 0 {
		t.Fatalf("want a changed decision and differences that follow from it: %+v", r.Diffs)
	}
}

// TestNoClockNoRandomness: replay's own code never reads the clock or a
// random source (the reducer and policy are checked in their packages).
func TestNoClockNoRandomness(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"time.Now", "time.Since", "math/rand", "crypto/rand", `"net/http"`, `"net"`} {
			if strings.Contains(string(src), bad) {
				t.Errorf("%s uses %s", f, bad)
			}
		}
	}
}

// TestDecideRecordedIsDecideEvent: deciding a recorded hook event from its
// envelope (the replay's way, which skips canonicalizing its payload again)
// seals the same event and verdict envelopes, byte for byte, as deciding
// it from its payload, for every hook event of every recording.
func TestDecideRecordedIsDecideEvent(t *testing.T) {
	steps := 0
	for mf, chains := range recorded(t) {
		d := decider(t, "", mf)
		for _, c := range chains {
			if len(c.Envelopes) == 0 {
				continue
			}
			first := c.Envelopes[0]
			a, b := decide.NewSession(first.TenantID(), first.SessionID()), decide.NewSession(first.TenantID(), first.SessionID())
			for _, env := range c.Envelopes {
				if !aarts.IsHookPoint(env.EventType()) {
					continue
				}
				payload, shredded, err := d.Plaintext(env)
				if err != nil || shredded {
					t.Fatalf("%s seq %d: %v", first.SessionID(), env.Seq(), err)
				}
				ev, err := aarts.ParseEvent(payload)
				if err != nil {
					t.Fatal(err)
				}
				want, err := d.DecideEvent(context.Background(), a, ev, payload, time.UnixMilli(env.TsUnixMs()))
				if err != nil {
					t.Fatal(err)
				}
				got, err := d.DecideRecorded(context.Background(), b, ev, env, payload)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Envelope.Bytes(), want.Envelope.Bytes()) || !bytes.Equal(got.Verdict.Bytes(), want.Verdict.Bytes()) {
					t.Fatalf("%s seq %d:\nrecorded: %s\n%s\nevent:    %s\n%s", first.SessionID(), env.Seq(), got.Envelope.Bytes(), got.Verdict.Bytes(), want.Envelope.Bytes(), want.Verdict.Bytes())
				}
				steps++
			}
		}
	}
	if steps < 200 {
		t.Fatalf("only %d hook events decided", steps)
	}
}
