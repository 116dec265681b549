package checkpoint

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchEnvelopes are n envelope-sized records (about 1 KB each).
func benchEnvelopes(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf(`{"event_type":"PreToolUse","hash":"%064d","payload":{"tool_input":{"command":"go test ./... -run T%d"},"note":"%s"},"prev_hash":null,"seq":%d,"session_id":"s-%d","tenant_id":"acme","ts_unix_ms":1795338009000,"v":1}`,
			i, i, strings.Repeat("x", 800), i, i%50))
	}
	return out
}

// rawSHA256 is the time per envelope of SHA-256 over the same bytes: the
// baseline the log's cost is reported against.
func rawSHA256(envs [][]byte) time.Duration {
	start := time.Now()
	for range 5 {
		for _, e := range envs {
			sha256.Sum256(e)
		}
	}
	return time.Since(start) / time.Duration(5*len(envs))
}

// BenchmarkCheckpoint measures building the Merkle log a checkpoint signs
// (each envelope's leaf hash and the tree's nodes) and its root, per
// envelope, against SHA-256 of the same bytes measured in the same run
// (ratio_vs_sha256).
func BenchmarkCheckpoint(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		envs := benchEnvelopes(n)
		b.Run(fmt.Sprintf("envelopes=%d", n), func(b *testing.B) {
			raw := rawSHA256(envs)
			for b.Loop() {
				var l Log
				for _, e := range envs {
					l.Add(e)
				}
				if _, err := l.Root(l.Size()); err != nil {
					b.Fatal(err)
				}
			}
			per := float64(b.Elapsed()) / float64(b.N) / float64(n)
			b.ReportMetric(per, "ns/envelope")
			b.ReportMetric(per/float64(raw), "ratio_vs_sha256")
		})
	}
}

// BenchmarkProve measures proving one envelope's inclusion in a log of n
// envelopes, and the consistency of a log with one twice its size, against
// SHA-256 of one envelope measured in the same run.
func BenchmarkProve(b *testing.B) {
	const n = 100000
	envs := benchEnvelopes(n)
	var l Log
	for _, e := range envs {
		l.Add(e)
	}
	raw := rawSHA256(envs[:1000])
	b.Run("inclusion", func(b *testing.B) {
		i := int64(0)
		for b.Loop() {
			if _, err := l.ProveInclusion(i%n, n); err != nil {
				b.Fatal(err)
			}
			i += 7919
		}
		b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(raw), "ratio_vs_sha256")
	})
	b.Run("consistency", func(b *testing.B) {
		for b.Loop() {
			if _, err := l.ProveConsistency(n/2+1, n); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(raw), "ratio_vs_sha256")
	})
}
