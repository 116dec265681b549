package engine

import (
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/ledger/store"
)

// TestSessionEndTakesACheckpoint: a recorded SessionEnd triggers a signed
// checkpoint that holds the session at its last seq, written as a file and
// recorded in the ledger's checkpoint session.
func TestSessionEndTakesACheckpoint(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := openStore(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	pub, key, _ := ed25519.GenerateKey(nil)
	dir := t.TempDir()
	cp := NewCheckpointer(st, key, dir, nil)
	errs := make(chan error, 10)
	go cp.Run(ctx, 0, func(err error) { errs <- err })
	e := newEngine(t, decider(t, "coding-agent.json"), st, WithCheckpoints(cp))
	for _, p := range []string{
		`{"hook_point":"SessionStart","session_id":"ends","timestamp":"2026-11-22T09:00:00Z","host_id":"claude-code","aarts_version":"0.1","source":"startup"}`,
		`{"hook_point":"SessionEnd","session_id":"ends","timestamp":"2026-11-22T09:00:05Z","host_id":"claude-code","aarts_version":"0.1","reason":"logout"}`,
	} {
		if _, err := e.Decide(ctx, "", []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	var files []string
	for deadline := time.Now().Add(20 * time.Second); len(files) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		files, _ = filepath.Glob(filepath.Join(dir, "checkpoint-*.note"))
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
	if len(files) == 0 {
		t.Fatal("no checkpoint was written after SessionEnd")
	}
	raw, _ := os.ReadFile(files[0])
	c, err := checkpoint.Open(raw, pub)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, h := range c.Heads {
		if h.Session == "ends" && h.Seq == 3 {
			found = true
		}
	}
	if !found {
		t.Fatalf("checkpoint lacks session ends at seq 3: %+v", c.Heads)
	}
	faults, err := c.Check(ctx, st.HashAt)
	if err != nil || len(faults) != 0 {
		t.Fatalf("the ledger does not match its own checkpoint: %v %v", err, faults)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if infos, _ := st.Sessions(ctx, store.Filter{Tenant: CheckpointSession.Tenant}); len(infos) == 1 {
			return
		}
	}
	t.Fatal("the checkpoint was not recorded in the ledger")
}
