package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/internal/proctest"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

func TestTailPrintsNewEnvelopes(t *testing.T) {
	srv, out, finish := startTail(t, "--tenant", "acme")
	appendUntil(t, srv, out, "acme", "tailed", "PostToolUse", "PostToolUse")
	finish()
	if !strings.Contains(out.String(), "acme/tailed #") {
		t.Fatalf("tail output: %s", out.String())
	}
}

// startTail runs `ledger tail ARGS` against a fresh store until finish,
// which fails t unless it exited 0.
func startTail(t *testing.T, args ...string) (*store.Store, *proctest.SyncBuffer, func()) {
	t.Helper()
	ctx := context.Background()
	srv, err := store.Open(ctx, store.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	tctx, stop := context.WithCancel(ctx)
	var out, errb proctest.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cmdline.Run(tctx, newApp(strings.NewReader(""), &out, &errb), append([]string{"ledger", "tail", "--nats", srv.ClientURL()}, args...), &errb)
	}()
	return srv, &out, func() {
		t.Helper()
		stop()
		if code := <-done; code != 0 {
			t.Fatalf("tail exit %d: %s", code, errb.String())
		}
	}
}

// appendUntil stores events of type typ in tenant/session until the
// tail's output shows want: tail follows what is stored after it starts.
func appendUntil(t *testing.T, srv *store.Store, out *proctest.SyncBuffer, tenant, session, typ, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; !strings.Contains(out.String(), want); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("tail printed no %q: %q", want, out.String())
		}
		ev := ledger.Event{TenantID: tenant, SessionID: session, EventType: typ, TsUnixMs: 1763830000000, Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))}
		if _, err := srv.Append(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
