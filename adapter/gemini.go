package adapter

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// GeminiInput is what Gemini CLI writes on a command hook's stdin
// (settings.json "hooks"): the fields every event carries and those of the
// events the adapter maps.
type GeminiInput struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	Timestamp      json.RawMessage `json:"timestamp"`

	ToolName     string          `json:"tool_name,omitempty"`
	ToolInput    json.RawMessage `json:"tool_input,omitempty"`
	ToolResponse json.RawMessage `json:"tool_response,omitempty"` // {llmContent, returnDisplay, error}
	MCPContext   *GeminiMCP      `json:"mcp_context,omitempty"`

	Prompt         *string `json:"prompt,omitempty"`
	PromptResponse string  `json:"prompt_response,omitempty"`
	StopHookActive bool    `json:"stop_hook_active,omitempty"`

	LLMRequest  *GeminiLLMRequest  `json:"llm_request,omitempty"`
	LLMResponse *GeminiLLMResponse `json:"llm_response,omitempty"`

	Source  string `json:"source,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Trigger string `json:"trigger,omitempty"`
}

// GeminiMCP is Gemini CLI's mcp_context: which MCP server a tool call goes
// to (its configured name, which the user chose, and how it is reached).
type GeminiMCP struct {
	ServerName string   `json:"server_name"`
	ToolName   string   `json:"tool_name"`
	Command    string   `json:"command,omitempty"`
	Args       []string `json:"args,omitempty"`
	Cwd        string   `json:"cwd,omitempty"`
	URL        string   `json:"url,omitempty"`
	TCP        string   `json:"tcp,omitempty"`
}

// GeminiLLMRequest is Gemini CLI's SDK-independent model request.
type GeminiLLMRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// GeminiLLMResponse is Gemini CLI's SDK-independent model response (or
// one chunk of a streamed one).
type GeminiLLMResponse struct {
	Candidates []struct {
		Content struct {
			Parts []string `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
}

// geminiBlocking: the Gemini CLI events whose answer can stop something.
// SessionStart, SessionEnd, PreCompress and Notification are advisory.
func geminiBlocking(event string) bool {
	switch event {
	case "SessionStart", "SessionEnd", "PreCompress", "Notification", "BeforeToolSelection":
		return false
	}
	return true
}

// ParseGemini reads a Gemini CLI hook input, naming what is missing or
// malformed.
func ParseGemini(stdin []byte) (*GeminiInput, error) {
	var in GeminiInput
	if err := decodeInput("gemini", stdin, &in); err != nil {
		return nil, err
	}
	if err := required("gemini", in.HookEventName, field{"session_id", in.SessionID}); err != nil {
		return nil, err
	}
	switch in.HookEventName {
	case "BeforeTool", "AfterTool":
		if in.ToolName == "" {
			return nil, fmt.Errorf("gemini %s input: missing tool_name", in.HookEventName)
		}
	case "BeforeAgent":
		if in.Prompt == nil {
			return nil, fmt.Errorf("gemini BeforeAgent input: missing prompt")
		}
	case "BeforeModel", "AfterModel":
		if in.LLMRequest == nil {
			return nil, fmt.Errorf("gemini %s input: missing llm_request", in.HookEventName)
		}
		if in.HookEventName == "AfterModel" && in.LLMResponse == nil {
			return nil, fmt.Errorf("gemini AfterModel input: missing llm_response")
		}
	}
	return &in, nil
}

func mapGemini(native []byte, at time.Time, autoApprove bool) (Mapped, error) {
	in, err := ParseGemini(native)
	if err != nil {
		return Mapped{}, err
	}
	e, err := in.AARTS(at)
	return mapped(in.HookEventName, e, err, autoApprove)
}

// nativeTool is the call's tool name: an MCP tool is named
// mcp__<server>__<tool> from its mcp_context (Gemini CLI's own name for it
// varies with the version), a built-in tool by its own name.
func (in *GeminiInput) nativeTool() string {
	if m := in.MCPContext; m != nil && m.ServerName != "" {
		tool := m.ToolName
		if tool == "" {
			tool = in.ToolName
		}
		return "mcp__" + m.ServerName + "__" + tool
	}
	return in.ToolName
}

