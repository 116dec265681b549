package replay

import (
	"context"
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkReplayExact replays the coding-agent fixture sessions, repeated
// to at least 100,000 steps, on one worker and on one per CPU, reporting
// steps per second. The chains are read once; each replay builds its own
// state, so memory does not grow with the number of sessions replayed.
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
	var work []Chain
	for len(work) == 0 || steps*len(work)/len(chains) < 100_000 {
		work = append(work, chains...)
	}
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			replayed := 0
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				reports, err := RunExact(context.Background(), Chains(work), constant(d), workers)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range reports {
					if !r.Identical {
						b.Fatalf("%s: not identical", r.SessionID)
					}
					replayed += r.StepsReplayed
				}
			}
			b.ReportMetric(float64(replayed)/b.Elapsed().Seconds(), "steps_per_s")
		})
	}
}
