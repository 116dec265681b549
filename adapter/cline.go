package adapter

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// Cline CLI (3.0.65) runs a hook file per event, named after it, from
// .clinerules/hooks/ (or ~/.cline/hooks/), with one JSON object on stdin
// naming its event in hookName: tool_call (PreToolUse), tool_result
// (PostToolUse), agent_start (TaskStart), agent_end, agent_error,
// agent_abort, session_shutdown, prompt_submit. Its session is
// sessionContext.rootSessionId; a sub-agent's events carry its agent_id
// and parent_agent_id under the same session. What Cline carries out, as
// measured:
//   - tool_call and tool_result alone wait for the hook. A hook's exit
//     code is ignored; only its stdout counts, and anything it cannot
//     read lets the call run (the hook file agentledger writes prints a
//     cancel instead: hostconfig).
//   - cancel ends the whole run (the call does not run, nor anything
//     after it); overrideInput replaces the call's input whole. So a
//     denied shell call (run_commands) is replaced by one that prints
//     agentledger's reason, and the run goes on with the model told why;
//     any other denied call ends the run. A rewrite is overrideInput.
//   - Cline has no permission flow a hook can answer (it runs what it is
//     given headless): an allow gives no decision, and an ask, which it
//     cannot put to anyone, is answered and recorded as a deny held for an
//     approver.
//   - tool_result cannot change the result; a cancel there ends the run
//     before the model sees it, so a result holding a secret is withheld
//     that way.
//   - prompt_submit comes only for Cline's own reminders, after the fact:
//     a notice, like the rest.
//
// An MCP server's tool is SERVER__TOOL (no prefix), mapped to
// mcp__SERVER__TOOL as every host's.

// clineHost is the adapter's name.
const clineHost = "cline"

// ClineInput is a Cline hook's input.
type ClineInput struct {
	HookName       string `json:"hookName"`
	ClineVersion   string `json:"clineVersion"`
	TaskID         string `json:"taskId"`
	SessionContext struct {
		RootSessionID string `json:"rootSessionId"`
	} `json:"sessionContext"`
	WorkspaceRoots []string `json:"workspaceRoots"`
	AgentID        string   `json:"agent_id"`
	ParentAgentID  string   `json:"parent_agent_id"`
	ToolCall       *struct {
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"tool_call"`
	ToolResult *struct {
		ID     string          `json:"id"`
		Name   string          `json:"name"`
		Input  json.RawMessage `json:"input"`
		Output json.RawMessage `json:"output"`
		Error  string          `json:"error"`
	} `json:"tool_result"`
	Turn *struct {
		OutputText string `json:"outputText"`
		Status     string `json:"status"`
	} `json:"turn"`
	UserPromptSubmit *struct {
		Prompt string `json:"prompt"`
	} `json:"userPromptSubmit"`
	Reason json.RawMessage `json:"reason"`
	Error  json.RawMessage `json:"error"`
}

func mapCline(native []byte, at time.Time, autoApprove bool) (Mapped, error) {
	var in ClineInput
	if err := decodeInput(clineHost, native, &in); err != nil {
		return Mapped{}, err
	}
	if in.HookName == "" {
		return Mapped{}, fmt.Errorf("%s hook input: missing hookName", clineHost)
	}
	if err := required(clineHost, in.HookName, field{"sessionContext.rootSessionId", in.SessionContext.RootSessionID}); err != nil {
		return Mapped{}, err
	}
	e, err := in.event(at)
	return mapped(in.HookName, e, err, autoApprove)
}

// event is the AARTS event of a Cline hook's input (nil: one agentledger
// does not judge).
func (in *ClineInput) event(at time.Time) (map[string]any, error) {
	cwd := ""
	if len(in.WorkspaceRoots) > 0 {
		cwd = in.WorkspaceRoots[0]
	}
	root := in.SessionContext.RootSessionID
	e := hostEvent(clineHost, root, cwd, at)
	sub := in.ParentAgentID != ""
	switch in.HookName {
	case "tool_call", "tool_result":
		c := in.ToolCall
		hook := "PreToolUse"
		if in.HookName == "tool_result" {
			hook = "PostToolUse"
			if r := in.ToolResult; r != nil {
				c = &struct {
					ID    string          `json:"id"`
					Name  string          `json:"name"`
					Input json.RawMessage `json:"input"`
				}{r.ID, r.Name, r.Input}
			}
		}
		if c == nil || c.ID == "" || c.Name == "" {
			return nil, fmt.Errorf("%s %s input: missing %s.id or .name", clineHost, in.HookName, in.HookName)
		}
		if len(c.Input) == 0 || c.Input[0] != '{' {
			return nil, fmt.Errorf("%s %s input: %s.input must be an object", clineHost, in.HookName, in.HookName)
		}
		if hook == "PostToolUse" && isClineStandIn(c.Name, c.Input) {
			// The result of the stand-in a denied call was replaced by (its
			// reason, printed): the host delivered the denial. Recorded as
			// such, not judged as a result of the call.
			e["hook_point"] = aarts.HookHostLifecycle
			e["host_event"] = "tool_result"
			e["details"] = map[string]any{"tool_call_id": c.ID, "denied_call_replaced": true}
			return e, nil
		}
		name := c.Name
		if server, tool, ok := strings.Cut(name, "__"); ok && server != "" && tool != "" && !strings.HasPrefix(name, "mcp__") && aarts.StandardTool(name) == aarts.ToolOther {
			// An MCP server's tool, which Cline names SERVER__TOOL.
			name = "mcp__" + name
			e["tool_name_host"] = c.Name // agentledger extension: Cline's own name for it
			setMCPServer(e, server, "", "")
		}
		setTool(e, hook, c.ID, name, c.Input)
		if hook == "PostToolUse" {
			var out any = json.RawMessage(in.ToolResult.Output)
			if len(in.ToolResult.Output) == 0 {
				out = nil
			}
			e["tool_result"] = out
			if in.ToolResult.Error != "" {
				e["tool_failed"] = true
			}
		}
	case "agent_start":
		if sub {
			// A sub-agent's start: a spawn in the session, reported after
			// the fact.
			e["hook_point"] = "PreSubAgentSpawn"
			e["sub_agent_id"] = SubAgentSession(root, in.AgentID)
			e["sub_agent_type"] = "cline"
			e["delegated_task"] = ""
			return e, nil
		}
		e["hook_point"] = "SessionStart"
		e["environment"] = map[string]any{"cwd": cwd, "host_version": in.ClineVersion, "task_id": in.TaskID}
		return e, nil
	case "agent_end":
		text := ""
		if in.Turn != nil {
			text = in.Turn.OutputText
		}
		if sub {
			e["hook_point"] = "PostSubAgentResult"
			e["sub_agent_id"] = SubAgentSession(root, in.AgentID)
			e["result"] = text
			return e, nil
		}
		e["hook_point"] = "PreOutputDeliver"
		e["turn_id"] = in.TaskID
		e["output_text"] = text
		return e, nil
	case "prompt_submit":
		prompt := ""
		if in.UserPromptSubmit != nil {
			prompt = in.UserPromptSubmit.Prompt
		}
		e["hook_point"] = "PreUserInput"
		e["turn_id"] = in.TaskID
		e["raw_input"] = prompt
		e["input_source"] = "host"
	case "session_shutdown":
		e["hook_point"] = "SessionEnd"
		e["reason"] = strings.Trim(string(in.Reason), `"`)
		return e, nil
	case "agent_error", "agent_abort", "agent_resume":
		e["hook_point"] = aarts.HookHostLifecycle
		e["host_event"] = in.HookName
		details := map[string]any{}
		if len(in.Reason) > 0 {
			details["reason"] = in.Reason
		}
		if len(in.Error) > 0 {
			details["error"] = in.Error
		}
		e["details"] = details
		return e, nil
	default:
		return nil, nil
	}
	if sub {
		// A sub-agent's own event: its session is a child of the one the
		// host names.
		e["session_id"] = SubAgentSession(root, in.AgentID)
		e["parent_session_id"] = root
		e["is_sub_agent"] = true
	} else if e["hook_point"] == "PreToolUse" {
		e["is_sub_agent"] = false
	}
	return e, nil
}

