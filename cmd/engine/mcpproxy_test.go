package main

import (
	"context"
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
