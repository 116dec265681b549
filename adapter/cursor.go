package adapter

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// CursorInput is what Cursor writes on a hook's stdin (.cursor/hooks.json
// command hooks): the fields every event carries and those of the events
// the adapter maps.
type CursorInput struct {
	HookEventName  string   `json:"hook_event_name"`
	ConversationID string   `json:"conversation_id"`
	GenerationID   string   `json:"generation_id"`
	WorkspaceRoots []string `json:"workspace_roots"`
	Model          string   `json:"model,omitempty"`
	CursorVersion  string   `json:"cursor_version,omitempty"`
	TranscriptPath string   `json:"transcript_path,omitempty"`

	Command   string          `json:"command,omitempty"` // a shell command, or an MCP server's command
	Cwd       string          `json:"cwd,omitempty"`
	Output    string          `json:"output,omitempty"`
	ToolName  string          `json:"tool_name,omitempty"`
	ToolInput json.RawMessage `json:"tool_input,omitempty"` // an object, or a JSON string holding one
	ToolUseID string          `json:"tool_use_id,omitempty"`
	URL       string          `json:"url,omitempty"`
	Result    json.RawMessage `json:"result_json,omitempty"`
	// ToolOutput is postToolUse's result (a JSON string).
	ToolOutput json.RawMessage `json:"tool_output,omitempty"`
	// Content is the file beforeReadFile is about to hand the agent.
	Content  string          `json:"content,omitempty"`
	FilePath string          `json:"file_path,omitempty"`
	Edits    json.RawMessage `json:"edits,omitempty"`
	Prompt   string          `json:"prompt,omitempty"`
	Status   string          `json:"status,omitempty"`
	// subagentStart's and subagentStop's: the sub-agent (Task tool) the
	// agent starts, its type and task, and how it ended.
	SubagentID           string `json:"subagent_id,omitempty"`
	SubagentType         string `json:"subagent_type,omitempty"`
	Task                 string `json:"task,omitempty"`
	ParentConversationID string `json:"parent_conversation_id,omitempty"`
	Summary              string `json:"summary,omitempty"`
}

// cursorBlocking: the Cursor events whose answer can stop something.
func cursorBlocking(event string) bool {
	switch event {
	case "afterShellExecution", "afterMCPExecution", "afterFileEdit", "afterAgentResponse", "afterAgentThought",
		"postToolUse", "postToolUseFailure", "sessionStart", "sessionEnd", "stop", "preCompact", "subagentStop":
		return false
	}
	return true
}

// ParseCursor reads a Cursor hook input, naming what is missing or
// malformed.
func ParseCursor(stdin []byte) (*CursorInput, error) {
	var in CursorInput
	if err := decodeInput("cursor", stdin, &in); err != nil {
		return nil, err
	}
	if err := required("cursor", in.HookEventName, field{"conversation_id", in.ConversationID}); err != nil {
		return nil, err
	}
	need := func(field, v string) error {
		if v == "" {
			return fmt.Errorf("cursor %s input: missing %s", in.HookEventName, field)
		}
		return nil
	}
	switch in.HookEventName {
	case "beforeShellExecution", "afterShellExecution":
		return &in, need("command", in.Command)
	case "beforeMCPExecution", "afterMCPExecution", "preToolUse", "postToolUse":
		return &in, need("tool_name", in.ToolName)
	case "beforeReadFile", "afterFileEdit":
		return &in, need("file_path", in.FilePath)
	}
	return &in, nil
}

// toolInput is the call's tool_input as an object (Cursor sends MCP
// arguments as an object or as a JSON string holding one).
func (in *CursorInput) toolInput() (map[string]any, error) {
	return objectInput(in.ToolInput, "cursor "+in.HookEventName, "tool_input")
}

// mcpServer names the MCP server of a call from what Cursor says of it:
// the host of its URL, or the program its command runs (the package of an
// npx/uvx/bunx command).
func (in *CursorInput) mcpServer() string {
	if u, err := url.Parse(in.URL); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	words := strings.Fields(in.Command)
	for i, w := range words {
		switch path.Base(w) {
		case "npx", "uvx", "bunx", "pnpx", "node", "python", "python3", "docker":
			continue
		}
		if strings.HasPrefix(w, "-") || i > 0 && (w == "run" || w == "exec") {
			continue
		}
		return strings.TrimSuffix(path.Base(w), "@latest")
	}
	return "cursor"
}

