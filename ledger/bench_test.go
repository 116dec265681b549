package ledger

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// benchPayload is a realistic ~650-byte hook payload; sealed, the envelope is
// about 800 bytes.
func benchPayload(i int) []byte {
	return []byte(fmt.Sprintf(`{"hook_event_name":"PreToolUse","session_id":"sess-bench","cwd":"/home/dev/project",`+
		`"tool_name":"Bash","tool_use_id":"toolu_%08d","permission_mode":"default",`+
		`"tool_input":{"command":"grep -rn \"TODO\" ./src | head -n 50 && go test ./... -run TestLedger -count=1","description":"search todos and run the tests","timeout":120000},`+
		`"transcript_path":"/home/dev/.claude/projects/project/2f6c1e0a-5b1d-4a8e-9f3e-1c2d3e4f5a6b.jsonl",`+
		`"context":{"model":"claude-sonnet-4-5","turn":%d,"labels":["ci","regression","ledger"],"budget":{"steps":24,"tool_calls":12,"wall_ms":120000},`+
		`"note":"%s"}}`, i, i, strings.Repeat("x", 120)))
}

func BenchmarkSeal(b *testing.B) {
	ev := Event{TenantID: "acme", SessionID: "sess-bench", EventType: "PreToolUse", TsUnixMs: 1763830000000, Payload: benchPayload(1)}
	e, err := Seal(Head{}, ev, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	size := len(e.Bytes())
	head := e.Head()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e, err = Seal(head, ev, Limits{})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "envelopes/s")
	b.ReportMetric(float64(size), "bytes/envelope")
}

// benchBundle seals n envelopes on a few sessions, as a bundle would hold.
func benchBundle(b *testing.B, n int) [][]byte {
	var lines [][]byte
	heads := map[string]Head{}
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("sess-%d", i*8/n)
		e, err := Seal(heads[s], Event{TenantID: "acme", SessionID: s, EventType: "PreToolUse", TsUnixMs: int64(1763830000000 + i), Payload: benchPayload(i)}, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		heads[s] = e.Head()
		lines = append(lines, e.Bytes())
	}
	return lines
}

func benchVerify(b *testing.B, m Mode) {
	lines := benchBundle(b, 2000)
	var total int
	for _, l := range lines {
		total += len(l)
	}
	b.SetBytes(int64(total))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := NewVerifier(m, Limits{})
		for n, l := range lines {
			v.Add(l, Position{Line: n + 1})
		}
		if r := v.Report(); !r.OK() {
			b.Fatal(r.Err())
		}
	}
	b.StopTimer()
	elapsed := b.Elapsed()
	b.ReportMetric(float64(b.N*len(lines))/elapsed.Seconds(), "envelopes/s")

	// Baselines over the same bytes, the same number of times.
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for _, l := range lines {
			sha256.Sum256(l)
		}
	}
	b.ReportMetric(time.Since(start).Seconds()/elapsed.Seconds(), "ratio_vs_sha256")
	if m == Deep {
		start = time.Now()
		for i := 0; i < b.N; i++ {
			for _, l := range lines {
				c, err := jcs.Transform(l)
				if err != nil || !bytes.Equal(c, l) {
					b.Fatal("jcs baseline", err)
				}
				sha256.Sum256(c)
			}
		}
		b.ReportMetric(time.Since(start).Seconds()/elapsed.Seconds(), "ratio_vs_jcs_sha256")
	}
}

func BenchmarkVerifyFast(b *testing.B) { benchVerify(b, Fast) }

func BenchmarkVerifyDeep(b *testing.B) { benchVerify(b, Deep) }
