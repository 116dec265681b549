package hostconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrapMCP: every stdio server of a project's .mcp.json is started
// behind the gateway (its command after --, its env kept), a remote one is
// left byte for byte, a second wrap changes nothing, and an unwrap starts
// them as they were.
func TestWrapMCP(t *testing.T) {
	dir := t.TempDir()
	const original = `{
  "mcpServers": {
    "filesystem": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."], "env": {"LOG": "1"}},
    "github": {"type": "http", "url": "https://api.example.com/mcp"},
    "bare": {"command": "/usr/local/bin/srv"}
  },
  "other": true
}
`
	path := filepath.Join(dir, ".mcp.json")
	if err := os.WriteFile(path, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	scope := Scope{Dir: dir}
	change, entries, err := WrapMCP("claude-code", scope, "/opt/engine", []string{"--manifest", "/etc/m.json"})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 || !entries[0].Wrapped || entries[1].Skipped == "" || !entries[2].Wrapped {
		t.Fatalf("entries %+v", entries)
	}
	if err := change.Apply(); err != nil {
		t.Fatal(err)
	}
	var got struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			URL     string            `json:"url"`
		} `json:"mcpServers"`
		Other bool `json:"other"`
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	fs := got.MCPServers["filesystem"]
	if fs.Command != "/opt/engine" || strings.Join(fs.Args, " ") != "mcp-proxy --name filesystem --manifest /etc/m.json -- npx -y @modelcontextprotocol/server-filesystem ." || fs.Env["LOG"] != "1" {
		t.Fatalf("filesystem: %+v", fs)
	}
	if bare := got.MCPServers["bare"]; strings.Join(bare.Args, " ") != "mcp-proxy --name bare --manifest /etc/m.json -- /usr/local/bin/srv" {
		t.Fatalf("bare: %+v", bare)
	}
	if got.MCPServers["github"].URL != "https://api.example.com/mcp" || !got.Other || !strings.Contains(string(b), `"github": {"type": "http", "url": "https://api.example.com/mcp"}`) {
		t.Fatalf("the remote server or the rest changed:\n%s", b)
	}
	again, _, err := WrapMCP("claude-code", scope, "/opt/engine", []string{"--manifest", "/etc/m.json"})
	if err != nil || again.Changed() {
		t.Fatalf("a second wrap: %v\n%s", err, again.Diff())
	}
	moved, entries, err := WrapMCP("claude-code", scope, "/usr/bin/engine", nil)
	if err != nil || !entries[0].Updated || !strings.Contains(string(moved.After), `"/usr/bin/engine"`) || strings.Contains(string(moved.After), "mcp-proxy --name filesystem mcp-proxy") {
		t.Fatalf("an update: %v %+v\n%s", err, entries, moved.After)
	}
	undo, restored, err := UnwrapMCP("claude-code", scope)
	if err != nil || strings.Join(restored, " ") != "filesystem bare" {
		t.Fatalf("unwrap: %v %v", err, restored)
	}
	var back, want any
	json.Unmarshal(undo.After, &back)
	json.Unmarshal([]byte(original), &want)
	if bb, wb := mustJSON(back), mustJSON(want); bb != wb {
		t.Fatalf("unwrapped:\n%s\nwant\n%s", bb, wb)
	}
	if _, _, err := WrapMCP("claude-code", Scope{User: true}, "/opt/engine", nil); err == nil {
		t.Fatal("Claude Code's user file was accepted")
	}
	if _, _, err := WrapMCP("codex", scope, "/opt/engine", nil); err == nil {
		t.Fatal("a host without a JSON mcpServers file was accepted")
	}
	os.WriteFile(path, []byte(`{"mcpServers": [`), 0o600)
	if _, _, err := WrapMCP("claude-code", scope, "/opt/engine", nil); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("a broken file: %v", err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestWrapMCPEveryFormat: opencode's servers (under "mcp", the command a
// list of the program and its arguments) are wrapped and unwrapped in that
// form; a host that reads two project files (Qwen Code: its settings and
// .mcp.json) has both changed; Cline, which reads only the user's file,
// refuses a project; Codex's TOML is named with the command to use.
func TestWrapMCPEveryFormat(t *testing.T) {
	dir := t.TempDir()
	writeFile := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const opencode = `{"mcp": {"shop": {"type": "local", "command": ["/srv/shop", "--ro"], "environment": {"A": "1"}}, "docs": {"type": "remote", "url": "https://docs.example.com/mcp"}}}`
	writeFile("opencode.json", opencode)
	change, entries, err := WrapMCP("opencode", Scope{Dir: dir}, "/opt/engine", nil)
	if err != nil || len(entries) != 2 || !entries[0].Wrapped || entries[1].Skipped == "" {
		t.Fatalf("opencode: %v %+v", err, entries)
	}
	var got struct {
		MCP map[string]struct {
			Command     []string          `json:"command"`
			Args        []string          `json:"args"`
			Environment map[string]string `json:"environment"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(change.After, &got); err != nil {
		t.Fatal(err)
	}
	if shop := got.MCP["shop"]; strings.Join(shop.Command, " ") != "/opt/engine mcp-proxy --name shop -- /srv/shop --ro" || shop.Args != nil || shop.Environment["A"] != "1" {
		t.Fatalf("opencode's shop: %+v", shop)
	}
	if err := change.Apply(); err != nil {
		t.Fatal(err)
	}
	undo, restored, err := UnwrapMCP("opencode", Scope{Dir: dir})
	if err != nil || len(restored) != 1 || mustJSON(parse(t, undo.After)) != mustJSON(parse(t, []byte(opencode))) {
		t.Fatalf("opencode unwrapped: %v %v\n%s", err, restored, undo.After)
	}

	writeFile(".qwen/settings.json", `{"mcpServers": {"a": {"command": "/srv/a"}}}`)
	writeFile(".mcp.json", `{"mcpServers": {"b": {"command": "/srv/b", "args": ["x"]}}}`)
	change, entries, err = WrapMCP("qwen-code", Scope{Dir: dir}, "/opt/engine", nil)
	if err != nil || len(entries) != 2 || len(change.More) != 1 {
		t.Fatalf("qwen-code: %v %+v", err, entries)
	}
	if !strings.Contains(string(change.After), `"mcp-proxy"`) || !strings.Contains(string(change.More[0].After), `"/srv/b"`) || !strings.Contains(string(change.More[0].After), `"mcp-proxy"`) {
		t.Fatalf("qwen-code's two files:\n%s\n%s", change.After, change.More[0].After)
	}

	if _, _, err := WrapMCP("cline", Scope{Dir: dir}, "/opt/engine", nil); err == nil || !strings.Contains(err.Error(), "--user") {
		t.Fatalf("Cline's project: %v", err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	change, _, err = WrapMCP("cline", Scope{User: true}, "/opt/engine", nil)
	if err != nil || change.Path != filepath.Join(home, ".cline/data/settings/cline_mcp_settings.json") || change.Changed() {
		t.Fatalf("Cline's user file, absent: %v %+v", err, change)
	}
	if _, _, err := WrapMCP("codex", Scope{Dir: dir}, "/opt/engine", nil); err == nil || !strings.Contains(err.Error(), "codex mcp add") {
		t.Fatalf("codex: %v", err)
	}
}

func parse(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}
