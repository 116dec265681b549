package store_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

func ExampleStore_Append() {
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := store.Open(ctx, store.Config{DataDir: dir}) // embedded server, no listener
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for i := 0; i < 3; i++ {
		e, err := s.Append(ctx, ledger.Event{SessionID: "sess-1", EventType: "PreToolUse", TsUnixMs: 1763830000000,
			Payload: []byte(fmt.Sprintf(`{"step":%d}`, i))})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(e.TenantID(), e.SessionID(), e.Seq())
	}
	report, _ := s.Verify(ctx, store.Filter{}, ledger.Fast, nil)
	fmt.Println(report.OK(), report.Envelopes)
	// Output:
	// default sess-1 0
	// default sess-1 1
	// default sess-1 2
	// true 3
}
