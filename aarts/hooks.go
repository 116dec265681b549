package aarts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ModifierEntry is one hook or processor that touched content (§6.2.4).
type ModifierEntry struct {
	ModifierID   string `json:"modifier_id"`
	ConfigSource string `json:"config_source"`
	Modified     bool   `json:"modified"`
}

// Modification is the Modification Tracking extension (§6.2.4).
type Modification struct {
	OriginalValue any             `json:"original_value"`
	ModifiedValue any             `json:"modified_value"`
	WasModified   bool            `json:"was_modified"`
	ModifierChain []ModifierEntry `json:"modifier_chain"`
}

// Provenance is the Provenance extension (§6.2.5).
type Provenance struct {
	SourcePromptModified bool            `json:"source_prompt_modified,omitempty"`
	ActiveSkill          string          `json:"active_skill,omitempty"`
	IsSubAgent           bool            `json:"is_sub_agent,omitempty"`
	ParentSessionID      string          `json:"parent_session_id,omitempty"`
	InputModifierChain   []ModifierEntry `json:"input_modifier_chain,omitempty"`
}

// Hook-specific fields of each hook point (§8).
type (
	SessionStart struct {
		Plugins              []any          `json:"plugins,omitempty"`
		ConfigurationSources []any          `json:"configuration_sources,omitempty"`
		Environment          map[string]any `json:"environment,omitempty"`
	}
	SessionEnd struct {
		Summary map[string]any `json:"summary,omitempty"`
	}
	PrePluginLoad struct {
		PluginID            string   `json:"plugin_id"`
		FilePaths           []string `json:"file_paths"`
		FileHashes          []string `json:"file_hashes,omitempty"`
		DeclaredHooks       []any    `json:"declared_hooks"`
		DeclaredPermissions []any    `json:"declared_permissions,omitempty"`
	}
	PreSkillLoad struct {
		FilePath      string         `json:"file_path"`
		FileHash      string         `json:"file_hash,omitempty"`
		Frontmatter   map[string]any `json:"frontmatter"`
		DeclaredHooks []any          `json:"declared_hooks"`
		BodyContent   string         `json:"body_content,omitempty"`
		LoadContext   string         `json:"load_context"`
	}
	PreMCPConnect struct {
		ServerID          string `json:"server_id"`
		Transport         string `json:"transport"`
		ServerURI         string `json:"server_uri,omitempty"`
		ServerCommand     string `json:"server_command,omitempty"`
		DeclaredTools     []any  `json:"declared_tools,omitempty"`
		DeclaredResources []any  `json:"declared_resources,omitempty"`
	}
	PreUserInput struct {
		RawInput      string `json:"raw_input"`
		InputSource   string `json:"input_source,omitempty"`
		AttachedFiles []any  `json:"attached_files,omitempty"`
	}
	PreLLMRequest struct {
		FullPrompt         any    `json:"full_prompt"`
		SystemPrompt       string `json:"system_prompt,omitempty"`
		CustomInstructions []any  `json:"custom_instructions,omitempty"`
		ContextInjections  []any  `json:"context_injections,omitempty"`
		UserInput          string `json:"user_input,omitempty"`
		ModelID            string `json:"model_id,omitempty"`
		TokenCount         *int64 `json:"token_count,omitempty"`
	}
	PostLLMResponse struct {
		ResponseText   string `json:"response_text"`
		PlannedActions []any  `json:"planned_actions,omitempty"`
		StopReason     string `json:"stop_reason,omitempty"`
	}
	PreCompact struct {
		ContextBefore      any    `json:"context_before"`
		TokenCountBefore   *int64 `json:"token_count_before,omitempty"`
		CompactionReason   string `json:"compaction_reason,omitempty"`
		CompactionStrategy string `json:"compaction_strategy,omitempty"`
	}
	PostCompact struct {
		TokenCountAfter        *int64 `json:"token_count_after,omitempty"`
		CompactionStrategyUsed string `json:"compaction_strategy_used,omitempty"`
	}
	PostToolUse struct {
		ToolResult          any    `json:"tool_result"`
		ExitCode            *int64 `json:"exit_code,omitempty"`
		ExecutionDurationMs *int64 `json:"execution_duration_ms,omitempty"`
		SideEffects         []any  `json:"side_effects,omitempty"`
	}
	PreSubAgentSpawn struct {
		SubAgentID        string         `json:"sub_agent_id"`
		SubAgentType      string         `json:"sub_agent_type,omitempty"`
		DelegatedTask     string         `json:"delegated_task"`
		SkillFiles        []string       `json:"skill_files,omitempty"`
		DeclaredHooks     []any          `json:"declared_hooks,omitempty"`
		RequestedTools    []string       `json:"requested_tools,omitempty"`
		ParentPermissions map[string]any `json:"parent_permissions,omitempty"`
	}
	PostSubAgentResult struct {
		SubAgentID     string `json:"sub_agent_id"`
		Result         any    `json:"result"`
		ToolCallsMade  []any  `json:"tool_calls_made,omitempty"`
		VerdictsIssued []any  `json:"verdicts_issued,omitempty"`
	}
	PreOutputDeliver struct {
		OutputText   string `json:"output_text"`
		ActionsTaken []any  `json:"actions_taken,omitempty"`
	}
	PreMemoryWrite struct {
		MemoryStore string `json:"memory_store"`
		Content     any    `json:"content"`
		MemoryType  string `json:"memory_type,omitempty"`
		WriteSource string `json:"write_source,omitempty"`
	}
	PreMemoryRead struct {
		MemoryStore      string `json:"memory_store"`
		Query            string `json:"query,omitempty"`
		RetrievedContent any    `json:"retrieved_content"`
	}
	PostAskResolution struct {
		OriginalHookPoint string  `json:"original_hook_point"`
		OriginalVerdict   Verdict `json:"original_verdict"`
		Resolution        string  `json:"resolution"`
	}
	Sanitized struct {
		SanitizerKey string `json:"sanitizer_key"`
		Method       string `json:"method,omitempty"`
		Detail       string `json:"detail,omitempty"`
	}
	HostLifecycle struct {
		HostEvent string         `json:"host_event"`
		Details   map[string]any `json:"details,omitempty"`
	}
)

