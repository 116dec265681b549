package adapter

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// opencode (1.18.33) and Kilo CLI (7.7.9, an opencode fork) have no hook
// commands: they load JavaScript plugins into their own process. The
// plugin `engine install opencode` (or kilo) writes (hostconfig) hands
// each of the hooks below to agentledger's hook command as one JSON object
// of agentledger's own shape, and does what the answer says:
//   - tool.execute.before (session_id, call_id, tool, args): a block is a
//     thrown error, which the host gives the model as the call's result;
//     {"args": ...} replaces the call's arguments in place (AARM MODIFY).
//     The host's own permission rules run after the plugin, inside the
//     tool, and no plugin can answer them: an allow switches nothing off
//     (it gives no decision, and is recorded so), and an ask, which the
//     host cannot put to its user from a plugin, is answered and recorded
//     as a deny held for an approver.
//   - tool.execute.after (the same and output): {"output": ...} replaces
//     what the model sees of the result: a secret in it is withheld.
//   - chat.message (prompt): a block stops the prompt.
//   - session.created: a session's start, or, with parent_session_id (the
//     session whose task tool started it), a sub-agent's spawn, which the
//     host reports after the fact: a notice. The plugin sends the
//     sub-agent's calls with their parent, so they are bounded by it.
// The plugin blocks every call it cannot get an answer for (the hook
// command missing, failing or answering what it cannot read).