func (in *CursorInput) cwd() string {
	if in.Cwd != "" {
		return in.Cwd
	}
	if len(in.WorkspaceRoots) > 0 {
		return in.WorkspaceRoots[0]
	}
	return ""
}

func mapCursor(native []byte, at time.Time, autoApprove bool) (Mapped, error) {
	in, err := ParseCursor(native)
	if err != nil {
		return Mapped{}, err
	}
	e, err := in.AARTS(at)
	return mapped(in.HookEventName, e, err, autoApprove)
}

// AARTS maps a Cursor hook input to the AARTS hook event, stamped at now:
// shell, MCP, file and generic tool events are PreToolUse or PostToolUse
// with the native tool name kept and mapped through the taxonomy;
// beforeSubmitPrompt is PreUserInput; stop ends a turn (PreOutputDeliver).
// A nil event is a Cursor event AARTS has no hook point for.
func (in *CursorInput) AARTS(now time.Time) (map[string]any, error) {
	turn := in.GenerationID
	if in.ToolUseID != "" {
		turn = in.ToolUseID
	}
	if turn == "" {
		turn = "turn"
	}
	e := hostEvent("cursor", in.ConversationID, in.cwd(), now)
	switch in.HookEventName {
	case "beforeShellExecution", "afterShellExecution":
		setTool(e, hookOf(in.HookEventName), turn, "Shell", map[string]any{"command": in.Command, "cwd": in.cwd()})
		if in.HookEventName == "afterShellExecution" {
			e["tool_result"] = in.Output
		}
	case "beforeMCPExecution", "afterMCPExecution":
		args, err := in.toolInput()
		if err != nil {
			return nil, err
		}
		server := in.mcpServer()
		setTool(e, hookOf(in.HookEventName), turn, "mcp__"+server+"__"+in.ToolName, args)
		setMCPServer(e, server, in.URL, in.Command)
		if in.HookEventName == "afterMCPExecution" {
			e["tool_result"] = resultOf(in.Result)
		}
	case "preToolUse", "postToolUse":
		args, err := in.toolInput()
		if err != nil {
			return nil, err
		}
		setTool(e, hookOf(in.HookEventName), turn, in.ToolName, args)
		if in.HookEventName == "postToolUse" {
			e["tool_result"] = resultOf(in.Result)
			if len(in.ToolOutput) > 0 {
				e["tool_result"] = resultOf(in.ToolOutput)
			}
		}
	case "beforeReadFile":
		// The content Cursor is about to hand the agent is judged (and
		// classified) now: a deny withholds it. Secrets in it are sealed in
		// the record like any other.
		setTool(e, "PreToolUse", turn, "read_file", map[string]any{"file_path": in.FilePath})
		if in.Content != "" {
			e["read_content"] = in.Content
		}
	case "afterFileEdit":
		setTool(e, "PostToolUse", turn, "edit_file", map[string]any{"file_path": in.FilePath, "edits": in.Edits})
		e["tool_result"] = ""
		// agentledger extension: Cursor fires no hook before an edit, so
		// this result has no judged call to be the outcome of.
		e["result_only"] = true
	case "beforeSubmitPrompt":
		e["hook_point"] = "PreUserInput"
		e["turn_id"] = turn
		e["raw_input"] = in.Prompt
		e["input_source"] = "keyboard"
	case "sessionStart":
		e["hook_point"] = "SessionStart"
		e["environment"] = map[string]any{"cwd": in.cwd(), "model": in.Model, "cursor_version": in.CursorVersion}
	case "sessionEnd":
		e["hook_point"] = "SessionEnd"
		e["reason"] = in.Status
	case "stop":
		e["hook_point"] = "PreOutputDeliver"
		e["turn_id"] = turn
		e["output_text"] = ""
	case "subagentStart", "subagentStop":
		// A sub-agent of the conversation (Cursor's Task tool). Cursor
		// names it in the parent's events only: the sub-agent's own calls
		// come in a conversation of their own that nothing links to this
		// one, so its spawn verdict is recorded and enforced here (a deny
		// stops the sub-agent), but no ceiling reaches its calls.
		if in.SubagentID == "" {
			return nil, nil
		}
		if p := in.ParentConversationID; p != "" {
			e["session_id"] = p
		}
		e["sub_agent_id"] = "cursor-subagent:" + in.SubagentID
		if in.HookEventName == "subagentStart" {
			e["hook_point"] = "PreSubAgentSpawn"
			e["sub_agent_type"] = in.SubagentType
			e["delegated_task"] = in.Task
		} else {
			e["hook_point"] = "PostSubAgentResult"
			e["result"] = map[string]any{"status": in.Status, "summary": in.Summary}
		}
	default:
		return nil, nil
	}
	return e, nil
}