// Fields decodes the hook point's own fields (and, for hooks that carry
// them, the Modification and Provenance extensions) into their Go types: a
// *PreMCPConnect for PreMCPConnect, and so on; PreToolUse,
// PreToolInputModification and PostInputProcessing give their extensions.
// A member of the wrong type is a *ValidationError naming it.
func (e *Event) Fields() (any, error) {
	raw, err := json.Marshal(e.Raw)
	if err != nil {
		return nil, &ValidationError{HookPoint: e.HookPoint, Field: "$", Msg: err.Error()}
	}
	return e.decodeFields(raw)
}

// fieldsOf is a new value of the Go type of hookPoint's own fields, or
// nil for an unknown hook point.
func fieldsOf(hookPoint string) any {
	switch hookPoint {
	case "SessionStart":
		return &SessionStart{}
	case "SessionEnd":
		return &SessionEnd{}
	case "PrePluginLoad":
		return &PrePluginLoad{}
	case "PreSkillLoad":
		return &PreSkillLoad{}
	case "PreMCPConnect":
		return &PreMCPConnect{}
	case "PreUserInput":
		return &PreUserInput{}
	case "PostInputProcessing", "PreToolInputModification":
		return &Modification{}
	case "PreLLMRequest":
		return &PreLLMRequest{}
	case "PostLLMResponse":
		return &PostLLMResponse{}
	case "PreCompact":
		return &PreCompact{}
	case "PostCompact":
		return &PostCompact{}
	case "PreToolUse":
		return &Provenance{}
	case "PostToolUse":
		return &PostToolUse{}
	case "PreSubAgentSpawn":
		return &PreSubAgentSpawn{}
	case "PostSubAgentResult":
		return &PostSubAgentResult{}
	case "PreOutputDeliver":
		return &PreOutputDeliver{}
	case "PreMemoryWrite":
		return &PreMemoryWrite{}
	case "PreMemoryRead":
		return &PreMemoryRead{}
	case "PostAskResolution":
		return &PostAskResolution{}
	case HookSanitized:
		return &Sanitized{}
	case HookHostLifecycle:
		return &HostLifecycle{}
	}
	return nil
}

func (e *Event) decodeFields(raw []byte) (any, error) {
	v := fieldsOf(e.HookPoint)
	if v == nil {
		return nil, &ValidationError{Field: "hook_point", Msg: fmt.Sprintf("unknown hook point %q", e.HookPoint)}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, &ValidationError{HookPoint: e.HookPoint, Field: ute.Field, Msg: fmt.Sprintf("has the wrong type (%s)", ute.Value)}
		}
		return nil, &ValidationError{HookPoint: e.HookPoint, Field: "$", Msg: err.Error()}
	}
	return v, nil
}
