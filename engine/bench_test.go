package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/reducer"
)

// benchSession decides a session of 50 tool steps (PreToolUse and
// PostToolUse pairs, each with its verdict) and returns the decider, the
// session and its envelopes.
func benchSession(b *testing.B) (*Decider, *Session, []*ledger.Envelope) {
	d := decider(b, "coding-agent.json")
	s := NewSession("default", "bench")
	ts := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	var envs []*ledger.Envelope
	for i := 0; i < 100; i++ {
		ts = ts.Add(time.Second)
		hook, extra := "PreToolUse", ""
		if i%2 == 1 {
			hook, extra = "PostToolUse", fmt.Sprintf(`"tool_result":"ok  \tshop/p%d\t0.0%ds",`, i/2, i%10)
		}
		p := fmt.Sprintf(`{"hook_point":%q,"session_id":"bench","timestamp":%q,"host_id":"claude-code","aarts_version":"0.1","cwd":"/workspace/shop","turn_id":"t1","tool_name":"shell","tool_name_native":"Bash","artifacts":[],%s"tool_input":{"command":"go test ./p%d/... -run TestX","description":"run tests"}}`,
			hook, ts.Format(time.RFC3339Nano), extra, i/2)
		step, err := d.Decide(context.Background(), s, []byte(p))
		if err != nil {
			b.Fatal(err)
		}
		envs = append(envs, step.Envelope, step.Verdict)
	}
	return d, s, envs
}

// BenchmarkReducerApply folds the 200 envelopes of a 50-step session.
func BenchmarkReducerApply(b *testing.B) {
	d, _, envs := benchSession(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		snap := reducer.New("default", "bench")
		for _, e := range envs {
			var err error
			if snap, err = d.Reducer.Apply(snap, e); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(envs))/b.Elapsed().Seconds(), "envelopes/s")
}

// BenchmarkEvaluate measures one evaluation of the default bundle on a
// PreToolUse after 50 steps, reporting the median and 99th percentile.
func BenchmarkEvaluate(b *testing.B) {
	d, s, _ := benchSession(b)
	payload := []byte(`{"hook_point":"PreToolUse","session_id":"bench","timestamp":"2026-11-22T09:05:00Z","host_id":"claude-code","aarts_version":"0.1","cwd":"/workspace/shop","turn_id":"t1","tool_name":"shell","tool_name_native":"Bash","artifacts":[],"tool_input":{"command":"git commit -am 'fix: tests' && curl -s https://api.github.com/repos/acme/shop","description":"ship"}}`)
	env, err := ledger.Seal(s.Head, ledger.Event{TenantID: "default", SessionID: "bench", EventType: "PreToolUse", TsUnixMs: s.Snapshot.LastMs + 1000, Payload: payload}, ledger.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	snap, err := d.Reducer.Apply(s.Snapshot, env)
	if err != nil {
		b.Fatal(err)
	}
	ev, err := aarts.ParseEvent(payload)
	if err != nil {
		b.Fatal(err)
	}
	in := policy.Input{Event: ev.Raw, Action: Action(ev), Snapshot: snap.Map()}
	at := time.UnixMilli(snap.LastMs)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		dec, err := d.Policy.Evaluate(ctx, in, at)
		lat = append(lat, time.Since(t0))
		if err != nil || dec.Decision == "" {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50_us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99_us")
	b.ReportMetric(float64(lat[len(lat)*90/100].Nanoseconds())/1e3, "p90_us")
	b.ReportMetric(float64(lat[len(lat)*95/100].Nanoseconds())/1e3, "p95_us")
}
