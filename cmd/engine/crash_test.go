package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// TestEngineCrashSurvival SIGKILLs `engine serve` five times while four
// clients send hook events, restarting it on the same data each time.
// Every decision a client received with a recorded seq is in the ledger:
// the event at that seq with its hash, its verdict right after it with the
// answered decision; nothing is stored twice and every chain verifies.
func TestEngineCrashSurvival(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts engine serve five times")
	}
	bin := buildEngine(t)
	data := t.TempDir()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	cmd := startEngine(t, bin, data, addr)

	type answer struct {
		session     string
		seq         uint64
		eventHash   string
		verdictHash string
		decision    string
	}
	var (
		mu      sync.Mutex
		answers []answer
		wg      sync.WaitGroup
	)
	ctx, stop := context.WithCancel(context.Background())
	client := &http.Client{Timeout: 10 * time.Second}
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			session := fmt.Sprintf("crash-%d", w)
			for i := 0; ctx.Err() == nil; i++ {
				ev := fmt.Sprintf(`{"hook_point":"PreToolUse","session_id":%q,"timestamp":"2026-11-22T09:%02d:%02dZ","host_id":"claude-code","aarts_version":"0.1","turn_id":"t","tool_name":"shell","tool_name_native":"Bash","artifacts":[],"tool_input":{"command":"go test ./p%d/..."}}`,
					session, (i/60)%60, i%60, i)
				resp, err := client.Post("http://"+addr+"/v1/hooks", "application/json", bytes.NewReader([]byte(ev)))
				if err != nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var a struct {
					Decision    string `json:"decision"`
					Seq         uint64 `json:"seq"`
					EventHash   string `json:"event_hash"`
					VerdictHash string `json:"verdict_hash"`
				}
				if resp.StatusCode != 200 || json.Unmarshal(b, &a) != nil || a.EventHash == "" {
					continue // not recorded (the engine was going down): not acknowledged
				}
				mu.Lock()
				answers = append(answers, answer{session, a.Seq, a.EventHash, a.VerdictHash, a.Decision})
				mu.Unlock()
			}
		}(w)
	}
	for k := 0; k < 5; k++ {
		time.Sleep(500 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		cmd = startEngine(t, bin, data, addr)
	}
	time.Sleep(500 * time.Millisecond)
	stop()
	wg.Wait()
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()

	st, err := store.Open(context.Background(), store.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	type rec struct {
		hash, kind string
		payload    []byte
	}
	stored := map[string]map[uint64]rec{}
	twice := 0
	err = st.ReadAll(context.Background(), store.Filter{}, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil {
			return err
		}
		if stored[e.SessionID()] == nil {
			stored[e.SessionID()] = map[uint64]rec{}
		}
		if _, dup := stored[e.SessionID()][e.Seq()]; dup {
			twice++
		}
		stored[e.SessionID()][e.Seq()] = rec{e.Hash(), e.EventType(), e.Payload()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, a := range answers {
		ev, v := stored[a.session][a.seq], stored[a.session][a.seq+1]
		var vr struct {
			ForSeq  uint64 `json:"for_seq"`
			Verdict struct {
				Decision string `json:"decision"`
			} `json:"verdict"`
		}
		json.Unmarshal(v.payload, &vr)
		if ev.hash != a.eventHash || v.hash != a.verdictHash || v.kind != ledger.EventVerdict || vr.ForSeq != a.seq || vr.Verdict.Decision != a.decision {
			lost++
		}
	}
	rep, err := st.Verify(context.Background(), store.Filter{}, ledger.Deep, nil)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Err())
	}
	t.Logf("5 kills: %d decisions answered with a record, %d not found as answered, %d stored twice", len(answers), lost, twice)
	if len(answers) == 0 || lost != 0 || twice != 0 {
		t.Fatalf("%d answered decisions, %d lost, %d stored twice", len(answers), lost, twice)
	}
}
