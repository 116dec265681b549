package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestTailPrintsNewEnvelopes(t *testing.T) {
	ctx := context.Background()
	srv, err := store.Open(ctx, store.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tctx, stop := context.WithCancel(ctx)
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cmdline.Run(tctx, newApp(strings.NewReader(""), &out, &errb), []string{"ledger", "tail", "--nats", srv.ClientURL(), "--tenant", "acme"}, &errb)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; !strings.Contains(out.String(), "PostToolUse"); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("tail printed nothing: %q %q", out.String(), errb.String())
		}
		ev := ledger.Event{TenantID: "acme", SessionID: "tailed", EventType: "PostToolUse", TsUnixMs: 1763830000000, Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))}
		if _, err := srv.Append(ctx, ev); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("tail exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "acme/tailed #") {
		t.Fatalf("tail output: %s", out.String())
	}
}
