package distribute

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/internal/natstest"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/replay"
)

// BenchmarkReplayDistributed replays the coding-agent recordings, repeated
// to 2,000 sessions, through the task queue of an in-process nats-server
// with 1, 2 and 3 workers (goroutines with their own connection and
// candidate, as processes would have), reporting steps per second. On this
// machine's two cores the workers share the CPU with the server and the
// coordinator; the figures say what the queue costs, not what a cluster
// gains. workers=echo answers every task with a report made in advance:
// what is left is the coordinator's and the queue's own cost per session
// (us_per_session).
func BenchmarkReplayDistributed(b *testing.B) {
	chains, err := replay.ReadBundles([]string{filepath.Join(fixtures, "sessions", "coding-agent")}, ledger.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	const sessions = 2000
	src := func(yield func(replay.Chain, error) bool) {
		for i := 0; i < sessions; i++ {
			if !yield(chains[i%len(chains)], nil) {
				return
			}
		}
	}
	steps := 0
	for i := 0; i < sessions; i++ {
		for _, e := range chains[i%len(chains)].Envelopes {
			if e.EventType() != ledger.EventVerdict {
				steps++
			}
		}
	}
	defer replay.BatchGC()()
	for _, workers := range []string{"1", "2", "3", "echo"} {
		b.Run("workers="+workers, func(b *testing.B) {
			url := natstest.JetStream(b)
			d := candidate(b, "coding-agent.json")
			for i := 0; i < b.N; i++ {
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				n, _ := strconv.Atoi(workers)
				for range n {
					_, js := connect(b, url)
					w := &Worker{JS: js, Decider: candidate(b, "coding-agent.json")}
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := w.Run(ctx); err != nil {
							b.Error(err)
						}
					}()
				}
				if workers == "echo" {
					wg.Add(1)
					go func() {
						defer wg.Done()
						echo(ctx, b, url, TaskKey(d))
					}()
				}
				_, js := connect(b, url)
				co := &Coordinator{JS: js, Key: TaskKey(d)}
				start := time.Now()
				got, err := co.Run(ctx, src)
				elapsed := time.Since(start)
				cancel()
				wg.Wait()
				if err != nil || len(got) != sessions {
					b.Fatalf("%d reports: %v", len(got), err)
				}
				b.ReportMetric(float64(steps)/elapsed.Seconds(), "steps_per_s")
				b.ReportMetric(float64(elapsed.Microseconds())/sessions, "us_per_session")
			}
		})
	}
}

// echo answers every task at once with the same identical report.
func echo(ctx context.Context, b *testing.B, url, key string) {
	_, js := connect(b, url)
	tasks, _, err := streams(ctx, js)
	if err != nil {
		b.Error(err)
		return
	}
	c, err := consumer(ctx, tasks, key, Options{}.withDefaults())
	if err != nil {
		b.Error(err)
		return
	}
	body, _ := json.Marshal(&replay.SessionReport{Mode: replay.ModeExact, Identical: true, Diffs: []replay.Diff{}})
	for ctx.Err() == nil {
		batch, err := c.Fetch(64, jetstream.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			continue
		}
		for m := range batch.Messages() {
			run, idx := m.Headers().Get(hdrRun), m.Headers().Get(hdrIndex)
			out := &nats.Msg{Subject: resultsPrefix + run, Data: body, Header: nats.Header{}}
			out.Header.Set(hdrIndex, idx)
			out.Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s.%s", run, idx))
			if _, err := js.PublishMsg(ctx, out); err == nil {
				_ = m.Ack()
			}
		}
	}
}
