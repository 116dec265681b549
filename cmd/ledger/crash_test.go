package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// server is a `ledger serve` process that the test kills and restarts on
// the same data directory and port.
type server struct {
	t    *testing.T
	bin  string
	args []string
	addr string
	cmd  *exec.Cmd
	logs bytes.Buffer
}

func (s *server) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, append([]string{"serve", "--listen", s.addr}, s.args...)...)
	s.cmd.Stderr = &s.logs
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("serve did not come up: %s", s.logs.String())
}

func (s *server) kill() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

type ack struct {
	key  ledger.SessionKey
	seq  uint64
	hash string
}

// TestCrashSurvival SIGKILLs `ledger serve` five times under a concurrent
// append load (four writers on sessions of their own and on one shared
// session) and restarts it on the same data directory. Every append a
// writer saw acknowledged must be stored, at its seq, with its hash, once;
// every chain verifies; appends resume after the last restart. In --sync
// always nothing acknowledged may be lost; for --sync interval the loss is
// measured (a process kill leaves the page cache to the kernel, so it
// should be none too; a machine crash could lose up to the interval).
func TestCrashSurvival(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a server five times")
	}
	bin := buildLedger(t)
	for _, mode := range []string{"always", "interval"} {
		t.Run("sync="+mode, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			srv := &server{t: t, bin: bin, addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
				args: []string{"--data", data, "--sync", mode, "--sync-interval", "1s"}}
			srv.start()
			defer srv.kill()
			url := "nats://" + srv.addr
			ctx, stop := context.WithCancel(context.Background())
			var (
				mu       sync.Mutex
				acks     []ack
				failures atomic.Int64
				wg       sync.WaitGroup
			)
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					st, err := store.Open(context.Background(), store.Config{URL: url, DataDir: data, RetryFor: time.Minute, Timeout: 2 * time.Second})
					if err != nil {
						t.Error(err)
						return
					}
					defer st.Close()
					for i := 0; ctx.Err() == nil; i++ {
						session := fmt.Sprintf("writer-%d", w)
						if i%2 == 1 {
							session = "shared"
						}
						e, err := st.Append(context.Background(), ledger.Event{TenantID: "crash", SessionID: session, EventType: "PreToolUse",
							TsUnixMs: 1763830000000 + int64(i), Payload: []byte(fmt.Sprintf(`{"writer":%d,"i":%d}`, w, i))})
						if err != nil {
							failures.Add(1) // not acknowledged: may or may not be stored
							continue
						}
						mu.Lock()
						acks = append(acks, ack{e.Key(), e.Seq(), e.Hash()})
						mu.Unlock()
					}
				}(w)
			}
			for k := 0; k < 5; k++ {
				time.Sleep(400 * time.Millisecond)
				srv.kill()
				srv.start()
			}
			mu.Lock()
			before := len(acks)
			mu.Unlock()
			time.Sleep(500 * time.Millisecond)
			stop()
			wg.Wait()
			if len(acks) <= before {
				t.Fatalf("appends did not resume after the last restart (%d acknowledged before, %d after)", before, len(acks))
			}
			st, err := store.Open(context.Background(), store.Config{URL: url, DataDir: data})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			stored := map[ledger.SessionKey]map[uint64]string{}
			copies := 0
			err = st.ReadAll(context.Background(), store.Filter{Tenant: "crash"}, func(m store.Msg) error {
				e, err := ledger.Decode(m.Data, ledger.Limits{})
				if err != nil {
					return err
				}
				if stored[e.Key()] == nil {
					stored[e.Key()] = map[uint64]string{}
				}
				if _, dup := stored[e.Key()][e.Seq()]; dup {
					copies++
				}
				stored[e.Key()][e.Seq()] = e.Hash()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			lost := 0
			for _, a := range acks {
				if stored[a.key][a.seq] != a.hash {
					lost++
				}
			}
			rep, err := st.Verify(context.Background(), store.Filter{Tenant: "crash"}, ledger.Deep, nil)
			if err != nil || !rep.OK() {
				t.Fatalf("verify after the crashes: %v %v", err, rep.Err())
			}
			t.Logf("sync=%s: 5 kills, %d appends acknowledged, %d lost, %d stored twice, %d unacknowledged attempts", mode, len(acks), lost, copies, failures.Load())
			if copies != 0 {
				t.Errorf("%d envelopes stored twice", copies)
			}
			if mode == "always" && lost != 0 {
				t.Errorf("%d acknowledged appends lost under --sync always", lost)
			}
		})
	}
}
