package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
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

// TestEngineFailureSurvivesKill: while the ledger's server is down, engine
// serve answers ENGINE_FAILURE (deny); each such answer is written to the
// engine's spool before it is returned, so a SIGKILL right after cannot
// erase it: after both restart, every failure answered is in the ledger.
func TestEngineFailureSurvivesKill(t *testing.T) {
	bin := buildEngine(t)
	ctx := context.Background()
	ledgerData, engineData := t.TempDir(), t.TempDir()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	natsAddr := l.Addr().String()
	l.Close()
	srv, err := store.Open(ctx, store.Config{DataDir: ledgerData, Listen: natsAddr})
	if err != nil {
		t.Fatal(err)
	}
	natsURL := srv.ClientURL() // with the writer's credentials
	l, _ = net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--nats", natsURL, "--data", engineData, "--listen", addr, "--insecure-dev", "--timeout", "1s")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if resp, err := http.Post("http://"+addr+"/v1/version", "application/json", strings.NewReader(`{"aarts_version":"0.1"}`)); err == nil {
				resp.Body.Close()
				return cmd
			}
		}
		t.Fatal("engine serve did not come up")
		return nil
	}
	post := func(i int) map[string]any {
		ev := fmt.Sprintf(`{"hook_point":"PreToolUse","session_id":"down","timestamp":"2026-11-23T10:00:00Z","host_id":"my-agent","aarts_version":"0.1","turn_id":"t%d","tool_name":"shell","tool_name_native":"exec","artifacts":[],"tool_input":{"command":"ls dir-%d"}}`, i, i)
		resp, err := http.Post("http://"+addr+"/v1/hooks", "application/json", strings.NewReader(ev))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	cmd := start()
	if r := post(0); r["decision"] != "allow" {
		t.Fatalf("first event: %v", r)
	}
	srv.Close() // the ledger goes down
	var failed []int
	for i := 1; i <= 3; i++ {
		r := post(i)
		if r["reason_code"] != "ENGINE_FAILURE" || r["decision"] != "deny" {
			t.Fatalf("event %d with the ledger down: %v, want a deny ENGINE_FAILURE", i, r)
		}
		failed = append(failed, i)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	if srv, err = store.Open(ctx, store.Config{DataDir: ledgerData, Listen: natsAddr}); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cmd = start() // drains its spool at start
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	found := map[string]bool{}
	err = srv.ReadSession(ctx, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "down"}, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err == nil && e.EventType() == ledger.EventEngineFailure {
			var f struct {
				Event    map[string]any `json:"event"`
				Answered string         `json:"answered"`
			}
			json.Unmarshal(e.Payload(), &f)
			found[fmt.Sprint(f.Event["turn_id"])+"/"+f.Answered] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range failed {
		if !found[fmt.Sprintf("t%d/deny", i)] {
			t.Errorf("the ENGINE_FAILURE answered for event %d is not in the ledger after the restart (found %v)", i, found)
		}
	}
	if rep, err := srv.Verify(ctx, store.Filter{}, ledger.Deep, nil); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Err())
	}
}
