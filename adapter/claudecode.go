package adapter

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// ClaudeCodeInput is what Claude Code writes on a command hook's stdin.
type ClaudeCodeInput struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	HookEventName  string `json:"hook_event_name"`
	// PromptID names the user prompt being processed (Claude Code
	// 2.1.196+; absent before the first one): the turn of events that are
	// not a tool call.
	PromptID  string          `json:"prompt_id,omitempty"`
	ToolName  string          `json:"tool_name,omitempty"`
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// CallingSessionID is Droid's: a sub-agent's session names its caller.
	CallingSessionID   string          `json:"calling_session_id,omitempty"`
	ToolResponse       json.RawMessage `json:"tool_response,omitempty"`
	Prompt             string          `json:"prompt,omitempty"`
	Source             string          `json:"source,omitempty"`
	Model              string          `json:"model,omitempty"`
	Reason             string          `json:"reason,omitempty"`
	Trigger            string          `json:"trigger,omitempty"`
	CustomInstructions string          `json:"custom_instructions,omitempty"`
	StopHookActive     bool            `json:"stop_hook_active,omitempty"`
	// Error, IsInterrupt and DurationMs are PostToolUseFailure's: what
	// went wrong with a call that ran (or could not start).
	Error         string `json:"error,omitempty"`
	IsInterrupt   bool   `json:"is_interrupt,omitempty"`
	DurationMs    int64  `json:"duration_ms,omitempty"`
	LastAssistant string `json:"last_assistant_message,omitempty"`
	// CompactSummary is PostCompact's: the summary the conversation goes
	// on from.
	CompactSummary string `json:"compact_summary,omitempty"`
	// TurnID is Codex's: the turn every event after SessionStart belongs
	// to.
	TurnID string `json:"turn_id,omitempty"`
	// ConfigChange's: which configuration changed (Source above names its
	// kind), and InstructionsLoaded's: the instruction file loaded, its
	// scope and why.
	FilePath        string   `json:"file_path,omitempty"`
	MemoryType      string   `json:"memory_type,omitempty"`
	LoadReason      string   `json:"load_reason,omitempty"`
	Globs           []string `json:"globs,omitempty"`
	TriggerFilePath string   `json:"trigger_file_path,omitempty"`
	ParentFilePath  string   `json:"parent_file_path,omitempty"`
	// AgentID and AgentType name the sub-agent an event is of (Claude Code
	// and Codex: SubagentStart, SubagentStop and the sub-agent's calls).
	AgentID   string `json:"agent_id,omitempty"`
	AgentType string `json:"agent_type,omitempty"`
}

// ParseClaudeCode reads a Claude Code hook input, naming what is missing.
func ParseClaudeCode(stdin []byte) (*ClaudeCodeInput, error) {
	return parseClaudeLike("claude code", stdin)
}

// parseClaudeLike reads the input of a host whose hooks take Claude Code's
// shape (Claude Code, Codex), naming the host in its errors.
func parseClaudeLike(host string, stdin []byte) (*ClaudeCodeInput, error) {
	var in ClaudeCodeInput
	if err := decodeInput(host, stdin, &in); err != nil {
		return nil, err
	}
	if err := required(host, in.HookEventName, field{"session_id", in.SessionID}); err != nil {
		return nil, err
	}
	switch in.HookEventName {
	case "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest":
		if in.ToolName == "" {
			return nil, fmt.Errorf("%s %s input: missing tool_name", host, in.HookEventName)
		}
		if len(in.ToolInput) == 0 || in.ToolInput[0] != '{' {
			return nil, fmt.Errorf("%s %s input: tool_input must be an object", host, in.HookEventName)
		}
	}
	return &in, nil
}

func mapClaudeCode(native []byte, at time.Time, autoApprove bool) (Mapped, error) {
	in, err := ParseClaudeCode(native)
	if err != nil {
		return Mapped{}, err
	}
	return mapClaudeLike("claude-code", in, at, autoApprove)
}

// mapClaudeLike maps the input of a host whose hooks take Claude Code's
// shape.
func mapClaudeLike(host string, in *ClaudeCodeInput, at time.Time, autoApprove bool) (Mapped, error) {
	e, err := in.event(host, at)
	return mapped(in.HookEventName, e, err, autoApprove)
}

// claudeCodeBlocking: the Claude Code events whose answer can stop
// something (a tool call, a tool result reaching Claude, a prompt).
func claudeCodeBlocking(event string) bool {
	switch event {
	case "SessionStart", "SessionEnd", "Stop", "SubagentStart", "SubagentStop", "Notification", "PermissionDenied", "PostCompact",
		"ConfigChange", "InstructionsLoaded":
		return false
	}
	return true
}

