// Package live re-drives recorded sessions against live upstreams: the
// recorded model requests go to a candidate model through the
// OpenAI-compatible chat completions API, and recorded tool calls are
// executed again on an MCP server. Unlike exact replay it talks to the
// network and measures time; its findings are recorded as a new session.
package live

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools is a connection to an MCP server that recorded tool calls are
// executed on again.
type Tools struct {
	session *mcp.ClientSession
}

// ToolResult is what an MCP tool call returned: its text content joined,
// and whether the tool reported a failure.
type ToolResult struct {
	Text    string `json:"text"`
	IsError bool   `json:"is_error"`
}

// ConnectMCP starts command (a program and its arguments, split on
// spaces) and speaks MCP with it over stdio, or, when url is given instead,
// connects to a Streamable HTTP MCP endpoint.
func ConnectMCP(ctx context.Context, command, url string) (*Tools, error) {
	var t mcp.Transport
	switch {
	case command != "" && url != "":
		return nil, errors.New("give an MCP command or an MCP URL, not both")
	case command != "":
		argv := strings.Fields(command)
		t = &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}
	case url != "":
		t = &mcp.StreamableClientTransport{Endpoint: url}
	default:
		return nil, errors.New("no MCP server: give --mcp-command or --mcp-url")
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "agentledger-replay", Version: "v1"}, nil)
	s, err := c.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to the MCP server: %w", err)
	}
	return &Tools{session: s}, nil
}

// Names lists the server's tools.
func (t *Tools) Names(ctx context.Context) ([]string, error) {
	var names []string
	for tool, err := range t.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list MCP tools: %w", err)
		}
		names = append(names, tool.Name)
	}
	return names, nil
}

// Call runs one tool. A tool's own failure is a result with IsError set; an
// error is a protocol or transport failure.
func (t *Tools) Call(ctx context.Context, name string, args map[string]any) (ToolResult, error) {
	res, err := t.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return ToolResult{}, fmt.Errorf("MCP tools/call %s: %w", name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return ToolResult{Text: strings.Join(parts, "\n"), IsError: res.IsError}, nil
}

// Close ends the session (and stops a server started by ConnectMCP).
func (t *Tools) Close() error { return t.session.Close() }
