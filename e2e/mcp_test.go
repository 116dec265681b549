package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// mcpHosts are how each host is given an MCP server in its own
// configuration's form (files under the project, homeFiles under the
// home directory: command is the server's program) and how it names the
// server's tools to the model; before is what the model does first to see
// them (Droid defers MCP tools until ToolSearch loads them).
var mcpHosts = map[string]struct {
	files, homeFiles func(server, command string) map[string]string
	tool             func(server, name string) string
	before           []turn
	// byHand: the host has no engine install --mcp; files put the server
	// behind the gateway as its documentation says to (command is then
	// the whole command line, engine mcp-proxy included).
	byHand bool
}{
	// Gemini CLI starts its MCP servers before any hook runs: the gateway
	// then starts the local engine the hooks use rather than holding the
	// data directory (which refused the hooks' engine: every call was
	// blocked).
	"gemini": {files: func(server, command string) map[string]string {
		return jsonFile(".gemini/settings.json", map[string]any{"mcpServers": map[string]any{server: map[string]any{"command": command}}})
	}, tool: func(server, name string) string { return "mcp_" + server + "_" + name }},
	// Codex keeps MCP servers in its TOML configuration; docs/engine.md
	// has the command that adds one behind the gateway.
	"codex": {homeFiles: func(server, command string) map[string]string {
		return map[string]string{".codex/config.toml": fmt.Sprintf("\n[mcp_servers.%s]\ncommand = %q\nargs = [%s]\n", server, strings.Fields(command)[0], quoted(strings.Fields(command)[1:]))}
	}, tool: func(server, name string) string { return "mcp__" + server + "__" + name }, byHand: true},
	"copilot": {files: func(server, command string) map[string]string {
		return jsonFile(".github/mcp.json", map[string]any{"mcpServers": map[string]any{server: map[string]any{"command": command, "tools": []string{"*"}, "deferTools": "never"}}})
	}, tool: func(server, name string) string { return server + "-" + name }},
	// Qwen Code defers MCP tools behind its tool_search unless the server
	// says to load them.
	"qwen-code": {files: func(server, command string) map[string]string {
		return jsonFile(".qwen/settings.json", map[string]any{"mcpServers": map[string]any{server: map[string]any{"command": command, "alwaysLoadTools": true}}})
	}, tool: func(server, name string) string { return "mcp__" + server + "__" + name }},
	"droid": {files: func(server, command string) map[string]string {
		return jsonFile(".factory/mcp.json", map[string]any{"mcpServers": map[string]any{server: map[string]any{"type": "stdio", "command": command}}})
	}, tool: func(server, name string) string { return server + "___" + name },
		before: []turn{{Calls: []call{{"ToolSearch", map[string]any{"query": "select:shop___read_file,shop___create_issue"}}}}}},
	"cline": {homeFiles: func(server, command string) map[string]string {
		return jsonFile(".cline/data/settings/cline_mcp_settings.json", map[string]any{"mcpServers": map[string]any{server: map[string]any{"command": command}}})
	}, tool: func(server, name string) string { return server + "__" + name }},
	"opencode": {files: func(server, command string) map[string]string {
		return jsonFile("opencode.json", map[string]any{"mcp": map[string]any{server: map[string]any{"type": "local", "command": []string{command}}}})
	}, tool: func(server, name string) string { return server + "_" + name }},
	"kilo": {files: func(server, command string) map[string]string {
		return jsonFile("kilo.json", map[string]any{"mcp": map[string]any{server: map[string]any{"type": "local", "command": []string{command}}}})
	}, tool: func(server, name string) string { return server + "_" + name }},
}

// quoted is a TOML array's items: each of list quoted.
func quoted(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// jsonFile is one file holding v as JSON.
func jsonFile(name string, v any) map[string]string {
	raw, _ := json.Marshal(v)
	return map[string]string{name: string(raw)}
}

// TestMCPBehindGatewayOnEveryHost: each host with its MCP server put
// behind the gateway by engine install HOST --mcp (the server in the
// host's own configuration, as a user writes it) and agentledger's hooks,
// as TestClaudeCodeMCPBehindGateway for Claude Code: the server runs
// behind the gateway (its first read answers), the hook's record of each call names the MCP tool as every host's
// (mcp__SERVER__TOOL, whatever the host calls it), a read-only tool is
// not asked after the first result (the hook's record carries the
// gateway's read-only pin), and a tool that files an issue after taint is
// asked at the hook and does not run.
func TestMCPBehindGatewayOnEveryHost(t *testing.T) {
	server := filepath.Join(buildPrograms(t), "mcpserver")
	for _, h := range shellHosts {
		m, ok := mcpHosts[h.name]
		if !ok {
			continue // Claude Code: its own test
		}
		t.Run(h.name, func(t *testing.T) {
			o := hostOptions{mcp: !m.byHand}
			command := server
			if m.byHand {
				command = filepath.Join(buildPrograms(t), "engine") + " mcp-proxy --name shop -- " + server
			}
			if m.files != nil {
				o.files = m.files("shop", command)
			}
			if m.homeFiles != nil {
				o.homeFiles = m.homeFiles("shop", command)
			}
			script := append(slices.Clone(m.before),
				turn{Calls: []call{{m.tool("shop", "read_file"), map[string]any{"path": "README.md"}}}},
				turn{Calls: []call{{m.tool("shop", "read_file"), map[string]any{"path": "checkout/total.go"}}}},
				turn{Calls: []call{{m.tool("shop", "create_issue"), map[string]any{"title": "totals", "body": "see checkout/total.go"}}}},
				turn{Text: "Task finished."})
			r := h.run(t, script, h.mode, o)
			results := r.results()
			id := func(i int) string { return fmt.Sprintf("toolu_%02d_0", len(m.before)+i) }
			if !strings.Contains(results[id(0)], "A small web shop") {
				t.Fatalf("the first read's result %q: want the file (is the server behind the gateway running?)\n%s", results[id(0)], r.output)
			}
			if !strings.Contains(results[id(1)], "func Total") {
				t.Errorf("the read after the first result: %q, want the file", results[id(1)])
			}
			var pre, gateway []recorded // the hooks' and the gateway's, on one record
			for _, rec := range r.inOrder("PreToolUse") {
				switch {
				case rec.event["host_id"] != h.id:
					gateway = append(gateway, rec)
				case strings.HasPrefix(fmt.Sprint(rec.event["tool_name_native"]), "mcp__shop__"):
					pre = append(pre, rec)
				}
			}
			if len(pre) != 3 || len(gateway) != 2 {
				t.Fatalf("%d calls of the server's tools on the hooks' record and %d on the gateway's, want 3 and 2 (create_issue never reaches it)", len(pre), len(gateway))
			}
			if pre[0].event["tool_name_native"] != "mcp__shop__read_file" || pre[2].event["tool_name_native"] != "mcp__shop__create_issue" {
				t.Errorf("the hook's record names %v and %v", pre[0].event["tool_name_native"], pre[2].event["tool_name_native"])
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
			if strings.Contains(results[id(2)], "filed") {
				t.Errorf("create_issue ran: %q", results[id(2)])
			}
		})
	}
}