// claudeCodeDefers: Claude Code defers a PreToolUse in print mode (-p). It
// ignores the deferral when the model made several calls at once and
// then runs the call through its own permission flow, so a deferral is
// given only in modes where that flow stops what it has not been told to
// allow (default, plan, dontAsk); in the others an unattended ask is a
// deny.
// claudeCodeAsks: Claude Code prompts its user for an ask at PreToolUse; an
// ask at any other event (its PermissionRequest included) is rendered as a
// block, a deny.
func claudeCodeAsks(event string, _ bool) bool { return event == "PreToolUse" }

func claudeCodeDefers(event string, input []byte) bool {
	if event != "PreToolUse" {
		return false
	}
	var in struct {
		PermissionMode string `json:"permission_mode"`
	}
	_ = json.Unmarshal(input, &in)
	switch in.PermissionMode {
	case "", "default", "plan", "dontAsk":
		return true
	}
	return false
}

// AARTS maps a Claude Code hook input to the AARTS hook event the engine
// decides on, stamped at now: UserPromptSubmit is PreUserInput, Stop and
// SubagentStop are PreOutputDeliver (they end a turn, not the session), the
// tool names go through the taxonomy with the native name kept. ok is false
// for events AARTS has no hook point for (Notification).
func (in *ClaudeCodeInput) AARTS(now time.Time) (event []byte, ok bool, err error) {
	e, err := in.event("claude-code", now)
	if err != nil || e == nil {
		return nil, false, err
	}
	event, err = json.Marshal(e)
	return event, true, err
}