// OpencodeInput is what agentledger's plugin sends for one hook of an
// opencode-based host.
type OpencodeInput struct {
	HookEventName   string          `json:"hook_event_name"`
	SessionID       string          `json:"session_id"`
	ParentSessionID string          `json:"parent_session_id,omitempty"`
	Agent           string          `json:"agent,omitempty"`
	Cwd             string          `json:"cwd,omitempty"`
	CallID          string          `json:"call_id,omitempty"`
	Tool            string          `json:"tool,omitempty"`
	Args            json.RawMessage `json:"args,omitempty"`
	// Output is tool.execute.after's: what the model is to see of the
	// call's result.
	Output *string `json:"output,omitempty"`
	// Prompt and MessageID are chat.message's: the prompt's text parts.
	Prompt    string `json:"prompt,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	// Version is the host's own version, as its plugin reads it.
	Version string `json:"version,omitempty"`
	// MCPServer is, for a tool of one of the host's MCP servers, that
	// server's name: the host names the tool SERVER_TOOL (each part with
	// what is not [A-Za-z0-9_-] made _), which alone cannot be told from a
	// tool of its own. The plugin finds it among the servers the host has
	// connected.
	MCPServer string `json:"mcp_server,omitempty"`
}

// opencodeHosts are the opencode-based hosts agentledger's plugin serves.
const (
	opencodeHost = "opencode"
	kiloHost     = "kilo"
)

// mapOpencodeFor is the Map of an opencode-based host.
func mapOpencodeFor(host string) func([]byte, time.Time, bool) (Mapped, error) {
	return func(native []byte, at time.Time, autoApprove bool) (Mapped, error) {
		var in OpencodeInput
		if err := decodeInput(host, native, &in); err != nil {
			return Mapped{}, err
		}
		fields := []field{{"session_id", in.SessionID}}
		switch in.HookEventName {
		case "tool.execute.before", "tool.execute.after":
			fields = append(fields, field{"call_id", in.CallID}, field{"tool", in.Tool})
			if len(in.Args) == 0 || in.Args[0] != '{' {
				return Mapped{}, fmt.Errorf("%s %s input: args must be an object", host, in.HookEventName)
			}
			if in.HookEventName == "tool.execute.after" && in.Output == nil {
				return Mapped{}, fmt.Errorf("%s tool.execute.after input: missing output", host)
			}
		case "chat.message":
			fields = append(fields, field{"message_id", in.MessageID})
		}
		if err := required(host, in.HookEventName, fields...); err != nil {
			return Mapped{}, err
		}
		e, err := in.event(host, at)
		return mapped(in.HookEventName, e, err, autoApprove)
	}
}

// event is the AARTS event of an opencode-based host's input (nil: one
// agentledger does not judge).
func (in *OpencodeInput) event(host string, at time.Time) (map[string]any, error) {
	e := hostEvent(host, in.SessionID, in.Cwd, at)
	switch in.HookEventName {
	case "tool.execute.before", "tool.execute.after":
		hook, native := "PreToolUse", in.Tool
		if in.HookEventName == "tool.execute.after" {
			hook = "PostToolUse"
		}
		if tool, ok := in.mcpTool(); ok {
			native = "mcp__" + in.MCPServer + "__" + tool
			e["tool_name_host"] = in.Tool // agentledger extension: the host's own name for it
			setMCPServer(e, in.MCPServer, "", "")
		}
		setTool(e, hook, in.CallID, native, in.Args)
		if in.Output != nil {
			e["tool_result"] = *in.Output
		}
	case "chat.message":
		e["hook_point"] = "PreUserInput"
		e["turn_id"] = in.MessageID
		e["raw_input"] = in.Prompt
		e["input_source"] = "keyboard"
	case "session.created":
		if in.ParentSessionID != "" {
			// The host started a sub-agent (its task tool) in a session of
			// its own: a spawn in the parent's session.
			e["session_id"] = in.ParentSessionID
			e["hook_point"] = "PreSubAgentSpawn"
			e["sub_agent_id"] = in.SessionID
			e["sub_agent_type"] = in.Agent
			e["delegated_task"] = ""
			return e, nil
		}
		e["hook_point"] = "SessionStart"
		e["environment"] = map[string]any{"cwd": in.Cwd, "host_version": in.Version}
		return e, nil
	default:
		return nil, nil
	}
	if in.ParentSessionID != "" {
		// A sub-agent's own event: a child of the session that spawned it.
		e["parent_session_id"] = in.ParentSessionID
		e["is_sub_agent"] = true
	} else if e["hook_point"] == "PreToolUse" {
		e["is_sub_agent"] = false
	}
	if in.Agent != "" && e["hook_point"] == "PreToolUse" {
		e["active_skill"] = in.Agent // the agent definition the call runs under
	}
	return e, nil
}

// opencodeBlocking: the events whose answer the plugin uses to stop
// something.
func opencodeBlocking(event string) bool {
	switch event {
	case "session.created":
		return false
	}
	return true
}

// renderOpencode renders an answer as agentledger's plugin reads it: block
// (the reason it throws), args (the call's new arguments) or output (what
// the model sees of a result instead).
func renderOpencode(event string, _ []byte, r Answer) json.RawMessage {
	out := map[string]any{}
	switch event {
	case "tool.execute.before":
		switch {
		case r.Decision != aarts.Allow:
			out["block"] = Reason(r)
		case r.Rewrite != nil:
			out["args"] = r.Rewrite
		}
	case "tool.execute.after":
		if r.Decision != aarts.Allow {
			out["output"] = withheldText(r)
		}
	case "chat.message", "":
		if r.Decision != aarts.Allow {
			out["block"] = Reason(r)
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// opencodeHostFor is the adapter of an opencode-based host.
func opencodeHostFor(host string) *Host {
	return &Host{Name: host, Map: mapOpencodeFor(host), Render: renderOpencode, Blocking: opencodeBlocking, Notice: notBlocking(opencodeBlocking),
		Allows: func(e string) bool { return e != "tool.execute.before" }, Asks: func(string, bool) bool { return false }}
}

// mcpTool is the MCP tool a call names, where the plugin names the server
// it is one of: the rest of the host's name for it after the server's. A
// tool the taxonomy knows (one of the host's own, such as apply_patch) is
// never taken for one, whatever a server is called.
func (in *OpencodeInput) mcpTool() (string, bool) {
	if in.MCPServer == "" || aarts.StandardTool(in.Tool) != aarts.ToolOther {
		return "", false
	}
	tool, ok := strings.CutPrefix(in.Tool, opencodeName(in.MCPServer)+"_")
	return tool, ok && tool != ""
}

// opencodeName is a name as the host writes it into a tool's name: what is
// not [A-Za-z0-9_-] made _.
func opencodeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}
