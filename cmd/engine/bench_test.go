package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/localengine"
)

// BenchmarkHookClaudeCode measures what Claude Code waits for on every tool
// call: the wall time of one `engine hook claude-code` process (start, read
// stdin, reach the local engine, decide and record, print), at a session's
// 1st tool call and at its 1,000th. The baseline, measured in the same run,
// is the same binary started to print its version: the cost of a process
// start alone. Reported: p50/p99 in ms, and the p50 ratio to the baseline.
func BenchmarkHookClaudeCode(b *testing.B) {
	bin := buildEngine(b)
	bare := processTimes(b, 50, func(int) *exec.Cmd { return exec.Command(bin, "--version") })
	for _, v := range []struct {
		name string
		args []string
	}{{"two-publishes", nil}, {"atomic-batch", []string{"--atomic-batch"}}} {
		for _, at := range []int{1, 1000} {
			b.Run(fmt.Sprintf("batch=%s/call=%d", v.name, at), func(b *testing.B) {
				benchHook(b, bin, bare, at, v.args)
			})
		}
	}
}

// benchHook measures hook processes at the at-th tool call of a session,
// with the local engine started by a hook given args.
func benchHook(b *testing.B, bin string, bare []time.Duration, at int, args []string) {
	data := b.TempDir()
	b.Cleanup(func() { stopLocalEngine(b, data) })
	session := func(i int) string {
		if at == 1 {
			return fmt.Sprintf("bench-%d", i) // every call is its session's first
		}
		return "bench-long"
	}
	input := func(i int) string {
		return strings.Replace(ccPre("Bash", fmt.Sprintf(`{"command":"go test ./pkg%d/..."}`, i)),
			"9f1c2d3e-4b5a-6789-abcd-ef0123456789", session(i), 1)
	}
	// The engine is up (the session's SessionStart hook started it).
	runHook(b, bin, data, ccInput("SessionStart", `,"source":"startup","model":"claude-sonnet-4-5"`), args...)
	if at > 1 {
		local := &localengine.Local{DataDir: data}
		for i := 1; i < at; i++ {
			r, err := engine.PostLocal(context.Background(), local, hookwire.Input{Host: "claude-code", Body: []byte(input(-i))})
			if err != nil || r.ReasonCode == engine.ReasonEngineFailure {
				b.Fatalf("prefill %d: %v %v", i, err, r.Reasons)
			}
		}
	}
	b.ResetTimer()
	times := processTimes(b, b.N, func(i int) *exec.Cmd {
		return hookCmd(bin, data, input(i), args...)
	})
	b.StopTimer()
	p50, p99 := quantile(times, 0.5), quantile(times, 0.99)
	b.ReportMetric(ms(p50), "p50_ms")
	b.ReportMetric(ms(p99), "p99_ms")
	b.ReportMetric(ms(quantile(bare, 0.5)), "bare_process_p50_ms")
	b.ReportMetric(float64(p50)/float64(quantile(bare, 0.5)), "p50_ratio_vs_bare_process")
}

// processTimes runs n processes one after the other and returns each one's
// wall time.
func processTimes(b *testing.B, n int, cmd func(i int) *exec.Cmd) []time.Duration {
	out := make([]time.Duration, n)
	for i := range n {
		c := cmd(i)
		start := time.Now()
		if raw, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v: %s", c.Args, err, raw)
		}
		out[i] = time.Since(start)
	}
	return out
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