// event maps the input as host sent it (Claude Code, or Codex, whose hooks
// take the same shape): a call's turn is its tool_use_id, any other
// event's the prompt it belongs to (Claude Code's prompt_id, Codex's
// turn_id).
// A nil event is one AARTS has no hook point for.
func (in *ClaudeCodeInput) event(host string, now time.Time) (map[string]any, error) {
	e := hostEvent(host, in.SessionID, in.Cwd, now)
	turn := in.ToolUseID
	if turn == "" {
		turn = cmp.Or(in.PromptID, in.TurnID, "turn")
	}
	switch in.HookEventName {
	case "PreToolUse":
		setTool(e, "PreToolUse", turn, in.ToolName, in.ToolInput)
		if in.PermissionMode != "" {
			// agentledger extension: whether the host will prompt at all.
			e["permission_mode"] = in.PermissionMode
		}
	case "PermissionRequest":
		// The host is about to prompt its user for a call it sent as
		// PreToolUse (a sandbox escalation, network access): judged again
		// as the call it is, in a turn of its own (the host names no
		// tool_use_id here).
		setTool(e, "PreToolUse", permissionTurn(in), in.ToolName, in.ToolInput)
		e["permission_request"] = true // agentledger extension
	case "PostToolUse":
		setTool(e, "PostToolUse", turn, in.ToolName, in.ToolInput)
		if len(in.ToolResponse) > 0 {
			e["tool_result"] = in.ToolResponse
		} else {
			e["tool_result"] = ""
		}
	case "PermissionDenied":
		// The host refused the call itself (auto mode's classifier, plan
		// mode's re-check of an allow): it never ran, and the model got
		// the refusal as the call's result. Recorded as that result; it
		// closes an ask about the call as denied.
		if in.ToolUseID == "" || in.ToolName == "" {
			return nil, nil
		}
		setTool(e, "PostToolUse", turn, in.ToolName, in.ToolInput)
		e["tool_result"] = map[string]any{"error": in.Reason, "permission_denied": true}
		e["tool_failed"] = true
		e["host_refused"] = true // agentledger extension: the host refused the call
	case "PostToolUseFailure":
		// The call ran (or its process could not start) and failed: its
		// result is the error Claude receives as the tool's result.
		setTool(e, "PostToolUse", turn, in.ToolName, in.ToolInput)
		e["tool_result"] = map[string]any{"error": in.Error, "is_interrupt": in.IsInterrupt}
		e["tool_failed"] = true // agentledger extension: Claude Code's PostToolUseFailure
	case "UserPromptSubmit":
		e["hook_point"] = "PreUserInput"
		e["turn_id"] = turn
		e["raw_input"] = in.Prompt
		e["input_source"] = "keyboard"
	case "SessionStart":
		e["hook_point"] = "SessionStart"
		e["environment"] = map[string]any{"cwd": in.Cwd, "source": in.Source, "model": in.Model, "permission_mode": in.PermissionMode}
	case "SessionEnd":
		e["hook_point"] = "SessionEnd"
		e["reason"] = in.Reason
	case "SubagentStart":
		// The host starts a sub-agent of one of its agent types: a spawn
		// in the parent's session, whose verdict is the sub-agent's tool
		// ceiling (the manifest's sub_agents). The task went with the
		// parent's Task/Agent call; the host does not repeat it here.
		if in.AgentID == "" {
			return nil, nil
		}
		e["hook_point"] = "PreSubAgentSpawn"
		e["sub_agent_id"] = SubAgentSession(in.SessionID, in.AgentID)
		e["sub_agent_type"] = in.AgentType
		e["delegated_task"] = ""
	case "SubagentStop":
		if in.AgentID != "" {
			e["hook_point"] = "PostSubAgentResult"
			e["sub_agent_id"] = SubAgentSession(in.SessionID, in.AgentID)
			e["result"] = in.LastAssistant
			break
		}
		e["hook_point"] = "PreOutputDeliver"
		e["turn_id"] = turn
		e["output_text"] = in.LastAssistant
	case "Stop":
		e["hook_point"] = "PreOutputDeliver"
		e["turn_id"] = turn
		e["output_text"] = in.LastAssistant
	case "PreCompact":
		setCompact(e, turn, in.TranscriptPath, in.Trigger)
	case "ConfigChange", "InstructionsLoaded":
		// Recorded as they happened: a settings or skill file changed in
		// the session; an instruction file was loaded into its context.
		// agentledger stops neither.
		details := map[string]any{}
		for k, v := range map[string]string{"source": in.Source, "file_path": in.FilePath, "memory_type": in.MemoryType,
			"load_reason": in.LoadReason, "trigger_file_path": in.TriggerFilePath, "parent_file_path": in.ParentFilePath} {
			if v != "" {
				details[k] = v
			}
		}
		if len(in.Globs) > 0 {
			details["globs"] = in.Globs
		}
		e["hook_point"] = aarts.HookHostLifecycle
		e["host_event"] = in.HookEventName
		e["details"] = details
	case "PostCompact":
		// The conversation replaced by its summary: what the model goes on
		// from (the transcript before it stands by its path).
		e["hook_point"] = "PostCompact"
		e["turn_id"] = turn
		e["original_value"] = in.TranscriptPath
		e["modified_value"] = in.CompactSummary
		e["was_modified"] = true
		e["modifier_chain"] = []string{"claude-code:compact:" + in.Trigger}
	default:
		return nil, nil
	}
	if in.AgentID != "" && e["hook_point"] != "PreSubAgentSpawn" && e["hook_point"] != "PostSubAgentResult" {
		// A sub-agent's own event: its session is the sub-agent's, a
		// child of the one the host names, whose spawn verdict bounds it.
		e["session_id"] = SubAgentSession(in.SessionID, in.AgentID)
		e["parent_session_id"] = in.SessionID
		e["is_sub_agent"] = true
	} else if e["hook_point"] == "PreToolUse" {
		// Provenance (AARTS §6.2.5): the host names a sub-agent's calls
		// by agent_id, so a call without one is the main agent's.
		e["is_sub_agent"] = false
	}
	if in.AgentType != "" && e["hook_point"] == "PreToolUse" {
		e["active_skill"] = in.AgentType // the agent definition the call runs under
	}
	return e, nil
}

// SubAgentSession is the session of the sub-agent agentID of the host
// session parent (Claude Code and Codex name a sub-agent's events by the
// parent's session and the sub-agent's agent_id).
func SubAgentSession(parent, agentID string) string { return parent + ":agent:" + agentID }

