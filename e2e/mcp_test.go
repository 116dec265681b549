package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaudeCodeMCPBehindGateway: a Claude Code project whose MCP server
// runs behind engine mcp-proxy (engine install claude-code --mcp), with
// agentledger's hooks too. The hook and the gateway see the same call, in
// two sessions. With the built-in manifest, which names no MCP server, the
// gateway serves the servers the host's configuration starts. The gateway
// pins the server's tools, and the hook's record
// of a call carries the gateway's pin, so both judge it alike:
//
//   - a read-only tool goes on after the session is tainted, its record
//     naming the gateway's read-only pin;
//   - a tool its server does not declare read-only, named for sending, is
//     asked at the hook after taint, where Claude Code can answer it,
//     instead of being let through to the gateway, which holds it for an
//     approver while the host waits.
func TestClaudeCodeMCPBehindGateway(t *testing.T) {
	for _, c := range []struct {
		name, server string
		manifest     bool
	}{
		{"manifest", "filesystem", true}, // coding-agent's, which names the server
		{"builtin", "shop", false},       // names no server: the host's configuration chooses
	} {
		t.Run(c.name, func(t *testing.T) {
			var mcpArgs, hookArgs []string
			if c.manifest {
				manifest := ruleManifest(t)
				mcpArgs = []string{"--manifest", manifest}
				hookArgs = []string{"--command", `"$CLAUDE_PROJECT_DIR"/.agentledger/hook claude-code --manifest ` + manifest}
			} else {
				mcpArgs = []string{}
			}
			setup := func(work string) []string {
				cfg := map[string]any{"mcpServers": map[string]any{c.server: map[string]any{"command": filepath.Join(buildPrograms(t), "mcpserver")}}}
				raw, _ := json.Marshal(cfg)
				if err := os.WriteFile(filepath.Join(work, ".mcp.json"), raw, 0o644); err != nil {
					t.Fatal(err)
				}
				return []string{"--mcp-config", filepath.Join(work, ".mcp.json"), "--strict-mcp-config"}
			}
			tool := func(name string) string { return "mcp__" + c.server + "__" + name }
			r := runClaudeWith(t, []turn{
				{Calls: []call{{tool("read_file"), map[string]any{"path": "README.md"}}}},
				{Calls: []call{{tool("read_file"), map[string]any{"path": "checkout/total.go"}}}},
				{Calls: []call{{tool("create_issue"), map[string]any{"title": "totals", "body": "see checkout/total.go"}}}},
				{Text: "Task finished."},
			}, "bypassPermissions", claudeOptions{setup: setup, mcp: mcpArgs, install: hookArgs})
			_, results := r.model.calls()
			if !strings.Contains(results["toolu_00_0"], "A small web shop") {
				t.Fatalf("the first read's result %q: want the file (is the server behind the gateway running?); Claude Code printed %v", results["toolu_00_0"], r.result)
			}
			if !strings.Contains(results["toolu_01_0"], "func Total") {
				t.Errorf("the read after the first result: %q, want the file", results["toolu_01_0"])
			}
			pre := r.byTurn("PreToolUse")
			read := pre["toolu_01_0"]
			if decisionOf(read.verdict) != "allow" {
				t.Errorf("the read after the first result: verdict %v, want it not asked", read.verdict)
			}
			if pin, _ := read.event["tool_pin"].(map[string]any); pin["read_only"] != true || pin["status"] != "pinned" || pin["via"] != "gateway" {
				t.Errorf("the hook's record of the read: tool_pin %v, want the gateway's read-only pin", read.event["tool_pin"])
			}
			if v := pre["toolu_02_0"].verdict; decisionOf(v) != "ask" {
				t.Errorf("create_issue after taint: verdict %v, want it asked at the hook", v)
			}
			if strings.Contains(results["toolu_02_0"], "filed") {
				t.Errorf("create_issue ran: %q", results["toolu_02_0"])
			}
			r.noUnboundResults(t)
		})
	}
}

// decisionOf is a recorded verdict's decision.
func decisionOf(v map[string]any) any {
	inner, _ := v["verdict"].(map[string]any)
	return inner["decision"]
}

// TestGeminiMCPBehindGateway: Gemini CLI with its project's MCP server put
// behind the gateway (engine install gemini --mcp) and agentledger's hooks.
// Gemini starts its MCP servers before any hook runs: the gateway then
// starts the local engine the hooks use rather than holding the data
// directory (which refused the hooks' engine: every call was blocked). A
// read-only tool is not asked after the first result (the hook's record
// carries the gateway's pin); a tool that files an issue after taint is
// asked at the hook and does not run.
func TestGeminiMCPBehindGateway(t *testing.T) {
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"shop": map[string]any{"command": filepath.Join(buildPrograms(t), "mcpserver")}}})
	r, _ := runGemini(t, []turn{
		{Calls: []call{{"mcp_shop_read_file", map[string]any{"path": "README.md"}}}},
		{Calls: []call{{"mcp_shop_read_file", map[string]any{"path": "checkout/total.go"}}}},
		{Calls: []call{{"mcp_shop_create_issue", map[string]any{"title": "totals", "body": "see checkout/total.go"}}}},
		{Text: "Task finished."},
	}, "yolo", hostOptions{mcp: true, files: map[string]string{".gemini/settings.json": string(cfg)}})
	results := r.results()
	if !strings.Contains(results["toolu_00_0"], "A small web shop") {
		t.Fatalf("the first read's result %q: want the file (is the server behind the gateway running?)\n%s", results["toolu_00_0"], r.output)
	}
	if !strings.Contains(results["toolu_01_0"], "func Total") {
		t.Errorf("the read after the first result: %q, want the file", results["toolu_01_0"])
	}
	var pre, gateway []recorded // the hooks' and the gateway's, on one record
	for _, rec := range r.inOrder("PreToolUse") {
		if rec.event["host_id"] == "gemini-cli" {
			pre = append(pre, rec)
		} else {
			gateway = append(gateway, rec)
		}
	}
	if len(pre) != 3 || len(gateway) != 2 {
		t.Fatalf("%d calls on the hooks' record and %d on the gateway's, want 3 and 2 (create_issue never reaches it)", len(pre), len(gateway))
	}
	if decisionOf(pre[1].verdict) != "allow" {
		t.Errorf("the read after the first result: verdict %v, want it not asked", pre[1].verdict)
	}
	if pin, _ := pre[1].event["tool_pin"].(map[string]any); pin["read_only"] != true || pin["via"] != "gateway" {
		t.Errorf("the hook's record of the read: tool_pin %v, want the gateway's read-only pin", pre[1].event["tool_pin"])
	}
	if d := decisionOf(pre[2].verdict); d != "ask" {
		t.Errorf("create_issue after taint: %v, want it asked at the hook", d)
	}
	if strings.Contains(results["toolu_02_0"], "filed") {
		t.Errorf("create_issue ran: %q", results["toolu_02_0"])
	}
}
