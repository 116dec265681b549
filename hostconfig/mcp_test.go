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
