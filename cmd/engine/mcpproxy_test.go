package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
}
