package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/natstest"
	"github.com/agentledger/agentledger/ledger"
)

// buildLedger builds the real binary once per test run.
func buildLedger(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ledger")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) int { return natstest.LoopbackPort(t) }

// startServe runs `ledger serve` and waits until it accepts connections.
func startServe(t *testing.T, bin, data string) string {
	t.Helper()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "serve", "--data", data, "--listen", addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("serve did not stop on SIGTERM: %s", stderr.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return "nats://" + addr
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("serve did not listen on %s: %s", addr, stderr.String())
	return ""
}

// TestSeparateProcessesOneChain: four `ledger append --nats` processes
// writing 500 events each to one session through one `ledger serve` yield one
// chain of 2000 contiguous envelopes.
func TestSeparateProcessesOneChain(t *testing.T) {
	bin := buildLedger(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	url := startServe(t, bin, data)
	const procs, each = 4, 500
	var wg sync.WaitGroup
	outs := make([][]byte, procs)
	errs := make([]error, procs)
	for p := 0; p < procs; p++ {
		var b strings.Builder
		for i := 0; i < each; i++ {
			fmt.Fprintf(&b, `{"session_id":"shared","event_type":"PreToolUse","ts_unix_ms":%d,"payload":{"writer":%d,"i":%d}}`+"\n", 1763830000000+i, p, i)
		}
		in := filepath.Join(dir, fmt.Sprintf("in%d.ndjson", p))
		os.WriteFile(in, []byte(b.String()), 0o600)
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			cmd := exec.Command(bin, "append", "--nats", url, "--data", data, "--format", "json", in)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			outs[p], errs[p] = cmd.Output()
			if errs[p] != nil {
				errs[p] = fmt.Errorf("writer %d: %w: %s", p, errs[p], stderr.String())
			}
		}(p)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := make(map[uint64]bool)
	for p, out := range outs {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != each {
			t.Fatalf("writer %d printed %d lines, want %d", p, len(lines), each)
		}
		for _, l := range lines {
			var a appended
			if err := json.Unmarshal([]byte(l), &a); err != nil {
				t.Fatal(err)
			}
			if seen[a.Seq] {
				t.Fatalf("seq %d acknowledged twice", a.Seq)
			}
			seen[a.Seq] = true
		}
	}
	out, err := exec.Command(bin, "verify", "--nats", url, "--data", data, "--deep", "--format", "json").Output()
	if err != nil {
		t.Fatalf("verify: %v: %s", err, out)
	}
	var rep ledger.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Sessions) != 1 || rep.Sessions[0].Count != procs*each || rep.Sessions[0].HeadSeq != procs*each-1 {
		t.Fatalf("got %s", out)
	}
	for s := uint64(0); s < procs*each; s++ {
		if !seen[s] {
			t.Fatalf("seq %d never acknowledged", s)
		}
	}
}
