package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/internal/proctest"
	"github.com/agentledger/agentledger/ledger/store"
)

// TestMCPProxyOverStdio runs `engine mcp-proxy` as a client would, in
// front of fixtures/mcpserver, with the official SDK client speaking each
// protocol generation: the allowed call is answered, the denied one never
// reaches the server; the proxied sessions verify with the engine's key
// and replay identically under the recorded policy.
func TestMCPProxyOverStdio(t *testing.T) {
	bin := buildEngine(t)
	server := filepath.Join(t.TempDir(), "mcpserver")
	if out, err := exec.Command("go", "build", "-o", server, "../../fixtures/mcpserver").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	data := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	manifest := "../../fixtures/manifests/coding-agent.json"
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			cmd := exec.Command(bin, "--data", data, "mcp-proxy", "--manifest", manifest, "--name", "filesystem", "--", server, "-calls", calls)
			ctx := context.Background()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			if cs.InitializeResult().ProtocolVersion != version {
				t.Fatalf("negotiated %s", cs.InitializeResult().ProtocolVersion)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "checkout/total.go"}})
			if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "func Total") {
				t.Fatalf("allowed call: %v %+v", err, res)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/root/.aws/credentials"}})
			if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "agentledger: deny") {
				t.Fatalf("denied call: %v %+v", err, res)
			}
			if err := cs.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	got, _ := os.ReadFile(calls)
	if strings.Fields(string(got)) == nil || strings.Join(strings.Fields(string(got)), " ") != "read_file read_file" {
		t.Fatalf("the server received %q: want the two allowed reads", got)
	}
	tools := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", tools+"/", "../ledger", "../replay").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(tools, "ledger"), "--data", data, "verify", "--deep", "--pubkey", filepath.Join(data, "keys", "receipt-ed25519.pub.pem")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK:") || !strings.Contains(string(out), "in 2 sessions") {
		t.Fatalf("ledger verify: %v\n%s", err, out)
	}
	out, err = exec.Command(filepath.Join(tools, "replay"), "exact", "--data", data, "--manifest", manifest, "--fail-on", "any").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "2 identical, 0 changed, 0 faulty") {
		t.Fatalf("replay exact: %v\n%s", err, out)
	}
}

// TestInstallMCP: `engine install --mcp claude-code` rewrites the
// project's .mcp.json so its stdio server starts behind the proxy; the
// server started from the file exactly as a host starts it (command, args,
// env) answers an allowed call and refuses a denied one, on record; and
// `engine uninstall --mcp` starts it as it was.
func TestInstallMCP(t *testing.T) {
	bin := buildEngine(t)
	server := filepath.Join(t.TempDir(), "mcpserver")
	if out, err := exec.Command("go", "build", "-o", server, "../../fixtures/mcpserver").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	project, data := t.TempDir(), t.TempDir()
	path := filepath.Join(project, ".mcp.json")
	os.WriteFile(path, []byte(`{"mcpServers": {"filesystem": {"command": "`+server+`", "args": [], "env": {"LEDGER_DATA": "`+data+`"}}}}`), 0o644)
	code, out, errs := run(t, "", "install", "--mcp", "claude-code", "--project", project, "--command", bin, "--manifest", "../../fixtures/manifests/coding-agent.json")
	if code != 0 || !strings.Contains(out, "filesystem: behind engine mcp-proxy") || !strings.Contains(out, "wrote "+path) {
		t.Fatalf("install --mcp: exit %d\n%s%s", code, out, errs)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	entry := cfg.MCPServers["filesystem"]
	cmd := exec.Command(entry.Command, entry.Args...)
	cmd.Dir = project
	cmd.Env = os.Environ()
	for k, v := range entry.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("the wrapped server: %v\n%s", err, b)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "README.md"}})
	if err != nil || res.IsError {
		t.Fatalf("allowed call: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/root/.aws/credentials"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "agentledger: deny") {
		t.Fatalf("denied call: %v %+v", err, res)
	}
	cs.Close()
	tools := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", tools+"/", "../ledger").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := exec.Command(filepath.Join(tools, "ledger"), "--data", data, "verify", "--deep").CombinedOutput(); err != nil || !strings.Contains(string(out), "in 1 sessions") {
		t.Fatalf("the proxied session is not on record: %v\n%s", err, out)
	}
	if code, out, errs = run(t, "", "uninstall", "--mcp", "claude-code", "--project", project); code != 0 || !strings.Contains(out, "filesystem: started as it was") {
		t.Fatalf("uninstall --mcp: exit %d\n%s%s", code, out, errs)
	}
	b, _ = os.ReadFile(path)
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.MCPServers["filesystem"].Command != server || len(cfg.MCPServers["filesystem"].Args) != 0 {
		t.Fatalf("after uninstall: %v\n%s", err, b)
	}

	// Installed with --monitor, the server starts behind the gateway in
	// monitor mode: the call enforcing denies reaches the server, and its
	// verdict is on record, not enforced.
	if code, out, errs = run(t, "", "install", "--mcp", "claude-code", "--project", project, "--command", bin, "--monitor"); code != 0 {
		t.Fatalf("install --mcp --monitor: exit %d\n%s%s", code, out, errs)
	}
	b, _ = os.ReadFile(path)
	if err := json.Unmarshal(b, &cfg); err != nil || !strings.Contains(strings.Join(cfg.MCPServers["filesystem"].Args, " "), "--mode monitor") {
		t.Fatalf("install --mcp --monitor wrote %v\n%s", err, b)
	}
	entry = cfg.MCPServers["filesystem"]
	cmd = exec.Command(entry.Command, entry.Args...)
	cmd.Dir = project
	cmd.Env = append(os.Environ(), "LEDGER_DATA="+data)
	if cs, err = mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil); err != nil {
		t.Fatalf("the server in monitor mode: %v\n%s", err, b)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/root/.aws/credentials"}})
	if err != nil || len(res.Content) == 0 || strings.Contains(res.Content[0].(*mcp.TextContent).Text, "agentledger: deny") {
		t.Fatalf("in monitor mode, the call enforcing denies: %v %+v", err, res)
	}
	cs.Close()
	out2, err := exec.Command(filepath.Join(tools, "ledger"), "--data", data, "export", "-o", "-").CombinedOutput()
	if err != nil || !strings.Contains(string(out2), `"enforced":false`) {
		t.Fatalf("no verdict recorded enforced false: %v\n%.2000s", err, out2)
	}
}

