package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/localengine"
)

// BenchmarkHook measures what a host waits for on every tool call: the wall
// time of the process it starts (start, read stdin, reach the local
// engine, which decides and records, print the answer), per host, at a
// session's 1st tool call and at its 1,000th, against a hello-world Go
// program started in the same run. hook=thin is agentledger-hook, what
// `engine install` writes; hook=engine is `engine hook HOST`, the engine
// program itself (it links OPA and nats-server); host=opencode/hook=plugin
// is agentledger's plugin in the host's own process, which reaches the
// engine with no process per call. Reported: p50 and p99 in ms, the
// hello-world's p50, and the p50 and p99 ratios to it.
func BenchmarkHook(b *testing.B) {
	hook, hello := programs(b)
	eng := filepath.Join(filepath.Dir(hook), "engine")
	hosts := slices.Sorted(func(yield func(string) bool) {
		for h := range hostInputs {
			if !yield(h) {
				return
			}
		}
	})
	b.Run("host=opencode/hook=plugin", func(b *testing.B) {
		bare := processTimes(b, 50, func(int) *exec.Cmd { return exec.Command(hello) })
		benchPlugin(b, hook, bare)
	})
	for _, host := range hosts {
		for _, prog := range []string{"thin", "engine"} {
			if prog == "engine" && host != "claude-code" {
				continue
			}
			for _, at := range []int{1, 1000} {
				b.Run(fmt.Sprintf("host=%s/hook=%s/call=%d", host, prog, at), func(b *testing.B) {
					bare := processTimes(b, 50, func(int) *exec.Cmd { return exec.Command(hello) })
					benchHook(b, host, prog, hook, eng, at, bare)
				})
			}
		}
	}
}

func benchHook(b *testing.B, host, prog, hook, eng string, at int, bare []time.Duration) {
	data := b.TempDir()
	b.Cleanup(func() { stopEngine(b, data) })
	session := func(i int) string {
		if at == 1 {
			return fmt.Sprintf("bench-%d", i) // every call is its session's first
		}
		return "bench-long"
	}
	input := func(i int) string { return fmt.Sprintf(hostInputs[host], session(i), i) }
	command := func(i int) *exec.Cmd {
		args := []string{host, "--data", data}
		bin := hook
		if prog == "engine" {
			bin, args = eng, append([]string{"hook"}, args...)
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader(input(i))
		return cmd
	}
	if out, err := command(-1).CombinedOutput(); err != nil { // starts the engine
		b.Fatalf("first hook: %v: %s", err, out)
	}
	if at > 1 {
		cfg := hookwire.Config{Hook: hook}
		if prog == "engine" {
			cfg.Hook = eng
		}
		local := &localengine.Local{DataDir: data}
		for i := 1; i < at; i++ {
			if _, err := local.Post(context.Background(), hookwire.Input{Host: host, Body: []byte(input(-1 - i)), Config: &cfg}); err != nil {
				b.Fatalf("prefill %d: %v", i, err)
			}
		}
	}
	b.ResetTimer()
	times := processTimes(b, b.N, command)
	b.StopTimer()
	p50, p99, hello := quantile(times, 0.5), quantile(times, 0.99), quantile(bare, 0.5)
	b.ReportMetric(ms(p50), "p50_ms")
	b.ReportMetric(ms(p99), "p99_ms")
	b.ReportMetric(ms(hello), "hello_p50_ms")
	b.ReportMetric(float64(p50)/float64(hello), "p50_ratio_vs_hello")
	b.ReportMetric(float64(p99)/float64(quantile(bare, 0.99)), "p99_ratio_vs_hello")
}

// benchPlugin measures a call through agentledger's opencode plugin in the
// host's process (node here), which posts it to the local engine itself:
// no process is started per call. The calls are one session's, b.N of
// them, after one that starts the engine.
func benchPlugin(b *testing.B, hook string, bare []time.Duration) {
	data := b.TempDir()
	b.Cleanup(func() { stopEngine(b, data) })
	start, out, errb := hookRun(hook, data, fmt.Sprintf(hostInputs["claude-code"], "start", 0), nil, "claude-code")
	if err := start.Run(); err != nil {
		b.Fatalf("starting the engine: %v: %s %s", err, out, errb)
	}
	commands := make([]string, b.N)
	for i := range commands {
		commands[i] = fmt.Sprintf("go test ./pkg%d/...", i)
	}
	b.ResetTimer()
	calls := runPlugin(b, onlyWire(b, hook, data), "bench-plugin", commands)
	b.StopTimer()
	times := make([]time.Duration, len(calls))
	for i, c := range calls {
		if c.Blocked != "" {
			b.Fatalf("call %d blocked: %s", i, c.Blocked)
		}
		times[i] = time.Duration(c.MS * float64(time.Millisecond))
	}
	p50, p99, hello := quantile(times, 0.5), quantile(times, 0.99), quantile(bare, 0.5)
	b.ReportMetric(ms(p50), "p50_ms")
	b.ReportMetric(ms(p99), "p99_ms")
	b.ReportMetric(ms(hello), "hello_p50_ms")
	b.ReportMetric(float64(p50)/float64(hello), "p50_ratio_vs_hello")
	b.ReportMetric(float64(p99)/float64(quantile(bare, 0.99)), "p99_ratio_vs_hello")
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
