package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/reducer"
)

// benchSession decides a session of 50 tool steps (PreToolUse and
// PostToolUse pairs, each with its verdict) and returns the decider, the
// session and its envelopes.
func benchSession(b *testing.B) (*decide.Decider, *decide.Session, []*ledger.Envelope) {
	d := decider(b, "coding-agent.json")
	s := decide.NewSession("default", "bench")
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
// PreToolUse after 50 steps, reporting the median and 99th percentile,
// and the median of a one-rule policy on the same input in the same run
// (OPA's floor with agentledger's input: ratio_p50_vs_trivial). ns/op
// counts both.
func BenchmarkEvaluate(b *testing.B) {
	d, s, _ := benchSession(b)
	b.StopTimer()
	p50, p99 := latencies(b, d, d.Policy, s, b.N)
	b.ReportMetric(float64(p50.Nanoseconds())/1e3, "p50_us")
	b.ReportMetric(float64(p99.Nanoseconds())/1e3, "p99_us")
	trivial, err := policy.Load(context.Background(), trivialBundle(b), d.Policy.Manifest())
	if err != nil {
		b.Fatal(err)
	}
	t50, _ := latencies(b, d, trivial, s, b.N)
	b.ReportMetric(float64(t50.Nanoseconds())/1e3, "trivial_p50_us")
	b.ReportMetric(float64(p50)/float64(t50), "ratio_p50_vs_trivial")
}

// BenchmarkEvaluateTrivial measures a one-rule policy on BenchmarkEvaluate's
// input: what OPA and the input cost when the policy costs nothing.
func BenchmarkEvaluateTrivial(b *testing.B) {
	d, s, _ := benchSession(b)
	trivial, err := policy.Load(context.Background(), trivialBundle(b), d.Policy.Manifest())
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	p50, p99 := latencies(b, d, trivial, s, b.N)
	b.ReportMetric(float64(p50.Nanoseconds())/1e3, "p50_us")
	b.ReportMetric(float64(p99.Nanoseconds())/1e3, "p99_us")
}

// trivialBundle writes a policy of one rule: allow, once it has read the
// event's hook point.
func trivialBundle(b *testing.B) string {
	dir := b.TempDir()
	module := `package agentledger.policy

import rego.v1

decision := {"decision": "allow", "aarm_decision": "ALLOW", "severity": "info", "confidence": 1, "category": "none", "source": "policy", "reason_code": "ALLOW", "reasons": []} if input.event.hook_point == "PreToolUse"
`
	if err := os.WriteFile(filepath.Join(dir, "trivial.rego"), []byte(module), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// latencies evaluates p n times on a PreToolUse after the session s (the
// benchmark's timer on only while it does) and returns the median and the
// 99th percentile.
func latencies(b *testing.B, d *decide.Decider, p *policy.Policy, s *decide.Session, n int) (time.Duration, time.Duration) {
	b.Helper()
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
	in := policy.Input{Event: ev.Raw, Action: action.Of(ev), Snapshot: snap.Map()}
	at := time.UnixMilli(snap.LastMs)
	ctx := context.Background()
	lat := make([]time.Duration, 0, n)
	b.StartTimer()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		dec, err := p.Evaluate(ctx, in, at)
		lat = append(lat, time.Since(t0))
		if err != nil || dec.Decision == "" {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100]
}

// BenchmarkHookHTTP decides PreToolUse events over real HTTP, each recorded
// durably with its verdict before the answer, from 1 and from 16 concurrent
// sessions: in the default configuration (sync always; on the embedded
// single-node stream an event and its verdict are two publishes, made
// durable by one fsync shared by every session waiting), with --sync
// interval, and with --atomic-batch (one atomic batch per pair, batches
// shared by the sessions waiting at the same time). A session past the
// manifest's budgets (120 tool calls) is denied BUDGET_EXCEEDED from then
// on: most of the one-session run's decisions are such denials.
func BenchmarkHookHTTP(b *testing.B) {
	for _, sessions := range []int{1, 16} {
		for _, v := range []struct {
			name string
			cfg  store.Config
		}{
			{"default", store.Config{}},
			{"sync=interval", store.Config{Sync: store.SyncInterval}},
			{"atomic-batch", store.Config{AtomicBatch: true}},
		} {
			b.Run(fmt.Sprintf("sessions=%d/%s", sessions, v.name), func(b *testing.B) { benchHookHTTP(b, sessions, v.cfg) })
		}
	}
}

func benchHookHTTP(b *testing.B, sessions int, cfg store.Config) {
	cfg.DataDir = b.TempDir()
	st, err := store.Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(Handler(ServerConfig{Engine: newEngine(b, decider(b, "coding-agent.json"), st), Store: st, Insecure: true}))
	defer srv.Close()
	client := srv.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				body := hookEvent(fmt.Sprintf("bench-%d", s), int(i)*2)
				t0 := time.Now()
				resp, err := client.Post(srv.URL+"/v1/hooks", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				d := time.Since(t0)
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}(s)
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_us")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions_per_s")
}
