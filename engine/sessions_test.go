package engine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger/ledger/store"
)

// scaleSessions says how many distinct sessions TestSessionBound drives:
// 20,000 by default (the test command runs on busy 2-core machines under
// the race detector), the full 100,000 with AGENTLEDGER_FULL_SCALE=1
// (`AGENTLEDGER_FULL_SCALE=1 go test ./engine -run TestSessionBound`). The
// engine's bound is a tenth of it either way.
func scaleSessions() int64 {
	if os.Getenv("AGENTLEDGER_FULL_SCALE") != "" {
		return 100_000
	}
	return 20_000
}

// TestSessionBound drives scaleSessions distinct sessions through an
// engine bounded to a tenth of that many live sessions: the bound holds
// throughout, and a session evicted long ago decides its next event
// exactly as an engine that never let it go does (same verdict, same
// snapshot hash).
func TestSessionBound(t *testing.T) {
	ctx := context.Background()
	clock := WithClock(func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) })
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir(), Sync: store.SyncInterval, NoAtomicBatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	boundedSessions := scaleSessions()
	bound := int(boundedSessions / 10)
	e := newEngine(t, decider(t, "coding-agent.json"), st, clock, WithMaxSessions(bound))
	var next atomic.Int64
	var maxLive atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= boundedSessions {
					return
				}
				if _, err := e.Decide(ctx, "", sessionStart(fmt.Sprintf("b-%06d", i))); err != nil {
					errs <- err
					return
				}
				if live := int64(e.Sessions().Live); live > maxLive.Load() {
					maxLive.Store(live)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	stats := e.Sessions()
	if maxLive.Load() > int64(bound) || stats.Live > bound {
		t.Fatalf("live sessions reached %d (now %d), bound %d", maxLive.Load(), stats.Live, bound)
	}
	if stats.Evicted < uint64(int(boundedSessions)-bound) {
		t.Fatalf("evicted %d sessions, want at least %d", stats.Evicted, int(boundedSessions)-bound)
	}
	// The first sessions were evicted long ago; their next events, decided
	// by this engine and by one that kept them (a fresh engine on a second
	// store that saw only them), agree.
	ref, err := store.Open(ctx, store.Config{DataDir: t.TempDir(), Sync: store.SyncInterval, NoAtomicBatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	kept := newEngine(t, decider(t, "coding-agent.json"), ref, clock, WithMaxSessions(0))
	for i := range 50 {
		s := fmt.Sprintf("b-%06d", i*7)
		if _, err := kept.Decide(ctx, "", sessionStart(s)); err != nil {
			t.Fatal(err)
		}
		for _, step := range []int{1, 2} {
			got, err := e.Decide(ctx, "", hookEvent(s, step))
			if err != nil {
				t.Fatal(err)
			}
			want, err := kept.Decide(ctx, "", hookEvent(s, step))
			if err != nil {
				t.Fatal(err)
			}
			if got.SnapshotHash != want.SnapshotHash || got.Record.Verdict.Decision != want.Record.Verdict.Decision || got.Envelope.Seq() != want.Envelope.Seq() {
				t.Fatalf("%s step %d after eviction: seq %d %s %s, kept: seq %d %s %s", s, step, got.Envelope.Seq(), got.Record.Verdict.Decision, got.SnapshotHash,
					want.Envelope.Seq(), want.Record.Verdict.Decision, want.SnapshotHash)
			}
		}
	}
	if live := e.Sessions().Live; live > bound {
		t.Fatalf("live sessions %d after the rebuilds, bound %d", live, bound)
	}
}

// sessionStart is a session's first event (the cheapest to judge).
func sessionStart(session string) []byte {
	return []byte(`{"hook_point":"SessionStart","session_id":"` + session + `","timestamp":"2026-11-23T12:00:00Z","host_id":"claude-code","aarts_version":"0.1","source":"startup"}`)
}

// BenchmarkSessionMemory drives 30,000 distinct sessions through an engine,
// unbounded and bounded to 10,000 live sessions, and reports how much the
// live heap and the process's RSS grow per 10,000 sessions once the first
// 10,000 are in (the engine, its store's caches and the embedded
// nats-server's per-subject state together).
func BenchmarkSessionMemory(b *testing.B) {
	for _, bound := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("max_sessions=%d", bound), func(b *testing.B) {
			ctx := context.Background()
			st, err := store.Open(ctx, store.Config{DataDir: b.TempDir(), Sync: store.SyncInterval, NoAtomicBatch: true})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			e := newEngine(b, decider(b, "coding-agent.json"), st, WithMaxSessions(bound))
			drive := func(from, to int) {
				for i := from; i < to; i++ {
					if _, err := e.Decide(ctx, "", sessionStart(fmt.Sprintf("m-%06d", i))); err != nil {
						b.Fatal(err)
					}
				}
			}
			var heap0, rss0, heap1, rss1 int64
			for b.Loop() {
				drive(0, 10_000)
				heap0, rss0 = memNow()
				drive(10_000, 30_000)
				heap1, rss1 = memNow()
			}
			b.ReportMetric(float64(heap1-heap0)/2/(1<<20), "heap_MB_per_10k_sessions")
			b.ReportMetric(float64(rss1-rss0)/2/(1<<20), "rss_MB_per_10k_sessions")
			b.ReportMetric(float64(e.Sessions().Live), "live_sessions")
		})
	}
}

// memNow returns the live heap after a collection and the process's RSS.
func memNow() (heap, rss int64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if raw, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if kb, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				v, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
				rss = v << 10
			}
		}
	}
	return int64(ms.HeapAlloc), rss
}