// clineBlocking: the Cline events that wait for the hook.
func clineBlocking(event string) bool {
	switch event {
	case "tool_call", "tool_result", "":
		return true
	}
	return false
}

// renderCline renders an answer as Cline reads it on stdout.
func renderCline(event string, input []byte, r Answer) json.RawMessage {
	out := map[string]any{}
	switch event {
	case "tool_call", "":
		switch {
		case r.Decision != aarts.Allow:
			var in struct {
				ToolCall struct{ Name string } `json:"tool_call"`
			}
			_ = json.Unmarshal(input, &in)
			reason := Reason(r)
			if in.ToolCall.Name == "run_commands" {
				// The call is replaced by one that says why: the model is
				// told, and the run goes on.
				out["overrideInput"] = map[string]any{"commands": []string{clineStandIn(reason)}}
				out["contextModification"] = reason
			} else {
				out["cancel"], out["errorMessage"] = true, reason
			}
		case r.Rewrite != nil:
			out["overrideInput"] = r.Rewrite
		}
	case "tool_result":
		if r.Decision != aarts.Allow {
			// Cline cannot change a result: the run ends before the model
			// sees it.
			out["cancel"], out["errorMessage"] = true, WithheldNotice+Reason(r)
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// The stand-in a denied shell call is replaced by: it prints the reason
// and fails.
const (
	standInHead = "printf '%s\\n' "
	standInTail = "; exit 126"
)

func clineStandIn(reason string) string { return standInHead + shellQuoted(reason) + standInTail }

// isClineStandIn reports whether a call is exactly such a stand-in: a
// printf of one literal word (whatever the word, it runs nothing else).
func isClineStandIn(tool string, input json.RawMessage) bool {
	var in struct {
		Commands []string `json:"commands"`
	}
	if tool != "run_commands" || json.Unmarshal(input, &in) != nil || len(in.Commands) != 1 {
		return false
	}
	quoted, ok := strings.CutPrefix(in.Commands[0], standInHead)
	if quoted, ok = strings.CutSuffix(quoted, standInTail); !ok || len(quoted) < 2 {
		return false
	}
	return quoted == shellQuoted(strings.ReplaceAll(quoted[1:len(quoted)-1], `'\''`, "'"))
}

// shellQuoted is s as one single-quoted word of the POSIX shell.
func shellQuoted(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
