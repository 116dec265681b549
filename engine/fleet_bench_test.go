package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentledger/agentledger/fleet"
	"github.com/agentledger/agentledger/internal/natstest"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// testFleetKey is the fleet key of the tests' fleets.
var testFleetKey = []byte("0123456789abcdef0123456789abcdef")

// fleetOfTwo starts two engines in one fleet on the JetStream server at
// url (each with its own connection, as two processes have) and waits
// until each owns partitions.
func fleetOfTwo(tb testing.TB, url string) (*Engine, *Engine) {
	tb.Helper()
	a, b := fleetEngine(tb, url, "a"), fleetEngine(tb, url, "b")
	waitSpread(tb, a, b)
	return a, b
}

// fleetEngine starts one engine of the fleet of 8 partitions at url.
func fleetEngine(tb testing.TB, url, id string) *Engine {
	tb.Helper()
	st, err := store.Open(context.Background(), store.Config{URL: url})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	m, err := fleet.Join(context.Background(), st, fleet.Config{ID: id, Partitions: 8, LeaseTTL: 3 * time.Second, Key: testFleetKey})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(m.Close)
	e, err := New(decider(tb, "coding-agent.json"), st, WithFleet(m))
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.StartFleet(st); err != nil {
		tb.Fatal(err)
	}
	return e
}

// waitSpread waits until the 8 partitions are owned once each and every
// engine owns some.
func waitSpread(tb testing.TB, engines ...*Engine) {
	tb.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		total, every := 0, true
		for _, e := range engines {
			n := len(e.Fleet().Owned())
			total += n
			every = every && n > 0
		}
		if every && total == 8 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("partitions not spread over %d engines", len(engines))
		}
	}
}

// sessionsOf returns n session ids whose partition e owns.
func sessionsOf(e *Engine, prefix string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := e.Fleet().Owner(ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: id}); err == nil {
			out = append(out, id)
		}
	}
	return out
}

func fleetCall(session string, i int) []byte {
	return fmt.Appendf(nil, `{"hook_point":"PreToolUse","session_id":%q,"timestamp":"2026-11-22T09:%02d:%02dZ","host_id":"claude-code","aarts_version":"0.1","cwd":"/workspace/shop","turn_id":"t%d","tool_name":"shell","tool_name_native":"Bash","artifacts":[],"tool_input":{"command":"go test ./p%d/...","description":"run tests"}}`,
		session, (i/60)%60, i%60, i, i%7)
}

// BenchmarkFleetForward measures what forwarding adds to a hook: the same
// calls, in sessions engine a owns, decided by a itself (local) and sent
// to engine b, which passes them to a over NATS request-reply
// (forwarded), alternately in one run. It reports each one's median and
// 99th percentile, and the median added by forwarding.
func BenchmarkFleetForward(b *testing.B) {
	url := natstest.JetStream(b)
	owner, other := fleetOfTwo(b, url)
	local, remote := sessionsOf(owner, "local", 16), sessionsOf(owner, "forwarded", 16)
	ctx := context.Background()
	var tl, tf []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := i % 16
		start := time.Now()
		st, err := owner.Decide(ctx, ledger.DefaultTenant, fleetCall(local[s], i))
		tl = append(tl, time.Since(start))
		if err != nil || st.Engine != "a" {
			b.Fatalf("local: %v %+v", err, st)
		}
		start = time.Now()
		st, err = other.Decide(ctx, ledger.DefaultTenant, fleetCall(remote[s], i))
		tf = append(tf, time.Since(start))
		if err != nil || st.Engine != "a" {
			b.Fatalf("forwarded: %v", err)
		}
	}
	b.StopTimer()
	lp50, lp99 := percentiles(tl)
	fp50, fp99 := percentiles(tf)
	b.ReportMetric(us(lp50), "local_p50_us")
	b.ReportMetric(us(lp99), "local_p99_us")
	b.ReportMetric(us(fp50), "forwarded_p50_us")
	b.ReportMetric(us(fp99), "forwarded_p99_us")
	b.ReportMetric(us(fp50-lp50), "added_p50_us")
	b.ReportMetric(float64(fp50)/float64(lp50), "ratio_p50_forwarded_vs_local")
}

func percentiles(d []time.Duration) (time.Duration, time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)*99/100]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
