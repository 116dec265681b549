package seal

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/reducer"
)

// benchEvent is a Claude Code–sized PreToolUse (about 1 KB), with or
// without secrets in its command.
func benchEvent(secret bool) []byte {
	cmd := "go test ./... -run TestCheckout -count=1 && git status --short"
	if secret {
		cmd = "AWS_SECRET_ACCESS_KEY=" + awsSecret + " git push https://x:" + githubToken + "@github.com/shop/web.git"
	}
	return []byte(fmt.Sprintf(`{"hook_point":"PreToolUse","session_id":"sess-bench","timestamp":"2026-11-23T10:00:00Z","host_id":"claude-code","aarts_version":"0.1",`+
		`"cwd":"/workspace/shop","turn_id":"toolu_01ABCDEF","tool_name":"shell","tool_name_native":"Bash","artifacts":[],`+
		`"tool_input":{"command":%q,"description":"run the checkout tests","timeout":120000},`+
		`"transcript_path":"/home/dev/.claude/projects/shop/2f6c1e0a-5b1d-4a8e-9f3e-1c2d3e4f5a6b.jsonl","note":"%s"}`, cmd, strings.Repeat("x", 600)))
}

// BenchmarkSeal measures recording one event with sealing against plain
// sealing into an envelope (ledger.Seal), measured in the same loop:
// ratio_vs_plain is the per-event cost of sealing. Variants: an ordinary
// event (nothing to seal), one carrying two secrets, and the ordinary event
// under a manifest that also seals PII (every string is scanned).
func BenchmarkSeal(b *testing.B) {
	keys, err := OpenFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name    string
		secret  bool
		classes map[string]bool
	}{
		{"ordinary", false, map[string]bool{reducer.ClassSecret: true}},
		{"two-secrets", true, map[string]bool{reducer.ClassSecret: true}},
		{"ordinary-pii-sealed", false, map[string]bool{reducer.ClassSecret: true, reducer.ClassPII: true}},
	} {
		payload := benchEvent(v.secret)
		s := &Sealer{Keys: keys, Policy: Policy{Classes: v.classes}}
		b.Run("plain/"+v.name, func(b *testing.B) {
			ev := ledger.Event{TenantID: "acme", SessionID: "sess-bench", EventType: "PreToolUse", TsUnixMs: 1, Payload: payload}
			for b.Loop() {
				if _, err := ledger.Seal(ledger.Head{}, ev, ledger.Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("sealed/"+v.name, func(b *testing.B) {
			// Plain and sealed recording alternate in the loop, each timed
			// on its own, so that the ratio compares them under the same
			// load.
			ev := ledger.Event{TenantID: "acme", SessionID: "sess-bench", EventType: "PreToolUse", TsUnixMs: 1, Payload: payload}
			var plain, sealed time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := ledger.Seal(ledger.Head{}, ev, ledger.Limits{}); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				stored, _, err := s.Seal("acme", "sess-bench", payload)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := ledger.Seal(ledger.Head{}, ledger.Event{TenantID: "acme", SessionID: "sess-bench", EventType: "PreToolUse", TsUnixMs: 1, Payload: stored}, ledger.Limits{}); err != nil {
					b.Fatal(err)
				}
				plain, sealed = plain+t1.Sub(t0), sealed+time.Since(t1)
			}
			b.ReportMetric(float64(sealed)/float64(plain), "ratio_vs_plain")
			b.ReportMetric(float64(sealed)/float64(b.N), "ns/sealed")
		})
	}
}