// hookOf is the AARTS hook point of a Cursor tool event.
func hookOf(event string) string {
	if strings.HasPrefix(event, "before") || strings.HasPrefix(event, "pre") {
		return "PreToolUse"
	}
	return "PostToolUse"
}

// resultOf is a tool result Cursor sent as JSON text, decoded when it is
// JSON, else kept as the text.
func resultOf(raw json.RawMessage) any {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			return v
		}
		return s
	}
	return raw
}

// renderCursor renders an answer as Cursor reads it for event. A tool
// call gets "permission": an allow only when the host answer is an
// explicit allow (any other allow gives no permission, so Cursor's own
// flow still applies), deny and ask as they are. beforeReadFile cannot
// ask: an ask is a deny there (AARTS §6.5). A rewrite (MODIFY) is only
// possible at preToolUse (updated_input); elsewhere it is a deny.
// cursorAsks: Cursor prompts for a shell command, an MCP call or a tool
// call; it cannot ask before a file read, a sub-agent's start or a prompt
// (an ask there is a deny), nor at an event whose name could not be read.
func cursorAsks(event string, _ bool) bool {
	return event == "beforeShellExecution" || event == "beforeMCPExecution" || event == "preToolUse"
}

func renderCursor(event string, _ []byte, r Answer) json.RawMessage {
	reason := Reason(r)
	out := map[string]any{}
	rewrite := r.Rewrite
	switch event {
	case "beforeShellExecution", "beforeMCPExecution", "preToolUse", "beforeReadFile", "":
		decision := r.Decision
		if decision == aarts.Allow && rewrite != nil {
			if event != "preToolUse" {
				decision = aarts.Deny
				reason = "agentledger: this call's input would have to be rewritten, which Cursor cannot do here"
			} else if r.HostAnswer == aarts.Ask {
				decision = aarts.Ask
			}
		}
		if decision == aarts.Ask && (event == "beforeReadFile" || event == "") {
			decision = aarts.Deny
		}
		if decision == aarts.Allow && r.HostAnswer != aarts.Allow {
			break // no permission: Cursor's own flow applies
		}
		out["permission"] = decision
		if decision != aarts.Allow {
			out["user_message"], out["agent_message"] = reason, reason
		}
		if event == "preToolUse" && rewrite != nil && decision != aarts.Deny {
			out["updated_input"] = rewrite
		}
		if event == "" {
			out["continue"] = false
		}
	case "subagentStart":
		// Cursor takes allow or deny here; no decision lets it start.
		if r.Decision != aarts.Allow || rewrite != nil {
			out["permission"], out["user_message"] = aarts.Deny, reason
		}
	case "beforeSubmitPrompt":
		out["continue"] = r.Decision == aarts.Allow
		if r.Decision != aarts.Allow {
			out["user_message"] = reason
		}
	case "postToolUse":
		// Cursor replaces only an MCP tool's output (other tools' output
		// reaches the model; the record has the denial).
		if r.Decision != aarts.Allow {
			out["additional_context"] = WithheldNotice + reason
			if len(r.Withheld) > 0 {
				out["updated_mcp_tool_output"] = r.Withheld
			}
		}
	}
	b, _ := json.Marshal(out)
	return b
}
