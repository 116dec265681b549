package aarts

import (
	"errors"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	tests := []struct{ native, want string }{
		{"Bash", ToolShell}, {"Write", ToolFileWrite}, {"Edit", ToolFileEdit}, {"MultiEdit", ToolFileEdit},
		{"Read", ToolFileRead}, {"WebFetch", ToolWebRequest}, {"WebSearch", ToolWebRequest}, {"Task", ToolDelegate},
		{"mcp__github__create_issue", ToolMCPCall}, {"mcp__github__resources/read", ToolMCPResource}, {"mcp__docs__prompts/get", ToolMCPResource}, {"run_shell_command", ToolShell}, {"str_replace", ToolFileEdit},
		{"shell", ToolShell}, {"SomethingNew", ToolOther}, {"sql_query", ToolDatabase}, {"browser_navigate", ToolBrowser},
	}
	for _, tt := range tests {
		if got := Canonical(tt.native); got != tt.want {
			t.Errorf("Canonical(%q) = %q, want %q", tt.native, got, tt.want)
		}
	}
	if got := MCPServer("mcp__github__create_issue"); got != "github" {
		t.Errorf("MCPServer: got %q", got)
	}
}

func TestFieldsTyped(t *testing.T) {
	base := `"session_id":"s","timestamp":"2026-11-22T10:00:00Z","host_id":"cursor","aarts_version":"0.1"`
	e, err := ParseEvent([]byte(`{"hook_point":"PreMCPConnect",` + base + `,"source":"user","server_id":"gh","transport":"stdio","server_command":"npx gh-mcp"}`))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := e.Fields()
	if c, ok := f.(*PreMCPConnect); !ok || c.ServerID != "gh" || c.ServerCommand != "npx gh-mcp" {
		t.Fatalf("got %#v", f)
	}
	_, err = ParseEvent([]byte(`{"hook_point":"PrePluginLoad",` + base + `,"source":"user","plugin_id":"p","file_paths":"/a","declared_hooks":[]}`))
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "file_paths" {
		t.Fatalf("mistyped file_paths: got %v", err)
	}
	_, err = ParseEvent([]byte(`{"hook_point":"PostInputProcessing",` + base + `,"turn_id":"t","original_value":"a","modified_value":"b","was_modified":true,"modifier_chain":[{"modifier_id":"m","config_source":"project","modified":"yes"}]}`))
	if !errors.As(err, &ve) || !strings.Contains(ve.Field, "modifier_chain") {
		t.Fatalf("mistyped modifier: got %v", err)
	}
}

func TestParseEventValidation(t *testing.T) {
	good := `{"hook_point":"PreToolUse","session_id":"s","timestamp":"2026-11-22T10:00:00Z","host_id":"claude-code","aarts_version":"0.1","turn_id":"t1","tool_name":"shell","tool_name_native":"Bash","tool_input":{"command":"ls"},"artifacts":[]}`
	e, err := ParseEvent([]byte(good))
	if err != nil || e.NativeTool() != "Bash" || e.TurnID != "t1" {
		t.Fatalf("good event: %v %+v", err, e)
	}
	tests := []struct{ mutate, field string }{
		{`"hook_point":"PreToolUse"`, "hook_point"},
		{`"turn_id":"t1",`, "turn_id"},
		{`"timestamp":"2026-11-22T10:00:00Z"`, "timestamp"},
		{`"host_id":"claude-code"`, "host_id"},
		{`"tool_input":{"command":"ls"},`, "tool_input"},
		{`"artifacts":[]`, "artifacts"},
	}
	repl := map[string]string{
		`"hook_point":"PreToolUse"`:          `"hook_point":"PreToolUze"`,
		`"turn_id":"t1",`:                    ``,
		`"timestamp":"2026-11-22T10:00:00Z"`: `"timestamp":"yesterday"`,
		`"host_id":"claude-code"`:            `"host_id":"Claude Code"`,
		`"tool_input":{"command":"ls"},`:     `"tool_input":"ls",`,
		`"artifacts":[]`:                     `"artifacts":{}`,
	}
	for _, tt := range tests {
		_, err := ParseEvent([]byte(strings.Replace(good, tt.mutate, repl[tt.mutate], 1)))
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != tt.field {
			t.Errorf("mutating %s: got %v, want a ValidationError on %s", tt.mutate, err, tt.field)
		}
	}
}