// AARTS maps a Gemini CLI hook input to the AARTS hook event, stamped at
// now: BeforeTool/AfterTool are PreToolUse/PostToolUse, BeforeAgent is
// PreUserInput, AfterAgent ends a turn (PreOutputDeliver), BeforeModel and
// AfterModel are PreLLMRequest and PostLLMResponse, PreCompress is
// PreCompact. A nil event is a Gemini CLI event AARTS has no hook point
// for (Notification, BeforeToolSelection).
func (in *GeminiInput) AARTS(now time.Time) (map[string]any, error) {
	e := hostEvent("gemini-cli", in.SessionID, in.Cwd, now)
	turn := hostTurn(in.Timestamp, now)
	switch in.HookEventName {
	case "BeforeTool", "AfterTool":
		args, err := objectInput(in.ToolInput, "gemini "+in.HookEventName, "tool_input")
		if err != nil {
			return nil, err
		}
		// Gemini CLI names no call: the call and its result share their
		// tool and arguments.
		setTool(e, hookOf(strings.ToLower(in.HookEventName)), callTurn(in.nativeTool(), args), in.nativeTool(), args)
		if m := in.MCPContext; m != nil {
			url := m.URL
			if url == "" {
				url = m.TCP
			}
			setMCPServer(e, m.ServerName, url, strings.TrimSpace(m.Command+" "+strings.Join(m.Args, " ")))
		}
		if in.HookEventName == "AfterTool" {
			e["tool_result"] = resultOf(in.ToolResponse)
		}
	case "BeforeAgent":
		e["hook_point"] = "PreUserInput"
		e["turn_id"] = turn
		e["raw_input"] = *in.Prompt
		e["input_source"] = "keyboard"
	case "AfterAgent":
		e["hook_point"] = "PreOutputDeliver"
		e["turn_id"] = turn
		e["output_text"] = in.PromptResponse
	case "BeforeModel":
		e["hook_point"] = "PreLLMRequest"
		e["turn_id"] = turn
		messages, system, user := []any{}, []string{}, ""
		for _, m := range in.LLMRequest.Messages {
			messages = append(messages, map[string]any{"role": m.Role, "content": m.Content})
			switch m.Role {
			case "system":
				system = append(system, m.Content)
			case "user":
				user = m.Content
			}
		}
		e["full_prompt"] = messages
		e["system_prompt"] = strings.Join(system, "\n")
		e["user_input"] = user
		e["model_id"] = in.LLMRequest.Model
	case "AfterModel":
		e["hook_point"] = "PostLLMResponse"
		e["turn_id"] = turn
		var text []string
		stop := ""
		for _, c := range in.LLMResponse.Candidates {
			text = append(text, c.Content.Parts...)
			if stop == "" {
				stop = c.FinishReason
			}
		}
		e["response_text"] = strings.Join(text, "")
		e["stop_reason"] = stop
	case "SessionStart":
		e["hook_point"] = "SessionStart"
		e["environment"] = map[string]any{"cwd": in.Cwd, "source": in.Source}
	case "SessionEnd":
		e["hook_point"] = "SessionEnd"
		e["reason"] = in.Reason
	case "PreCompress":
		setCompact(e, turn, in.TranscriptPath, in.Trigger)
	default:
		return nil, nil
	}
	return e, nil
}

// clockTurn names the turn of a host event that carries no call id of its
// own by the time it was received.
func clockTurn(now time.Time) string {
	return "t" + now.UTC().Format("20060102T150405.000000000")
}

// hostTurn names the turn of such an event by the host's own time stamp
// (raw: an RFC 3339 string, or milliseconds since the epoch), so that the
// same input names the same turn whenever it is received; by the time it
// was received (clockTurn) when the host gave none it can read.
func hostTurn(raw json.RawMessage, now time.Time) string {
	var text string
	var ms int64
	switch {
	case json.Unmarshal(raw, &text) == nil:
		if t, err := time.Parse(time.RFC3339Nano, text); err == nil {
			return clockTurn(t)
		}
	case json.Unmarshal(raw, &ms) == nil && ms > 0:
		return clockTurn(time.UnixMilli(ms))
	}
	return clockTurn(now)
}

// renderGemini renders an answer as Gemini CLI reads it for event.
//
// BeforeTool runs after Gemini CLI's own confirmation prompt, so the
// adapter cannot ask there: an ask is a deny (AARTS §6.5) whose reason
// goes to the agent. An allow gives "allow" only when it is an explicit
// allow. A rewrite (MODIFY) is hookSpecificOutput.tool_input, which Gemini
// CLI merges into the call's arguments: a rewrite that drops an argument
// the call had cannot be expressed that way and is a deny; a rewrite that
// needs the user's approval is a deny too. AfterTool, BeforeAgent,
// AfterAgent, BeforeModel and AfterModel take "deny" with its reason (the
// reason replaces a withheld tool result). The advisory events get no
// decision. An event whose name could not be read gets a deny, which
// every blocking event honours.
// geminiAsks: Gemini CLI prompts from no hook — BeforeTool runs after its
// own confirmation, and the other events take allow or deny — so an ask is
// a deny everywhere.
func geminiAsks(string, bool) bool { return false }

func renderGemini(event string, input []byte, r Answer) json.RawMessage {
	reason := Reason(r)
	out := map[string]any{}
	deny := func(why string) {
		out = map[string]any{"decision": aarts.Deny, "reason": why, "systemMessage": why}
	}
	switch {
	case event == "BeforeTool" || event == "":
		rewrite := r.Rewrite
		switch {
		case r.Decision == aarts.Deny:
			deny(reason)
		case r.Decision == aarts.Ask:
			deny(reason + " (approval needed; Gemini CLI cannot ask at this point)")
		case rewrite != nil && r.HostAnswer == aarts.Ask:
			deny("agentledger: this call would run only with rewritten arguments the user approves; Gemini CLI cannot ask at this point")
		case rewrite != nil && event == "":
			deny("agentledger: this input's arguments would have to be rewritten")
		case rewrite != nil:
			if dropped := droppedArgs(input, rewrite); len(dropped) > 0 {
				deny("agentledger: the rewritten call drops " + strings.Join(dropped, ", ") + ", which Gemini CLI cannot remove from a call")
				break
			}
			out["hookSpecificOutput"] = map[string]any{"hookEventName": "BeforeTool", "tool_input": rewrite}
			if r.HostAnswer == aarts.Allow {
				out["decision"] = aarts.Allow
			}
		case r.HostAnswer == aarts.Allow:
			out["decision"] = aarts.Allow
		}
	case event == "AfterTool":
		if r.Decision != aarts.Allow {
			deny("agentledger withheld this tool result: " + reason)
		}
	case geminiBlocking(event):
		if r.Decision != aarts.Allow {
			deny(reason)
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// droppedArgs names the arguments of the call in input that rewrite does
// not have, sorted.
func droppedArgs(input []byte, rewrite map[string]any) []string {
	var in struct {
		ToolInput json.RawMessage `json:"tool_input"`
	}
	_ = json.Unmarshal(input, &in)
	args, _ := objectInput(in.ToolInput, "", "")
	var dropped []string
	for k := range args {
		if _, ok := rewrite[k]; !ok {
			dropped = append(dropped, k)
		}
	}
	sort.Strings(dropped)
	return dropped
}
