package docs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/internal/proctest"
)

// TestReadmeMCPEntryRuns starts the MCP server entry README gives for
// Claude Code and Cursor, as a client would (command and args, from the
// clone's root), and uses it: the tools are listed and a read goes
// through the proxy.
func TestReadmeMCPEntryRuns(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := bytes.Cut(raw, []byte("## Guarding any MCP client"))
	if !ok {
		t.Fatal("README has no MCP section")
	}
	var block strings.Builder
	in := false
	for sc := bufio.NewScanner(bytes.NewReader(section)); sc.Scan(); {
		switch line := sc.Text(); {
		case strings.TrimSpace(line) == "```json":
			in = true
		case in && strings.TrimSpace(line) == "```":
			in = false
		case in:
			block.WriteString(line + "\n")
		}
		if !in && block.Len() > 0 {
			break
		}
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(block.String()), &cfg); err != nil || len(cfg.MCPServers) != 1 {
		t.Fatalf("README's entry: %v\n%s", err, block.String())
	}
	for name, s := range cfg.MCPServers {
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Dir = ".."
		// The gateway starts the local engine on its data directory (as a
		// hook would): stopped when the test ends.
		data := t.TempDir()
		t.Cleanup(func() { proctest.StopHolder(data) })
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "LEDGER_DATA="+data)
		ctx := context.Background()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "readme", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil || len(tools.Tools) == 0 {
			t.Fatalf("%s: tools/list: %v", name, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "README.md"}})
		if err != nil || res.IsError {
			t.Fatalf("%s: read_file: %v %+v", name, err, res)
		}
		cs.Close()
	}
}
