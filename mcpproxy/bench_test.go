package mcpproxy

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/receipt"
)

// BenchmarkMCPProxyCall measures what the gateway adds to a tools/call:
// the fixture server over Streamable HTTP called directly, and through
// the gateway with recording on (PreToolUse and PostToolUse judged and
// stored, signed), in the same run. Each proxied call is the first of its
// session (a session's first result taints it, after which the policy
// asks before MCP calls that can persist it), so every session is
// connected before its call is timed.
func BenchmarkMCPProxyCall(b *testing.B) {
	for _, sync := range []store.SyncPolicy{store.SyncInterval, store.SyncAlways} {
		b.Run("sync="+string(sync), func(b *testing.B) { benchProxyCall(b, sync) })
	}
}

func benchProxyCall(b *testing.B, sync store.SyncPolicy) {
	ctx := context.Background()
	url := startHTTPFixture(b)
	st, err := store.Open(ctx, store.Config{DataDir: b.TempDir(), Sync: sync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() }) // after the gateway's cleanup: its sessions end on record
	raw, err := os.ReadFile("../fixtures/manifests/coding-agent.json")
	if err != nil {
		b.Fatal(err)
	}
	m, err := manifest.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	m.Network.Domains = append(m.Network.Domains, "127.0.0.1") // the fixture's address
	pol, err := policy.Load(ctx, "", m)
	if err != nil {
		b.Fatal(err)
	}
	d := decide.NewDecider(pol)
	keyPEM, _ := receipt.GenerateKey()
	key, _ := receipt.ParsePrivateKey(keyPEM)
	d.Signer = receipt.NewSigner(key)
	eng, err := engine.New(d, st)
	if err != nil {
		b.Fatal(err)
	}
	_, gw := serveGateway(b, Config{Engine: eng, Server: "filesystem", URI: url, Transport: "streamable_http", MaxSessions: b.N + 1},
		func() (mcp.Transport, error) { return &mcp.StreamableClientTransport{Endpoint: url}, nil },
		tokensOf(b, "host-token", `"tenant":"default","role":"host"`))

	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	args := map[string]any{"path": "checkout/total.go"}
	var baseline, proxied []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if res, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: args}); err != nil || res.IsError {
			b.Fatalf("direct: %v %+v", err, res)
		}
		baseline = append(baseline, time.Since(start))

		b.StopTimer()
		t := &mcp.StreamableClientTransport{Endpoint: gw, HTTPClient: &http.Client{Transport: bearer{"host-token", fmt.Sprintf("bench-%d", i)}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, t, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cs.ListTools(ctx, nil); err != nil { // connects the session's proxy
			b.Fatal(err)
		}
		b.StartTimer()
		start = time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: args})
		proxied = append(proxied, time.Since(start))
		if err != nil || res.IsError {
			b.Fatalf("proxied: %v %+v", err, res)
		}
		b.StopTimer()
		cs.Close()
		b.StartTimer()
	}
	b.StopTimer()
	rp50, rp99, pp50, pp99 := pct(baseline, 50), pct(baseline, 99), pct(proxied, 50), pct(proxied, 99)
	b.ReportMetric(ms(rp50), "direct_p50_ms")
	b.ReportMetric(ms(rp99), "direct_p99_ms")
	b.ReportMetric(ms(pp50), "proxied_p50_ms")
	b.ReportMetric(ms(pp99), "proxied_p99_ms")
	b.ReportMetric(ms(pp50-rp50), "overhead_p50_ms")
	b.ReportMetric(float64(pp50)/float64(rp50), "ratio_p50_vs_direct")
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// startHTTPFixture runs fixtures/mcpserver over Streamable HTTP and
// returns its URL.
func startHTTPFixture(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command(server(tb), "-http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return url
		}
	}
	tb.Fatal("the fixture server printed no URL")
	return ""
}
