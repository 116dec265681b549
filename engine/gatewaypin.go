package engine

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/agentledger/agentledger/aarts"
)

// GatewayPins is what the engine asks of the MCP gateway's record when a
// host reports a call of an MCP tool (mcp__SERVER__TOOL): how the gateway
// holds that tool. The host's hook and the gateway see the same call —
// the host starts the server behind engine mcp-proxy — but in two
// sessions, so what the gateway knows of the tool (pinned, declared
// read-only and closed-world) would otherwise be missing where the hook's
// call is judged, and a read after the session was tainted would be asked
// as a send to a server the manifest does not name.
type GatewayPins interface {
	// ToolPin returns the gateway's pin of server's tool for tenant, in
	// the form the gateway's own PreToolUse carries (status, pinned,
	// read_only), or nil when the gateway holds no pin for it.
	ToolPin(ctx context.Context, tenant, server, tool string) map[string]any
}

// WithGatewayPins has the engine add the MCP gateway's pin (tool_pin) to
// a hook's PreToolUse of an MCP tool, from p. Only the engine sets it on
// such an event: a sender that claims tool_pin is rejected
// (GatewayMembers).
func WithGatewayPins(p GatewayPins) Option {
	return func(e *Engine) error { e.pins = p; return nil }
}

// withGatewayPin adds the gateway's pin of the tool a PreToolUse calls,
// where the tool is an MCP server's and the gateway holds a pin for it;
// any other event is returned as it is.
func (e *Engine) withGatewayPin(ctx context.Context, tenant string, payload []byte) []byte {
	if e.pins == nil || !bytes.Contains(payload, []byte(`"mcp__`)) {
		return payload
	}
	var ev struct {
		HookPoint string `json:"hook_point"`
		Native    string `json:"tool_name_native"`
	}
	if json.Unmarshal(payload, &ev) != nil || ev.HookPoint != "PreToolUse" {
		return payload
	}
	server, tool := aarts.MCPServer(ev.Native), aarts.MCPTool(ev.Native)
	if server == "" || tool == "" {
		return payload
	}
	pin := e.pins.ToolPin(ctx, tenant, server, tool)
	if pin == nil {
		return payload
	}
	pin["via"] = "gateway"
	return withMember(payload, "tool_pin", pin)
}
