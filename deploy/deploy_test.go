// Package deploy holds the files that deploy agentledger on a JetStream
// cluster; its test runs them.
package deploy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
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
	"github.com/agentledger/agentledger/internal/proctest"
)

// build builds nats-server (the version go.mod pins), engine, ledger and
// replay.
func build(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "github.com/nats-io/nats-server/v2", "./cmd/engine", "./cmd/ledger", "./cmd/replay")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// start runs a program until the test ends, its output kept for a failure.
func start(t *testing.T, name string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	out := &proctest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s %s:\n%s", filepath.Base(name), strings.Join(args, " "), out.String())
		}
	})
	return cmd
}

func waitFor(t *testing.T, what, url string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
	}
	t.Fatalf("%s did not come up (%s)", what, url)
}

// TestDeployedFleet starts the cluster of deploy/nats as three real
// nats-server processes and two engines in one fleet as the engine user:
// calls sent to either are recorded, the auditor verifies the ledger and
// cannot write to it, and the engine user cannot delete the stream.
func TestDeployedFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nats-server and runs a three-node cluster")
	}
	bin := build(t)
	pass := map[string]string{"ENGINE_PASSWORD": "engine-secret-1", "AUDITOR_PASSWORD": "auditor-secret-2", "REPLAY_PASSWORD": "replay-secret-3"}
	var common []string
	for k, v := range pass {
		common = append(common, k+"="+v)
	}
	var clientPorts, clusterPorts, httpPorts []int
	for range 3 {
		clientPorts, clusterPorts, httpPorts = append(clientPorts, natstest.LoopbackPort(t)), append(clusterPorts, natstest.LoopbackPort(t)), append(httpPorts, natstest.LoopbackPort(t))
	}
	for i := range 3 {
		common = append(common, fmt.Sprintf("NATS_ROUTE_%d=nats://127.0.0.1:%d", i+1, clusterPorts[i]))
	}
	for i := range 3 {
		env := append(common, fmt.Sprintf("NATS_NAME=n%d", i+1), fmt.Sprintf("NATS_PORT=%d", clientPorts[i]),
			fmt.Sprintf("NATS_HTTP_PORT=%d", httpPorts[i]), fmt.Sprintf("NATS_CLUSTER_PORT=%d", clusterPorts[i]), "NATS_STORE="+t.TempDir())
		start(t, filepath.Join(bin, "nats-server"), env, "-c", "deploy/nats/cluster.conf")
	}
	for i := range 3 {
		waitFor(t, fmt.Sprintf("n%d", i+1), fmt.Sprintf("http://127.0.0.1:%d/healthz?js-enabled-only=true", httpPorts[i]))
	}
	urlOf := func(user string) string {
		var urls []string
		for _, p := range clientPorts {
			urls = append(urls, fmt.Sprintf("nats://%s:%s@127.0.0.1:%d", user, pass[strings.ToUpper(user)+"_PASSWORD"], p))
		}
		return strings.Join(urls, ",")
	}

	var addrs []string
	var first string
	for i := range 2 {
		data := t.TempDir()
		if i == 0 {
			first = data
		} else {
			proctest.CopyDir(t, filepath.Join(first, "keys"), filepath.Join(data, "keys"))
		}
		addr := fmt.Sprintf("127.0.0.1:%d", natstest.LoopbackPort(t))
		start(t, filepath.Join(bin, "engine"), nil, "serve", "--data", data, "--nats", urlOf("engine"), "--replicas", "3",
			"--fleet", "--fleet-id", fmt.Sprintf("e%d", i+1), "--listen", addr, "--insecure-dev", "--lease-ttl", "2s",
			"--manifest", "fixtures/manifests/coding-agent.json", "--checkpoint-every", "-1")
		waitFor(t, "engine", "http://"+addr+"/healthz")
		addrs = append(addrs, addr)
	}
	// The second engine is handed its share after three rounds (or takes
	// every partition, when the first could not create its leases on a
	// cluster still settling): wait until each engine owns one.
	for i, addr := range addrs {
		id := fmt.Sprintf("e%d", i+1)
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if bytes.Contains(b, []byte(`agentledger_fleet_partition_owned{engine="`+id+`"`)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s owns no partition:\n%s", id, b)
			}
		}
	}
	engines := map[string]bool{}
	for i := range 40 {
		body := fmt.Sprintf(`{"hook_point":"PreToolUse","session_id":"deploy-%d","timestamp":"2026-11-22T09:00:%02dZ","host_id":"claude-code","aarts_version":"0.1","turn_id":"t","tool_name":"shell","tool_name_native":"Bash","artifacts":[],"tool_input":{"command":"go test ./..."}}`, i%8, i)
		resp, err := http.Post("http://"+addrs[i%2]+"/v1/hooks", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"event_hash"`)) {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, b)
		}
		if i := bytes.Index(b, []byte(`"engine":"`)); i >= 0 {
			engines[string(b[i+10:i+12])] = true
		}
	}
	if len(engines) != 2 {
		t.Fatalf("calls decided by %v, want both engines", engines)
	}

	verify := exec.Command(filepath.Join(bin, "ledger"), "--nats", urlOf("auditor"), "verify")
	verify.Dir = ".."
	if out, err := verify.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("OK: 80 envelopes")) {
		t.Fatalf("ledger verify as auditor: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, err := nats.Connect(urlOf("auditor"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	if _, err := js.Publish(pctx, "ledger.default.deploy-0", []byte(`{}`)); err == nil {
		t.Fatal("the auditor wrote to the ledger")
	}
	pcancel()
	ec, err := nats.Connect(urlOf("engine"))
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	ejs, _ := jetstream.New(ec)
	dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
	defer dcancel()
	if err := ejs.DeleteStream(dctx, "LEDGER"); err == nil {
		t.Fatal("the engine user deleted the ledger's stream")
	}
	if _, err := ejs.Stream(ctx, "LEDGER"); err != nil {
		t.Fatalf("the stream after the refused delete: %v", err)
	}

	// The replay user runs a distributed replay: the same report as one
	// process writes.
	manifest := "fixtures/manifests/coding-agent-loose.json"
	start(t, filepath.Join(bin, "replay"), nil, "worker", "--nats", urlOf("replay"), "--manifest", manifest)
	run := func(args ...string) []byte {
		cmd := exec.Command(filepath.Join(bin, "replay"), args...)
		cmd.Dir = ".."
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil && out.Len() == 0 {
			t.Fatalf("replay %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
		return out.Bytes()
	}
	one := run("exact", "--bundle", "fixtures/sessions/coding-agent", "--manifest", manifest)
	spread := run("exact", "--distribute", "--nats", urlOf("replay"), "--bundle", "fixtures/sessions/coding-agent", "--manifest", manifest)
	if len(one) == 0 || !bytes.Equal(one, spread) {
		t.Fatalf("replay as the replay user:\n%s\none process:\n%s", spread, one)
	}
}
