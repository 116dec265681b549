package adapter

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// TestOpencodeRender: what agentledger's plugin is told to do for each
// answer: throw (block) for a deny or an ask at a call or a prompt, replace
// the arguments for an allow that rewrites, replace the result the model
// sees for a denied result, and nothing for an allow (opencode's own
// rules then decide).
func TestOpencodeRender(t *testing.T) {
	rewrite := map[string]any{"command": "ls -la"}
	for _, tt := range []struct {
		event string
		a     Answer
		want  string
	}{
		{"tool.execute.before", Answer{Decision: aarts.Allow, HostAnswer: aarts.Allow}, `{}`},
		{"tool.execute.before", Answer{Decision: aarts.Allow, HostAnswer: aarts.Allow, Rewrite: rewrite}, `{"args":{"command":"ls -la"}}`},
		{"tool.execute.before", Answer{Decision: aarts.Deny, Reasons: []string{"no"}, Rewrite: rewrite}, `{"block":"agentledger: no"}`},
		{"tool.execute.before", Answer{Decision: aarts.Ask, HostAnswer: aarts.Deny, ReasonCode: "TAINTED"}, `{"block":"agentledger: TAINTED"}`},
		{"tool.execute.after", Answer{Decision: aarts.Deny, Reasons: []string{"secret"}, Withheld: json.RawMessage(`"token [withheld]"`)}, `{"output":"token [withheld]"}`},
		{"tool.execute.after", Answer{Decision: aarts.Allow}, `{}`},
		{"chat.message", Answer{Decision: aarts.Deny, Reasons: []string{"injected"}}, `{"block":"agentledger: injected"}`},
		{"session.created", Answer{Decision: aarts.Deny}, `{}`},
		{"", Answer{Decision: aarts.Deny, Reasons: []string{"unreadable"}}, `{"block":"agentledger: unreadable"}`},
	} {
		if got := string(renderOpencode(tt.event, nil, tt.a)); got != tt.want {
			t.Errorf("%s %+v: %s, want %s", tt.event, tt.a, got, tt.want)
		}
	}
}

// TestOpencodeSubAgentSessions: a session whose parent the plugin names is
// a spawn in the parent's session; the sub-agent's calls are its own
// session's, children of the parent's.
func TestOpencodeSubAgentSessions(t *testing.T) {
	h := Named("kilo")
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	m, err := h.Map([]byte(`{"hook_event_name":"session.created","session_id":"ses_child","parent_session_id":"ses_root","agent":"general"}`), at, false)
	if err != nil {
		t.Fatal(err)
	}
	var spawn map[string]any
	_ = json.Unmarshal(m.Event, &spawn)
	if spawn["hook_point"] != "PreSubAgentSpawn" || spawn["session_id"] != "ses_root" || spawn["sub_agent_id"] != "ses_child" || spawn["host_id"] != "kilo" {
		t.Errorf("spawn: %v", spawn)
	}
	if !h.Notice("session.created") || h.Notice("tool.execute.before") {
		t.Error("a session's start is a notice; a call is not")
	}
	m, err = h.Map([]byte(`{"hook_event_name":"tool.execute.before","session_id":"ses_child","parent_session_id":"ses_root","call_id":"c1","tool":"read","args":{"filePath":"a.go"},"cwd":"/w"}`), at, false)
	if err != nil {
		t.Fatal(err)
	}
	var call map[string]any
	_ = json.Unmarshal(m.Event, &call)
	if call["session_id"] != "ses_child" || call["parent_session_id"] != "ses_root" || call["is_sub_agent"] != true || call["tool_name"] != aarts.ToolFileRead {
		t.Errorf("sub-agent call: %v", call)
	}
}

// TestOpencodeMCPTool: a tool the plugin says is an MCP server's
// (SERVER_TOOL, the server's name as the host writes it into the tool's)
// is mapped as every host's MCP tool, the host's name kept beside it; a
// name that does not start with the server's, and a tool of the host's own
// whatever the plugin claims, are left as they are.
func TestOpencodeMCPTool(t *testing.T) {
	m := mapOpencodeFor(opencodeHost)
	for _, c := range []struct{ tool, server, want string }{
		{"shop_read_file", "shop", "mcp__shop__read_file"},
		{"my_srv_read_file", "my.srv", "mcp__my.srv__read_file"},
		{"shop_read_file", "", "shop_read_file"},
		{"docs_read_file", "shop", "docs_read_file"},
		{"apply_patch", "apply", "apply_patch"},
		{"shop_", "shop", "shop_"},
	} {
		in, _ := json.Marshal(map[string]any{"hook_event_name": "tool.execute.before", "session_id": "s1", "call_id": "c1", "tool": c.tool, "mcp_server": c.server, "args": map[string]any{"path": "README.md"}})
		got, err := m(in, time.Unix(0, 0), false)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := aarts.ParseEvent(got.Event)
		if err != nil {
			t.Fatal(err)
		}
		if ev.ToolNameNative != c.want {
			t.Errorf("%s of %q: %s, want %s", c.tool, c.server, ev.ToolNameNative, c.want)
		}
		if mcp := c.want != c.tool; mcp != (ev.ToolName == aarts.ToolMCPCall) || mcp != (ev.String("tool_name_host") == c.tool) {
			t.Errorf("%s of %q: tool %s, host name %q", c.tool, c.server, ev.ToolName, ev.String("tool_name_host"))
		}
	}
}
