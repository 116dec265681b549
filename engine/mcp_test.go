package engine

import (
	"context"
	"testing"

	"github.com/agentledger/agentledger/aarts"
)

// TestUndeclaredMCPServerIsAsked: with the built-in manifest, a tool of an
// MCP server no one declared is not waved through.
func TestUndeclaredMCPServerIsAsked(t *testing.T) {
	e, _ := defaultEngine(t)
	r := e.Answer(context.Background(), Request{Host: "claude-code", Body: ccHook("mcp-evil", "PreToolUse",
		`,"tool_name":"mcp__evil__exec","tool_input":{"cmd":"rm -rf /"},"tool_use_id":"toolu_1"`)})
	if r.Decision == aarts.Allow {
		t.Fatalf("mcp__evil__exec: %s %s %v, want at least ask", r.Decision, r.ReasonCode, r.Reasons)
	}
}
