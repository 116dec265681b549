package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/internal/natstest"
	"github.com/agentledger/agentledger/replay/distribute"
)

// TestDistributedExactIsTheSameReport runs `replay exact --distribute`
// against a real nats-server (in process) with three `replay worker`
// processes over the coding-agent recordings copied twelve times (some 300
// sessions), one worker killed with SIGKILL once reports are coming in,
// while it works: the report is the report `replay exact` writes in one
// process, byte for byte, with the same exit code.
func TestDistributedExactIsTheSameReport(t *testing.T) {
	url := natstest.JetStream(t)
	bin := filepath.Join(t.TempDir(), "replay")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	loose := fx + "/manifests/coding-agent-loose.json"
	// Twelve copies of the recordings, each a bundle directory of its own.
	var bundles []string
	for i := range 12 {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("copy-%02d", i))
		os.MkdirAll(dir, 0o755)
		files, _ := filepath.Glob(filepath.Join(sessions, "*.ndjson"))
		for _, f := range files {
			raw, _ := os.ReadFile(f)
			os.WriteFile(filepath.Join(dir, filepath.Base(f)), raw, 0o644)
		}
		bundles = append(bundles, "--bundle", dir)
	}
	wantCode, want, _ := run(t, append(append([]string{"exact"}, bundles...), "--manifest", loose, "--format", "json")...)
	if wantCode != 1 || !strings.Contains(want, `"changed_sessions": 12`) {
		t.Fatalf("the local run: exit %d\n%.300s", wantCode, want)
	}
	var workers []*exec.Cmd
	var logs []*bytes.Buffer
	for range 3 {
		w := exec.Command(bin, "worker", "--nats", url, "--manifest", loose, "--ack-wait", "2s")
		var log bytes.Buffer
		w.Stderr = &log
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		workers, logs = append(workers, w), append(logs, &log)
	}
	// The survivors stop when told, saying what they did.
	defer func() {
		for i, w := range workers[1:] {
			w.Process.Signal(syscall.SIGTERM)
			if err := w.Wait(); err != nil || !strings.Contains(logs[i+1].String(), "sessions replayed") {
				t.Errorf("worker %d on SIGTERM: %v\n%s", i+1, err, logs[i+1])
			}
		}
	}()
	coord := exec.Command(bin, append(append([]string{"exact", "--distribute", "--nats", url}, bundles...), "--manifest", loose, "--format", "json", "--ack-wait", "2s")...)
	var out, errs bytes.Buffer
	coord.Stdout, coord.Stderr = &out, &errs
	if err := coord.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill a worker once the reports are coming in: it is at work.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	var atKill uint64
	for i := 0; ; i++ {
		st, err := js.Stream(context.Background(), distribute.ResultsStream)
		if err == nil {
			if info, err := st.Info(context.Background()); err == nil && info.State.Msgs >= 20 {
				atKill = info.State.Msgs
				break
			}
		}
		if i == 3000 {
			t.Fatal("no reports came in")
		}
		time.Sleep(10 * time.Millisecond)
	}
	workers[0].Process.Signal(syscall.SIGKILL)
	workers[0].Wait()
	err = coord.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != wantCode || !strings.Contains(errs.String(), "gate failed") {
		t.Fatalf("distributed: exit %d, want %d: %s", code, wantCode, errs.String())
	}
	if total := decode(t, want).Summary.Sessions; atKill >= uint64(total) {
		t.Fatalf("the worker was killed after all %d reports were in: it killed nothing mid-run", total)
	}
	if out.String() != want {
		t.Fatalf("the distributed report differs from the local one:\n%s\nwant\n%s", out.String(), want)
	}
	// --distribute without --nats is a usage error.
	if code, _, errs := run(t, "exact", "--distribute", "--bundle", sessions, "--data", t.TempDir()); code != 2 || !strings.Contains(errs, "needs --nats") {
		t.Errorf("--distribute without --nats: exit %d %s", code, errs)
	}
}
