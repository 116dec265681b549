// Package aarts is the AARTS v0.1 data model as agentledger reads it: hook
// events with their envelope fields and standard extensions, validation of
// the fields the standard marks MUST, the standard tool taxonomy, the
// engine's own artifact extraction, verdicts and resolutions.
//
// The package is pure: no I/O, no clock.
package aarts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentledger/agentledger/canon"
)

// Version is the AARTS version this package implements.
const Version = "0.1"

// Compatible reports whether an adapter speaking AARTS version v can talk
// to this engine (AARTS §4.2): the same major version, and no later than
// Version.
func Compatible(v string) bool {
	major, minor, ok := strings.Cut(v, ".")
	wantMajor, wantMinor, _ := strings.Cut(Version, ".")
	if !ok || major != wantMajor || minor == "" {
		return false
	}
	a, errA := strconv.Atoi(minor)
	b, errB := strconv.Atoi(wantMinor)
	return errA == nil && errB == nil && a <= b
}

// HookSanitized is agentledger's extension event by which a host registers
// that it sanitized content under a key (payload field sanitizer_key). A
// later tool call that carries the same sanitizer_key is not blocked by
// taint alone.
const HookSanitized = "Sanitized"

// HookHostLifecycle is agentledger's extension event for a host event
// that has no AARTS hook point and stops nothing (Claude Code's
// ConfigChange and InstructionsLoaded): host_event names it, details holds
// what the host said about it. It is recorded, never judged to block.
const HookHostLifecycle = "HostLifecycle"

// Event is an AARTS hook event. Raw holds the whole event as the host sent
// it (numbers as json.Number); the typed fields are the members the engine
// reads, copied out of Raw.
type Event struct {
	HookPoint    string `json:"hook_point"`
	SessionID    string `json:"session_id"`
	Timestamp    string `json:"timestamp"`
	HostID       string `json:"host_id"`
	HostVersion  string `json:"host_version,omitempty"`
	AARTSVersion string `json:"aarts_version"`
	Locale       string `json:"locale,omitempty"`

	TurnID string `json:"turn_id,omitempty"` // Turn Context

	ToolName       string `json:"tool_name,omitempty"` // Tool Context
	ToolNameNative string `json:"tool_name_native,omitempty"`
	ToolInput      any    `json:"tool_input,omitempty"`

	Source   string `json:"source,omitempty"` // Trust Source
	SourceID string `json:"source_id,omitempty"`

	IsSubAgent      bool   `json:"is_sub_agent,omitempty"` // Provenance
	ParentSessionID string `json:"parent_session_id,omitempty"`
	// SpawnSessionID is the session the host reported a nested
	// sub-agent's spawn in, where it is not its parent's (an agentledger
	// extension, set only by the engine from the host's own record).
	SpawnSessionID string `json:"spawn_session_id,omitempty"`
	ActiveSkill    string `json:"active_skill,omitempty"`

	Cwd          string `json:"cwd,omitempty"`           // host context, when sent
	SanitizerKey string `json:"sanitizer_key,omitempty"` // agentledger extension

	Raw map[string]any `json:"-"`

	// Time is Timestamp, parsed (once, by ParseEvent).
	Time time.Time `json:"-"`

	derived []derivation // Derived, computed on first use
}

// Derived returns what derive makes of the event, computed on the first
// call with key and kept for the event's lifetime, so that a reading of the
// event (its action analysis) is computed once and shared by the reducer,
// the policy and the receipt. key is a value of a type private to the
// deriving package, so derivations never collide. Callers MUST NOT modify
// what is returned. An Event is not safe for concurrent Derived calls.
func (e *Event) Derived(key any, derive func(*Event) any) any {
	for _, d := range e.derived {
		if d.key == key {
			return d.value
		}
	}
	v := derive(e)
	e.derived = append(e.derived, derivation{key, v})
	return v
}

type derivation struct{ key, value any }

// Extensions of AARTS §6.2.
const (
	extTurn         = "turn"
	extTool         = "tool"
	extTrust        = "trust_source"
	extModification = "modification"
	extProvenance   = "provenance"
)

// hookSpec is what AARTS §6.3 and §8 require of one hook point.
type hookSpec struct {
	extensions []string
	required   []string // hook-specific MUST fields
}

