package ledger_test

import (
	"bytes"
	"fmt"

	"github.com/agentledger/agentledger/ledger"
)

func ExampleSeal() {
	ev := ledger.Event{TenantID: "acme", SessionID: "sess-1", EventType: "PreToolUse", TsUnixMs: 1763830000000,
		Payload: []byte(`{"tool_name": "Bash", "tool_input": {"command": "ls"}}`)}
	genesis, _ := ledger.Seal(ledger.Head{}, ev, ledger.Limits{})
	next, _ := ledger.Seal(genesis.Head(), ev, ledger.Limits{})
	fmt.Println(genesis.Seq(), genesis.PrevHash() == "", next.Seq(), next.PrevHash() == genesis.Hash())

	var bundle bytes.Buffer
	w := ledger.NewBundleWriter(&bundle)
	w.Write(genesis)
	w.Write(next)
	w.Flush()
	report, _ := ledger.VerifyBundle(&bundle, ledger.Deep, ledger.Limits{})
	fmt.Println(report.OK(), report.Envelopes)
	// Output:
	// 0 true 1 true
	// true 2
}