// TestGatewayAskApprovedOnItsListener: the gateway's asks live in its own
// process, so its listener serves the engine's API beside the MCP
// endpoint: an approver's token sees the open ask at /v1/pending and
// approves it at /v1/resolutions, and the held call goes through.
func TestGatewayAskApprovedOnItsListener(t *testing.T) {
	bin := buildEngine(t)
	server := filepath.Join(t.TempDir(), "mcpserver")
	if out, err := exec.Command("go", "build", "-o", server, "../../fixtures/mcpserver").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	raw, _ := os.ReadFile("../../fixtures/manifests/coding-agent.json")
	var m map[string]any
	json.Unmarshal(raw, &m)
	m["approval_required"] = append(m["approval_required"].([]any), "mcp__filesystem__create_issue")
	dir := t.TempDir()
	manifest := filepath.Join(dir, "manifest.json")
	b, _ := json.Marshal(m)
	os.WriteFile(manifest, b, 0o644)
	digest := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	tokens := filepath.Join(dir, "tokens.json")
	os.WriteFile(tokens, []byte(`{"tokens":[{"sha256":"`+digest("host-token")+`","tenant":"default","role":"host","name":"agent"},`+
		`{"sha256":"`+digest("approver-token")+`","tenant":"default","role":"approver","name":"oncall"}]}`), 0o600)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--data", t.TempDir(), "mcp-proxy", "--listen", addr, "--tokens", tokens, "--manifest", manifest, "--name", "filesystem", "--", server)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	url := "http://" + addr
	var cs *mcp.ClientSession
	for deadline := time.Now().Add(30 * time.Second); cs == nil; time.Sleep(50 * time.Millisecond) {
		transport := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerRT("host-token")}}
		cs, _ = mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if cs == nil && time.Now().After(deadline) {
			t.Fatal("the gateway never answered")
		}
	}
	defer cs.Close()
	done := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_issue", Arguments: map[string]any{"title": "x"}})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- res.Content[0].(*mcp.TextContent).Text
	}()
	get := func(path, token string, v any) {
		req, _ := http.NewRequest("GET", url+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(v)
	}
	var pending struct {
		Pending []struct {
			PendingID    string `json:"pending_id"`
			ActionSHA256 string `json:"action_sha256"`
		} `json:"pending"`
	}
	for deadline := time.Now().Add(30 * time.Second); len(pending.Pending) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no open ask at /v1/pending")
		}
		get("/v1/pending", "approver-token", &pending)
	}
	body := `{"pending_id":"` + pending.Pending[0].PendingID + `","resolution":"approved","action_sha256":"` + pending.Pending[0].ActionSHA256 + `"}`
	req, _ := http.NewRequest("POST", url+"/v1/resolutions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer approver-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("resolve: %v %v", err, resp)
	}
	resp.Body.Close()
	if text := <-done; !strings.Contains(text, "created issue #1") {
		t.Fatalf("after approval: %q", text)
	}
}

