package manifest

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestFixtureManifestsParse(t *testing.T) {
	for _, f := range []string{"coding-agent.json", "strict.json"} {
		b, err := os.ReadFile("../fixtures/manifests/" + f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		p := m.ForPolicy()
		if p["budgets"].(map[string]any)["max_tool_calls"] == nil || p["compiled_rules"] == nil {
			t.Errorf("%s: ForPolicy lacks budgets or rules", f)
		}
	}
}

func TestParseNamesTheField(t *testing.T) {
	base, _ := os.ReadFile("../fixtures/manifests/coding-agent.json")
	tests := []struct{ from, to, field string }{
		{`"version": 1`, `"version": 2`, "version"},
		{`"*.github.com"`, `"*.GitHub.com"`, "network.domains[1]"},
		{`"shell(rm -rf:*)"`, `"shell rm -rf"`, "rules.deny[0]"},
		{`"read_roots": ["/workspace/shop"`, `"read_roots": ["workspace"`, "fs.read_roots[0]"},
		{`"max_tool_calls": 120`, `"max_tool_calls": -1`, "budgets.max_tool_calls"},
		{`"max_tool_calls": 120`, `"max_tool_calls": "lots"`, "budgets.max_tool_calls"},
		{`"sensitivity": "balanced"`, `"sensitivity": "paranoid"`, "sensitivity"},
		{`"match": "(?i)`, `"match": "(?i`, "forbidden[0].match"},
		{`"name": "coding-agent"`, `"name": "coding-agent", "nmae": "x"`, "nmae"},
		{`"trusted_sources": ["managed", "project"]`, `"trusted_sources": ["anywhere"]`, "skills.trusted_sources[0]"},
		{`"mcp__crm__*": ["PII"]`, `"mcp__crm__*": ["pii"]`, "data_labels.tools.mcp__crm__*[0]"},
		{`"version": 1,`, `"version": 1, "version": 1,`, "$"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(strings.Replace(string(base), tt.from, tt.to, 1)))
		var me *Error
		if !errors.As(err, &me) || me.Field != tt.field {
			t.Errorf("%s -> %s: got %v, want an error on %s", tt.from, tt.to, err, tt.field)
		}
	}
}

func TestParseRule(t *testing.T) {
	tests := []struct{ in, tool, glob string }{
		{"shell(rm -rf:*)", "shell", "rm -rf**"},
		{"shell(git *)", "shell", "git *"},
		{"file_write(**/.env)", "file_write", "**/.env"},
		{"mcp__github__*()", "mcp__github__*", "**"},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in)
		if err != nil || r.Tool != tt.tool || r.Glob != tt.glob {
			t.Errorf("ParseRule(%q) = %+v, %v", tt.in, r, err)
		}
	}
	if _, err := ParseRule("shell"); err == nil {
		t.Error("ParseRule(shell) succeeded")
	}
}