var hooks = map[string]hookSpec{
	"SessionStart":             {},
	"SessionEnd":               {},
	"PrePluginLoad":            {[]string{extTrust}, []string{"plugin_id", "file_paths", "declared_hooks"}},
	"PreSkillLoad":             {[]string{extTrust}, []string{"file_path", "frontmatter", "declared_hooks", "load_context"}},
	"PreMCPConnect":            {[]string{extTrust}, []string{"server_id", "transport"}},
	"PreUserInput":             {[]string{extTurn}, []string{"raw_input"}},
	"PostInputProcessing":      {[]string{extTurn, extModification}, nil},
	"PreLLMRequest":            {[]string{extTurn}, []string{"full_prompt"}},
	"PostLLMResponse":          {[]string{extTurn}, []string{"response_text"}},
	"PreCompact":               {[]string{extTurn}, []string{"context_before"}},
	"PostCompact":              {[]string{extTurn, extModification}, nil},
	"PreToolUse":               {[]string{extTurn, extTool, extProvenance}, nil},
	"PostToolUse":              {[]string{extTurn, extTool}, []string{"tool_result"}},
	"PreToolInputModification": {[]string{extTrust, extModification}, []string{"tool_name"}},
	"PreSubAgentSpawn":         {nil, []string{"sub_agent_id", "delegated_task"}},
	"PostSubAgentResult":       {nil, []string{"sub_agent_id", "result"}},
	"PreOutputDeliver":         {[]string{extTurn}, []string{"output_text"}},
	"PreMemoryWrite":           {nil, []string{"memory_store", "content"}},
	"PreMemoryRead":            {nil, []string{"memory_store", "retrieved_content"}},
	"PostAskResolution":        {[]string{extTurn}, []string{"original_hook_point", "original_verdict", "resolution"}},
	HookSanitized:              {nil, []string{"sanitizer_key"}},
	HookHostLifecycle:          {nil, []string{"host_event"}},
}

