package receipt

import (
	"os"
	"testing"
	"time"

	"github.com/agentledger/agentledger/ledger"
)

// BenchmarkSealRecord measures sealing a recorded verdict (a deny with its
// receipt, from a shipped recording) with and without its record
// signature, and checking it; ratio_vs_unsigned is against the unsigned
// seal measured in the same run.
func BenchmarkSealRecord(b *testing.B) {
	payload, err := os.ReadFile("testdata/verdict.json")
	if err != nil {
		b.Fatal(err)
	}
	s := newSigner(b)
	// The verdict judges seq 8 of its session: seal it right after it.
	head := ledger.Head{Seq: 8, Hash: "5455f6b87d0f89ba3a3ef2677d3d04f0e7ab255dda000a39182c7f704d52ae69"}
	ev := ledger.Event{TenantID: "default", SessionID: "cleanup-gone-wrong", EventType: ledger.EventVerdict, TsUnixMs: 1, Payload: payload}
	seal := func(signer ledger.RecordSigner) time.Duration {
		e := ev
		e.Signer = signer
		start := time.Now()
		for range 2000 {
			if _, err := ledger.Seal(head, e, ledger.Limits{}); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start) / 2000
	}
	raw := seal(nil)
	b.Run("unsigned", func(b *testing.B) {
		for b.Loop() {
			if _, err := ledger.Seal(head, ev, ledger.Limits{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("signed", func(b *testing.B) {
		e := ev
		e.Signer = s
		for b.Loop() {
			if _, err := ledger.Seal(head, e, ledger.Limits{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(raw), "ratio_vs_unsigned")
	})
	b.Run("check", func(b *testing.B) {
		e := ev
		e.Signer = s
		env, err := ledger.Seal(head, e, ledger.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		chk := NewChecker(Keyring{s.KeyID(): s.PublicKey()})
		for b.Loop() {
			if f := chk.Check(env); f != nil {
				b.Fatal(f)
			}
		}
	})
}