// bearerRT adds a bearer token to every request.
type bearerRT string

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestGatewayWaitsForItsUpstream (issue 40): `engine mcp-proxy --listen
// --upstream URL` started before its server waits for it, saying so, and
// then serves; while it runs, `ledger --data DIR` reads its record through
// it; stopped, or given up on a server that never comes, it leaves the data
// directory held by no one.
func TestGatewayWaitsForItsUpstream(t *testing.T) {
	bin := buildEngine(t)
	tools := t.TempDir()
	for _, pkg := range []string{"../ledger", "../../fixtures/mcpserver"} {
		if out, err := exec.Command("go", "build", "-o", tools+"/", pkg).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	raw, _ := os.ReadFile("../../fixtures/manifests/coding-agent.json")
	var m map[string]any
	json.Unmarshal(raw, &m)
	network := m["network"].(map[string]any)
	network["domains"] = append(network["domains"].([]any), "127.0.0.1")
	dir := t.TempDir()
	manifest := filepath.Join(dir, "manifest.json")
	b, _ := json.Marshal(m)
	os.WriteFile(manifest, b, 0o644)
	h := sha256.Sum256([]byte("host-token"))
	tokens := filepath.Join(dir, "tokens.json")
	os.WriteFile(tokens, []byte(`{"tokens":[{"sha256":"`+hex.EncodeToString(h[:])+`","tenant":"default","role":"host","name":"agent"}]}`), 0o600)
	freeAddr := func() string {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		return ln.Addr().String()
	}
	data, upAddr, gwAddr := t.TempDir(), freeAddr(), freeAddr()

	// A server that never comes: the gateway gives up after --upstream-wait,
	// exit 3, and holds nothing.
	out, err := exec.Command(bin, "--data", data, "mcp-proxy", "--listen", gwAddr, "--tokens", tokens, "--manifest", manifest,
		"--name", "filesystem", "--upstream", "http://"+upAddr+"/mcp", "--upstream-wait", "1s").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(out), "not up yet") {
		t.Fatalf("a server that never came: %v\n%s", err, out)
	}
	if h, held := store.HeldBy(data); held {
		t.Fatalf("the gateway that gave up left the data directory held: %+v", h)
	}

	var gwErr proctest.SyncBuffer
	gw := exec.Command(bin, "--data", data, "mcp-proxy", "--listen", gwAddr, "--tokens", tokens, "--manifest", manifest,
		"--name", "filesystem", "--upstream", "http://"+upAddr+"/mcp")
	gw.Stderr = &gwErr
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	defer gw.Process.Kill()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(gwErr.String(), "not up yet"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway does not say it waits:\n%s", gwErr.String())
		}
	}
	srv := exec.Command(filepath.Join(tools, "mcpserver"), "-http", upAddr)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	var cs *mcp.ClientSession
	for deadline := time.Now().Add(30 * time.Second); cs == nil; time.Sleep(50 * time.Millisecond) {
		transport := &mcp.StreamableClientTransport{Endpoint: "http://" + gwAddr, HTTPClient: &http.Client{Transport: bearerRT("host-token")}}
		cs, _ = mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if cs == nil && time.Now().After(deadline) {
			t.Fatalf("the gateway never served:\n%s", gwErr.String())
		}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "README.md"}})
	if err != nil || res.IsError {
		t.Fatalf("a call through the gateway: %v %+v", err, res)
	}
	out, err = exec.Command(filepath.Join(tools, "ledger"), "--data", data, "verify").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("ledger verify while the gateway runs: %v\n%s", err, out)
	}
	cs.Close()
	gw.Process.Signal(os.Interrupt)
	gw.Wait()
	if h, held := store.HeldBy(data); held {
		t.Fatalf("the stopped gateway left the data directory held: %+v", h)
	}
}
