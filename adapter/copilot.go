package adapter

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// CopilotInput is what GitHub Copilot (CLI and coding agent) writes on a
// command hook's stdin, in either of its formats: camelCase fields (hooks
// configured with camelCase event names: the payload does not name its
// event), or snake_case fields with hook_event_name (hooks configured with
// PascalCase names, the VS Code compatible format).
type CopilotInput struct {
	HookEventName string `json:"hook_event_name"`

	SessionID      string          `json:"sessionId"`
	SessionIDSnake string          `json:"session_id"`
	Cwd            string          `json:"cwd"`
	ToolName       string          `json:"toolName"`
	ToolNameSnake  string          `json:"tool_name"`
	ToolArgs       json.RawMessage `json:"toolArgs"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolResult     json.RawMessage `json:"toolResult"`
	ToolResultSn   json.RawMessage `json:"tool_result"`
	Error          json.RawMessage `json:"error"`
	ErrorContext   string          `json:"errorContext"`
	ErrorContextSn string          `json:"error_context"`
	Prompt         *string         `json:"prompt"`
	Source         string          `json:"source"`
	Reason         string          `json:"reason"`
	StopReason     string          `json:"stopReason"`
	StopReasonSn   string          `json:"stop_reason"`
	AgentName      string          `json:"agentName"`
	AgentNameSn    string          `json:"agent_name"`
	Trigger        string          `json:"trigger"`
	TranscriptPath string          `json:"transcriptPath"`
	TranscriptSn   string          `json:"transcript_path"`
	Timestamp      json.RawMessage `json:"timestamp"`
}

// copilotEvents are Copilot's PascalCase event names and their camelCase
// names, which the adapter uses.
var copilotEvents = map[string]string{
	"PreToolUse": "preToolUse", "PostToolUse": "postToolUse", "PostToolUseFailure": "postToolUseFailure",
	"UserPromptSubmit": "userPromptSubmitted", "SessionStart": "sessionStart", "SessionEnd": "sessionEnd",
	"Stop": "agentStop", "SubagentStop": "subagentStop", "ErrorOccurred": "errorOccurred", "PreCompact": "preCompact",
	"Notification": "notification",
}

// event names the input's event: hook_event_name, else read from the
// fields only one event carries.
func (in *CopilotInput) event() string {
	if in.HookEventName != "" {
		return copilotEvent(in.HookEventName)
	}
	switch {
	case len(in.ToolResult) > 0:
		return "postToolUse"
	case in.ToolName != "" && len(in.Error) > 0:
		return "postToolUseFailure"
	case in.ToolName != "":
		return "preToolUse"
	case in.Prompt != nil:
		return "userPromptSubmitted"
	case in.ErrorContext != "":
		return "errorOccurred"
	case in.Trigger != "":
		return "preCompact"
	case in.StopReason != "" && in.AgentName != "":
		return "subagentStop"
	case in.StopReason != "":
		return "agentStop"
	case in.Source != "":
		return "sessionStart"
	case in.Reason != "":
		return "sessionEnd"
	}
	return ""
}

// normalize folds the snake_case fields into the camelCase ones.
func (in *CopilotInput) normalize() {
	pick := func(dst *string, alt string) {
		if *dst == "" {
			*dst = alt
		}
	}
	pick(&in.SessionID, in.SessionIDSnake)
	pick(&in.ToolName, in.ToolNameSnake)
	pick(&in.ErrorContext, in.ErrorContextSn)
	pick(&in.StopReason, in.StopReasonSn)
	pick(&in.AgentName, in.AgentNameSn)
	pick(&in.TranscriptPath, in.TranscriptSn)
	if len(in.ToolArgs) == 0 {
		in.ToolArgs = in.ToolInput
	}
	if len(in.ToolResult) == 0 {
		in.ToolResult = in.ToolResultSn
	}
}

// ParseCopilot reads a Copilot hook input, naming what is missing.
func ParseCopilot(stdin []byte) (*CopilotInput, string, error) {
	var in CopilotInput
	if err := decodeInput("copilot", stdin, &in); err != nil {
		return nil, "", err
	}
	in.normalize()
	event := in.event()
	switch {
	case event == "":
		return nil, "", fmt.Errorf("copilot hook input: cannot tell which event it is (no hook_event_name, and no field only one event has)")
	case (event == "preToolUse" || event == "postToolUse" || event == "postToolUseFailure") && in.ToolName == "":
		return nil, event, fmt.Errorf("copilot %s input: missing toolName", event)
	}
	return &in, event, nil
}

func mapCopilot(native []byte, at time.Time, autoApprove bool) (Mapped, error) {
	in, event, err := ParseCopilot(native)
	if err != nil {
		return Mapped{Native: event}, err
	}
	e, err := in.AARTS(event, at)
	return mapped(event, e, err, autoApprove)
}

// AARTS maps a Copilot hook input for event to the AARTS hook event,
// stamped at now. A nil event is a Copilot event AARTS has no hook point
// for (errorOccurred, notification).
func (in *CopilotInput) AARTS(event string, now time.Time) (map[string]any, error) {
	session, derived := in.SessionID, false
	if session == "" {
		// GitHub's documented payloads carry no session id: the session
		// is the working directory's (and transcript's), recorded as
		// derived.
		sum := sha256.Sum256([]byte(in.Cwd + "\x00" + in.TranscriptPath))
		session, derived = "copilot-"+hex.EncodeToString(sum[:8]), true
	}
	e := hostEvent("copilot", session, in.Cwd, now)
	if derived {
		e["session_derived"] = true // agentledger extension
	}
	turn := hostTurn(in.Timestamp, now)
	switch event {
	case "preToolUse", "postToolUse", "postToolUseFailure":
		args, err := objectInput(in.ToolArgs, "copilot "+event, "toolArgs")
		if err != nil {
			return nil, err
		}
		// Copilot names no call: a call's turn is its tool and arguments,
		// which its preToolUse and postToolUse share.
		turn = callTurn(in.ToolName, args)
		native, server := copilotTool(in.ToolName)
		setTool(e, hookOf(event), turn, native, args)
		if server != "" {
			setMCPServer(e, server, "", "")
			e["tool_name_host"] = in.ToolName // agentledger extension: Copilot's own name for it
		}
		switch event {
		case "postToolUse":
			e["tool_result"] = copilotResult(in.ToolResult)
		case "postToolUseFailure":
			e["tool_result"] = map[string]any{"error": resultOf(in.Error)}
		}
	case "userPromptSubmitted":
		e["hook_point"] = "PreUserInput"
		e["turn_id"] = turn
		e["raw_input"] = *in.Prompt
		e["input_source"] = "keyboard"
	case "sessionStart":
		e["hook_point"] = "SessionStart"
		e["environment"] = map[string]any{"cwd": in.Cwd, "source": in.Source}
	case "sessionEnd":
		e["hook_point"] = "SessionEnd"
		e["reason"] = in.Reason
	case "agentStop", "subagentStop":
		e["hook_point"] = "PreOutputDeliver"
		e["turn_id"] = turn
		e["output_text"] = ""
	case "preCompact":
		setCompact(e, turn, in.TranscriptPath, in.Trigger)
	default:
		return nil, nil
	}
	return e, nil
}

// objectInput is a tool's arguments as an object: hosts send them as an
// object or as a JSON string holding one. Anything else is an error (the
// call is refused, never judged on a guess).
func objectInput(raw json.RawMessage, what, field string) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if raw = []byte(strings.TrimSpace(s)); len(raw) == 0 {
			return map[string]any{}, nil
		}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s input: %s must be an object or a JSON string holding one", what, field)
	}
	return m, nil
}

// copilotResult is the text Copilot hands the model for a tool result.
func copilotResult(raw json.RawMessage) any {
	var r struct {
		Text      string `json:"textResultForLlm"`
		TextSnake string `json:"text_result_for_llm"`
	}
	if json.Unmarshal(raw, &r) == nil && (r.Text != "" || r.TextSnake != "") {
		return r.Text + r.TextSnake
	}
	return resultOf(raw)
}

// copilotBlocking: only preToolUse waits for an answer that can stop the
// call (an input whose event cannot be told counts as blocking).
func copilotBlocking(event string) bool {
	event = copilotEvent(event)
	return event == "preToolUse" || event == ""
}

// copilotEvent is the camelCase name of a Copilot event named either way.
func copilotEvent(name string) string {
	if e, ok := copilotEvents[name]; ok {
		return e
	}
	return name
}

// renderCopilot renders an answer as Copilot reads it: for preToolUse a
// flat permissionDecision, allow only for an explicit allow (any other
// allow gives no decision, so Copilot's own permission flow applies), and
// modifiedArgs for a rewrite, with an explicit allow or for the user to
// approve (ask). Other events need
// no answer. An input whose event could not be told gets a deny, which
// preToolUse honours.
// copilotAsks: GitHub documents that Copilot processes only deny, and the
// cloud coding agent has no one to prompt; the interactive CLI prompts for
// an ask when its hook says so (--host-asks).
// Only preToolUse is asked about (the others have no prompt at all: an
// ask there is a deny).
func copilotAsks(event string, hostAsks bool) bool {
	return hostAsks && copilotEvent(event) == "preToolUse"
}

func renderCopilot(event string, _ []byte, r Answer) json.RawMessage {
	event = copilotEvent(event)
	out := map[string]any{}
	if event == "preToolUse" || event == "" {
		decision := r.Decision
		rewrite := r.Rewrite
		if decision == aarts.Allow && rewrite != nil && r.HostAnswer == aarts.Ask {
			decision = aarts.Ask
		}
		if decision == aarts.Ask && (event == "" || r.HostAnswer == aarts.Deny) {
			decision = aarts.Deny
		}
		if decision != aarts.Allow || r.HostAnswer == aarts.Allow {
			out["permissionDecision"] = decision
			if decision != aarts.Allow {
				out["permissionDecisionReason"] = Reason(r)
			}
			if rewrite != nil && decision != aarts.Deny {
				out["modifiedArgs"] = rewrite
			}
		}
	}
	if event == "postToolUse" && r.Decision != aarts.Allow {
		// The result the model sees instead (command hooks honour
		// modifiedResult in current Copilot CLI).
		out["modifiedResult"] = map[string]any{"resultType": "success", "textResultForLlm": withheldText(r)}
		out["additionalContext"] = WithheldNotice + Reason(r)
	}
	b, _ := json.Marshal(out)
	return b
}

// withheldText is the withheld form as the text a host that takes text
// shows the model.
func withheldText(r Answer) string {
	if len(r.Withheld) == 0 {
		return WithheldNotice + Reason(r)
	}
	var s string
	if json.Unmarshal(r.Withheld, &s) == nil {
		return s
	}
	return string(r.Withheld)
}

// copilotBuiltins are Copilot's own tools whose names could be read as an
// MCP server's (they have a hyphen).
var copilotBuiltins = map[string]bool{"gh-advisory-database": true}

// copilotServers are the MCP servers Copilot brings itself, whose names
// have hyphens of their own.
var copilotServers = []string{"github-mcp-server", "playwright", "fetch", "time"}

// copilotTool reads a Copilot tool name: Copilot names an MCP server's
// tool "<server>-<tool>" (server and tool names cleaned to
// [A-Za-z0-9_-]); its own tools have no hyphen. An MCP tool is named
// mcp__<server>__<tool>, as every other host's, and its server returned;
// a server Copilot does not bring itself is the name up to the last
// hyphen (tool names are snake_case).
func copilotTool(name string) (native, server string) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 || copilotBuiltins[name] || strings.HasPrefix(name, "mcp__") {
		return name, ""
	}
	server = name[:i]
	known := ""
	for _, s := range copilotServers {
		if strings.HasPrefix(name, s+"-") && len(name) > len(s)+1 && len(s) > len(known) {
			known = s
		}
	}
	if known != "" {
		server = known
	}
	return "mcp__" + server + "__" + name[len(server)+1:], server
}