// renderClaudeCode renders an answer as Claude Code expects it on stdout
// for the hook event. PreToolUse gets permissionDecision "allow" only when
// the recorded host answer is an explicit allow; any other allow (no
// explicit allow rule, a fail-open failure) gives no decision, so Claude
// Code's own permission flow still applies. A deny or ask maps as it is.
// PostToolUse and UserPromptSubmit get a block with its reason when denied;
// an event whose name could not be read, a block that every blocking event
// honours.
func renderClaudeCode(event string, input []byte, r Answer) json.RawMessage {
	reason := Reason(r)
	var out any = map[string]any{}
	switch event {
	case "PreToolUse":
		decision := r.Decision
		rewrite := r.Rewrite
		if decision == aarts.Allow && rewrite != nil && r.HostAnswer == aarts.Ask {
			decision = aarts.Ask // the user approves the rewritten call
		}
		if decision == aarts.Allow && r.HostAnswer != aarts.Allow {
			break // no decision: Claude Code's own permission flow applies
		}
		if r.HostAnswer == aarts.HostAnswerDefer {
			// No one attends the run: the call waits for its caller (and
			// an approver), who resumes the run.
			out = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PreToolUse", "permissionDecision": aarts.HostAnswerDefer, "permissionDecisionReason": reason}}
			break
		}
		if r.HostAnswer == aarts.Deny {
			decision = aarts.Deny // no one attends the run to be asked
		}
		hso := map[string]any{"hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": reason}
		if rewrite != nil && decision != aarts.Deny {
			hso["updatedInput"] = rewrite
		}
		out = map[string]any{"hookSpecificOutput": hso}
	case "PostToolUseFailure":
		// The error already reached Claude as the tool's result; a denial
		// says so next to it (Claude Code replaces no failed result).
		if r.Decision != aarts.Allow {
			out = map[string]any{"decision": "block", "reason": reason,
				"hookSpecificOutput": map[string]any{"hookEventName": "PostToolUseFailure", "additionalContext": reason}}
		}
	case "PostToolUse":
		if r.Decision != aarts.Allow { // no prompt here: ask is deny (AARTS §6.6)
			hso := map[string]any{"hookEventName": "PostToolUse", "additionalContext": WithheldNotice + reason}
			if len(r.Withheld) > 0 {
				// The result Claude sees instead (Claude Code 2.1.121+ for
				// every tool; updatedMCPToolOutput before that, MCP only).
				hso["updatedToolOutput"] = r.Withheld
				if tool := probeToolName(input); strings.HasPrefix(tool, "mcp__") {
					hso["updatedMCPToolOutput"] = r.Withheld
				}
			}
			out = map[string]any{"decision": "block", "reason": reason, "hookSpecificOutput": hso}
		}
	case "UserPromptSubmit":
		if r.Decision != aarts.Allow {
			out = map[string]any{"decision": "block", "reason": reason}
		}
	default:
		if r.Decision != aarts.Allow && claudeCodeBlocking(event) {
			out = map[string]any{"decision": "block", "reason": reason}
		}
	}
	if event != "PreToolUse" && r.Rewrite != nil && claudeCodeBlocking(event) {
		// A rewrite Claude Code cannot apply at this event: deny instead.
		out = map[string]any{"decision": "block", "reason": "agentledger: this event's input would have to be rewritten, which Claude Code cannot do here"}
	}
	b, _ := json.Marshal(out)
	return b
}

// probeToolName reads the tool_name of a host's input, or "".
func probeToolName(input []byte) string {
	var in struct {
		ToolName string `json:"tool_name"`
	}
	_ = json.Unmarshal(input, &in)
	return in.ToolName
}

// permissionTurn is the turn of a PermissionRequest: the call it asks
// about, within the host's turn.
func permissionTurn(in *ClaudeCodeInput) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(in.TurnID), []byte(in.ToolName), in.ToolInput} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return "permission-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// claudeCodeSpawner finds the sub-agent that started the sub-agent whose
// event input is. Claude Code reports every spawn (SubagentStart) in the
// main session, and names no spawner in any hook input; it records each
// sub-agent's in a file beside the session's transcript,
// SESSION/subagents/agent-ID.meta.json (parentAgentId, for one started by
// another sub-agent), written by the time the sub-agent makes its first
// call (not yet at SubagentStart). Every name that makes the path is
// checked before it is read.
func claudeCodeSpawner(input []byte, read func(string) ([]byte, error)) (string, bool) {
	var in struct {
		SessionID      string `json:"session_id"`
		AgentID        string `json:"agent_id"`
		TranscriptPath string `json:"transcript_path"`
	}
	if json.Unmarshal(input, &in) != nil || !plainName(in.AgentID) || !plainName(in.SessionID) ||
		!filepath.IsAbs(in.TranscriptPath) || filepath.Base(in.TranscriptPath) != in.SessionID+".jsonl" {
		return "", false
	}
	meta := filepath.Join(filepath.Dir(in.TranscriptPath), in.SessionID, "subagents", "agent-"+in.AgentID+".meta.json")
	raw, err := read(meta)
	if err != nil {
		return "", false
	}
	var m struct {
		ParentAgentID string `json:"parentAgentId"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return "", false
	}
	if m.ParentAgentID == "" || m.ParentAgentID == in.AgentID || !plainName(m.ParentAgentID) {
		return "", true // started by the main session (or named by what cannot be a name)
	}
	return SubAgentSession(in.SessionID, m.ParentAgentID), true
}

// plainName reports whether s is a name that is safe as one path element:
// letters, digits, '-' and '_', at most 128 of them.
func plainName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