// HookPoints returns the hook points this package knows, sorted: the
// twenty of AARTS v0.1 and agentledger's Sanitized.
func HookPoints() []string {
	out := make([]string, 0, len(hooks))
	for h := range hooks {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

// IsHookPoint reports whether h is a known hook point.
func IsHookPoint(h string) bool { _, ok := hooks[h]; return ok }

var extensionFields = map[string][]string{
	extTurn:         {"turn_id"},
	extTool:         {"tool_name", "tool_input", "artifacts"},
	extTrust:        {"source"},
	extModification: {"original_value", "modified_value", "was_modified", "modifier_chain"},
}

// ValidationError names the field of an event that breaks AARTS.
type ValidationError struct {
	HookPoint string
	Field     string
	Msg       string
}

func (e *ValidationError) Error() string {
	if e.HookPoint != "" {
		return fmt.Sprintf("%s event: %s: %s", e.HookPoint, e.Field, e.Msg)
	}
	return fmt.Sprintf("event: %s: %s", e.Field, e.Msg)
}

// ParseEvent decodes and validates one AARTS hook event.
func ParseEvent(payload []byte) (*Event, error) {
	// A recorded or canonical payload is read in one pass; any other the
	// general way, with the same result (canon.DecodeCanonical).
	if v, ok := canon.DecodeCanonical(payload, maxCanonicalDepth); ok {
		if raw, ok := v.(map[string]any); ok {
			return fromRaw(raw, payload, true)
		}
	}
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	var raw map[string]any
	if err := d.Decode(&raw); err != nil {
		return nil, &ValidationError{Field: "$", Msg: "not a JSON object: " + err.Error()}
	}
	return fromRaw(raw, payload, false)
}

// maxCanonicalDepth bounds the nesting ParseEvent reads in one pass;
// deeper events take the general decoder.
const maxCanonicalDepth = 128

// FromRaw validates an already decoded event.
func FromRaw(raw map[string]any) (*Event, error) { return fromRaw(raw, nil, false) }

// fromRaw validates the event raw decoded from payload (nil: none). unique
// says raw was read without repeated keys, so that checking its members'
// types in raw (fitsFields) tells what decoding payload would.
func fromRaw(raw map[string]any, payload []byte, unique bool) (*Event, error) {
	e := &Event{Raw: raw}
	str := func(name string, dst *string) error {
		v, ok := raw[name]
		if !ok || v == nil {
			return nil
		}
		s, ok := v.(string)
		if !ok {
			return &ValidationError{HookPoint: e.HookPoint, Field: name, Msg: fmt.Sprintf("must be a string, got %s", kind(v))}
		}
		*dst = s
		return nil
	}
	boolean := func(name string, dst *bool) error {
		v, ok := raw[name]
		if !ok || v == nil {
			return nil
		}
		b, ok := v.(bool)
		if !ok {
			return &ValidationError{HookPoint: e.HookPoint, Field: name, Msg: fmt.Sprintf("must be a boolean, got %s", kind(v))}
		}
		*dst = b
		return nil
	}
	if err := str("hook_point", &e.HookPoint); err != nil {
		return nil, err
	}
	spec, ok := hooks[e.HookPoint]
	if !ok {
		if e.HookPoint == "" {
			return nil, &ValidationError{Field: "hook_point", Msg: "missing (MUST)"}
		}
		return nil, &ValidationError{Field: "hook_point", Msg: fmt.Sprintf("unknown hook point %q", e.HookPoint)}
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"session_id", &e.SessionID}, {"timestamp", &e.Timestamp}, {"host_id", &e.HostID}, {"host_version", &e.HostVersion},
		{"aarts_version", &e.AARTSVersion}, {"locale", &e.Locale}, {"turn_id", &e.TurnID}, {"tool_name", &e.ToolName},
		{"tool_name_native", &e.ToolNameNative}, {"source", &e.Source}, {"source_id", &e.SourceID},
		{"parent_session_id", &e.ParentSessionID}, {"spawn_session_id", &e.SpawnSessionID}, {"active_skill", &e.ActiveSkill}, {"cwd", &e.Cwd},
		{"sanitizer_key", &e.SanitizerKey},
	} {
		if err := str(f.name, f.dst); err != nil {
			return nil, err
		}
	}
	if err := boolean("is_sub_agent", &e.IsSubAgent); err != nil {
		return nil, err
	}
	e.ToolInput = raw["tool_input"]
	required := []string{"session_id", "timestamp", "host_id", "aarts_version"}
	for _, ext := range spec.extensions {
		required = append(required, extensionFields[ext]...)
	}
	required = append(required, spec.required...)
	for _, f := range required {
		if v, ok := raw[f]; !ok || v == nil {
			return nil, &ValidationError{HookPoint: e.HookPoint, Field: f, Msg: "missing (MUST)"}
		}
	}
	for _, f := range []string{"session_id", "host_id", "aarts_version"} {
		if v, _ := raw[f].(string); v == "" {
			return nil, &ValidationError{HookPoint: e.HookPoint, Field: f, Msg: "must be a non-empty string"}
		}
	}
	if !Compatible(e.AARTSVersion) {
		return nil, &ValidationError{HookPoint: e.HookPoint, Field: "aarts_version", Msg: fmt.Sprintf("AARTS %q is not compatible with this engine's %s (AARTS §4.2)", e.AARTSVersion, Version)}
	}
	var err error
	if e.Time, err = time.Parse(time.RFC3339Nano, e.Timestamp); err != nil {
		return nil, &ValidationError{HookPoint: e.HookPoint, Field: "timestamp", Msg: fmt.Sprintf("%q is not an ISO 8601 (RFC 3339) time", e.Timestamp)}
	}
	if !hostIDPattern(e.HostID) {
		return nil, &ValidationError{HookPoint: e.HookPoint, Field: "host_id", Msg: fmt.Sprintf("%q is not lowercase kebab-case", e.HostID)}
	}
	if slices.Contains(spec.extensions, extTool) {
		if _, ok := raw["tool_input"].(map[string]any); !ok {
			return nil, &ValidationError{HookPoint: e.HookPoint, Field: "tool_input", Msg: fmt.Sprintf("must be an object, got %s", kind(raw["tool_input"]))}
		}
		if _, ok := raw["artifacts"].([]any); !ok {
			return nil, &ValidationError{HookPoint: e.HookPoint, Field: "artifacts", Msg: "must be an array"}
		}
		if e.ToolName == "" {
			return nil, &ValidationError{HookPoint: e.HookPoint, Field: "tool_name", Msg: "must be a non-empty string"}
		}
		if !IsCanonicalTool(e.ToolName) && e.ToolNameNative == "" {
			// Hosts that send their own name in tool_name are accepted;
			// the engine maps it. Keep it as the native name.
			e.ToolNameNative = e.ToolName
		}
		if e.ToolName == ToolOther && e.ToolNameNative == "" {
			return nil, &ValidationError{HookPoint: e.HookPoint, Field: "tool_name_native", Msg: `required when tool_name is "other"`}
		}
	}
	if slices.Contains(spec.extensions, extTrust) {
		switch e.Source {
		case "managed", "project", "user", "marketplace":
		default:
			return nil, &ValidationError{HookPoint: e.HookPoint, Field: "source", Msg: fmt.Sprintf("%q: want managed, project, user or marketplace", e.Source)}
		}
	}
	if e.HookPoint == "PostAskResolution" {
		r, _ := raw["resolution"].(string)
		if !IsResolution(r) {
			return nil, &ValidationError{HookPoint: e.HookPoint, Field: "resolution", Msg: fmt.Sprintf("%q: want one of %s", r, strings.Join(Resolutions, ", "))}
		}
	}
	// The hook's own fields must have their types.
	switch {
	case unique && fitsFields(e.HookPoint, raw):
		err = nil
	case payload == nil:
		_, err = e.Fields()
	default:
		_, err = e.decodeFields(payload)
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

func hostIDPattern(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// NativeTool returns the host's own name for the event's tool.
func (e *Event) NativeTool() string {
	if e.ToolNameNative != "" {
		return e.ToolNameNative
	}
	return e.ToolName
}

// Field returns a top-level member of the event, or nil.
func (e *Event) Field(name string) any { return e.Raw[name] }

// String returns a top-level string member, or "".
func (e *Event) String(name string) string {
	s, _ := e.Raw[name].(string)
	return s
}
