package replay

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkReplayExact replays the coding-agent fixture sessions, repeated
// to at least 100,000 steps, on one worker and on one per CPU, reporting
// steps per second and the peak live heap. The sessions stream from a
// Source, as from a store, so the peak does not grow with their number:
// the x4 run replays four times as many sessions.
func BenchmarkReplayExact(b *testing.B) {
	chains := recorded(b)["coding-agent.json"]
	d := decider(b, "", "coding-agent.json")
	steps := 0
	for _, c := range chains {
		for _, e := range c.Envelopes {
			if e.EventType() != "Verdict" {
				steps++
			}
		}
	}
	rounds := (100_000 + steps - 1) / steps
	// gc=batch runs as replay exact does (BatchGC); gc=default with Go's
	// default collector target, the baseline of the same run.
	for _, v := range []struct {
		workers, scale int
		gc             string
	}{{1, 1, "batch"}, {runtime.GOMAXPROCS(0), 1, "batch"}, {runtime.GOMAXPROCS(0), 4, "batch"}, {runtime.GOMAXPROCS(0), 1, "default"}} {
		b.Run(fmt.Sprintf("workers=%d/x%d/gc=%s", v.workers, v.scale, v.gc), func(b *testing.B) {
			if v.gc == "batch" {
				defer BatchGC()()
			}
			n := rounds * v.scale
			// A source that hands out the chains n times without holding
			// n copies.
			src := func(yield func(Chain, error) bool) {
				for r := 0; r < n; r++ {
					for _, c := range chains {
						if !yield(c, nil) {
							return
						}
					}
				}
			}
			var peak atomic.Uint64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				var ms runtime.MemStats
				for {
					runtime.ReadMemStats(&ms)
					if ms.HeapInuse > peak.Load() {
						peak.Store(ms.HeapInuse)
					}
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
			}()
			replayed := 0
			for i := 0; i < b.N; i++ {
				// The reports are streamed, as the replay command takes
				// them: the run holds only those in flight.
				err := RunExactEach(context.Background(), src, constant(d), v.workers, func(r *SessionReport) error {
					if !r.Identical {
						return fmt.Errorf("%s: not identical", r.SessionID)
					}
					replayed += r.StepsReplayed
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			close(stop)
			<-done
			b.ReportMetric(float64(replayed)/b.Elapsed().Seconds(), "steps_per_s")
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak_heap_MB")
			b.ReportMetric(float64(n*len(chains)), "sessions")
		})
	}
}
