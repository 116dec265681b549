package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// ClaudeCodeInput is what Claude Code writes on a command hook's stdin.
type ClaudeCodeInput struct {
	SessionID          string          `json:"session_id"`
	TranscriptPath     string          `json:"transcript_path"`
	Cwd                string          `json:"cwd"`
	PermissionMode     string          `json:"permission_mode"`
	HookEventName      string          `json:"hook_event_name"`
	ToolName           string          `json:"tool_name,omitempty"`
	ToolInput          json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID          string          `json:"tool_use_id,omitempty"`
	ToolResponse       json.RawMessage `json:"tool_response,omitempty"`
	Prompt             string          `json:"prompt,omitempty"`
	Source             string          `json:"source,omitempty"`
	Model              string          `json:"model,omitempty"`
	Reason             string          `json:"reason,omitempty"`
	Trigger            string          `json:"trigger,omitempty"`
	CustomInstructions string          `json:"custom_instructions,omitempty"`
	StopHookActive     bool            `json:"stop_hook_active,omitempty"`
	LastAssistant      string          `json:"last_assistant_message,omitempty"`
}

// ParseClaudeCode reads a Claude Code hook input, naming what is missing.
func ParseClaudeCode(stdin []byte) (*ClaudeCodeInput, error) {
	var in ClaudeCodeInput
	if err := json.Unmarshal(bytes.TrimSpace(stdin), &in); err != nil {
		return nil, fmt.Errorf("claude code hook input is not a JSON object: %w", err)
	}
	switch {
	case in.SessionID == "":
		return nil, fmt.Errorf("claude code hook input: missing session_id")
	case in.HookEventName == "":
		return nil, fmt.Errorf("claude code hook input: missing hook_event_name")
	}
	if in.HookEventName == "PreToolUse" || in.HookEventName == "PostToolUse" {
		if in.ToolName == "" {
			return nil, fmt.Errorf("claude code %s input: missing tool_name", in.HookEventName)
		}
		if len(in.ToolInput) == 0 || in.ToolInput[0] != '{' {
			return nil, fmt.Errorf("claude code %s input: tool_input must be an object", in.HookEventName)
		}
	}
	return &in, nil
}

// AARTS maps a Claude Code hook input to the AARTS hook event the engine
// decides on, stamped at now: UserPromptSubmit is PreUserInput, Stop and
// SubagentStop are PreOutputDeliver (they end a turn, not the session), the
// tool names go through the taxonomy with the native name kept. ok is false
// for events AARTS has no hook point for (Notification).
func (in *ClaudeCodeInput) AARTS(now time.Time) (event []byte, ok bool, err error) {
	e := map[string]any{
		"session_id": in.SessionID, "timestamp": now.UTC().Format(time.RFC3339Nano), "host_id": "claude-code",
		"aarts_version": aarts.Version, "cwd": in.Cwd,
	}
	turn := in.ToolUseID
	if turn == "" {
		turn = "turn"
	}
	tool := func() {
		e["turn_id"] = turn
		e["tool_name"] = aarts.Canonical(in.ToolName)
		e["tool_name_native"] = in.ToolName
		e["tool_input"] = in.ToolInput
		e["artifacts"] = []any{}
	}
	switch in.HookEventName {
	case "PreToolUse":
		e["hook_point"] = "PreToolUse"
		tool()
	case "PostToolUse":
		e["hook_point"] = "PostToolUse"
		tool()
		if len(in.ToolResponse) > 0 {
			e["tool_result"] = in.ToolResponse
		} else {
			e["tool_result"] = ""
		}
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
	case "Stop", "SubagentStop":
		e["hook_point"] = "PreOutputDeliver"
		e["turn_id"] = turn
		e["output_text"] = in.LastAssistant
	case "PreCompact":
		e["hook_point"] = "PreCompact"
		e["turn_id"] = turn
		e["context_before"] = in.TranscriptPath
		e["compaction_reason"] = map[string]string{"manual": "user_triggered", "auto": "token_limit"}[in.Trigger]
	default:
		return nil, false, nil
	}
	raw, err := json.Marshal(e)
	return raw, true, err
}

// ClaudeCodeOutput renders a verdict as Claude Code expects it on stdout
// for the hook event: PreToolUse gets a permission decision; PostToolUse and
// UserPromptSubmit a block with its reason when denied; the rest nothing.
func ClaudeCodeOutput(event string, r HookResponse) []byte {
	reason := strings.Join(r.Reasons, "; ")
	if reason == "" {
		reason = "agentledger: " + r.ReasonCode
	} else {
		reason = "agentledger: " + reason
	}
	var out any = map[string]any{}
	switch event {
	case "PreToolUse":
		out = map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "permissionDecision": r.Decision, "permissionDecisionReason": reason,
		}}
	case "PostToolUse":
		if r.Decision != aarts.Allow { // no prompt here: ask is deny (AARTS §6.6)
			out = map[string]any{"decision": "block", "reason": reason, "hookSpecificOutput": map[string]any{
				"hookEventName": "PostToolUse", "additionalContext": "agentledger withheld this tool result: " + reason,
			}}
		}
	case "UserPromptSubmit":
		if r.Decision != aarts.Allow {
			out = map[string]any{"decision": "block", "reason": reason}
		}
	}
	b, _ := json.Marshal(out)
	return append(b, '\n')
}

// PostHook sends one hook event to a running engine and returns its answer.
func PostHook(ctx context.Context, client *http.Client, baseURL, token string, event []byte) (HookResponse, error) {
	var r HookResponse
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(baseURL, "/")+"/v1/hooks", bytes.NewReader(event))
	if err != nil {
		return r, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return r, fmt.Errorf("engine %s: %w", baseURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return r, fmt.Errorf("engine %s: %w", baseURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		_ = json.Unmarshal(body, &e)
		return r, fmt.Errorf("engine %s: %s: %s", baseURL, resp.Status, e.Error)
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("engine %s: bad answer: %w", baseURL, err)
	}
	return r, nil
}
