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
		{`"shell(rm -rf:*)"`, `"shell rm -rf"`, "rules.ask[0]"},
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

func TestRuleSetMatch(t *testing.T) {
	m := &Manifest{Rules: Rules{
		Deny:  []string{"shell(rm -rf:*)", "file_write(**/.env)", "mcp__github__*(*merge*)"},
		Allow: []string{"shell(git *)", "file_read(/w/*)"},
		Ask:   []string{"shell()"},
	}}
	rs := m.Compile()
	tests := []struct {
		tool, native string
		subjects     []string
		paths        []string
		deny, allow  int
		ask          int
	}{
		{"shell", "Bash", []string{"cd x && rm -rf /tmp/y", "cd x", "rm -rf /tmp/y"}, nil, 1, 0, 1},
		{"shell", "Bash", []string{"git add src/main.go"}, nil, 0, 1, 1},
		{"file_write", "Write", nil, []string{"/w/app/.env"}, 1, 0, 0},
		{"file_read", "Read", nil, []string{"/w/a/b.go"}, 0, 0, 0},
		{"file_read", "Read", nil, []string{"/w/b.go"}, 0, 1, 0},
		{"mcp_call", "mcp__github__merge_pull_request", []string{"merge_pull_request"}, nil, 1, 0, 0},
	}
	for _, tt := range tests {
		got := rs.Match(tt.tool, tt.native, tt.subjects, tt.paths)
		if len(got.Deny) != tt.deny || len(got.Allow) != tt.allow || len(got.Ask) != tt.ask {
			t.Errorf("%s %v %v: got %+v", tt.native, tt.subjects, tt.paths, got)
		}
	}
}

// TestWriteAndEditAreOneEffect: an ask or deny rule about writing a file
// covers an edit or patch of it, and the reverse; an allow rule covers only
// the tool it names.
func TestWriteAndEditAreOneEffect(t *testing.T) {
	m := &Manifest{}
	m.Rules.Ask = []string{"file_write(**/.github/workflows/**)"}
	m.Rules.Deny = []string{"file_edit(**/.git/hooks/**)"}
	m.Rules.Allow = []string{"file_edit(/w/**)"}
	rs := m.Compile()
	if got := rs.Match("file_edit", "apply_patch", nil, []string{"/w/.github/workflows/ci.yml"}).Ask; len(got) != 1 {
		t.Errorf("patch of a workflow: ask rules %v, want the write rule", got)
	}
	if got := rs.Match("file_write", "Write", nil, []string{"/w/.git/hooks/pre-commit"}).Deny; len(got) != 1 {
		t.Errorf("write of a hook: deny rules %v, want the edit rule", got)
	}
	if got := rs.Match("file_write", "Write", nil, []string{"/w/src/a.go"}).Allow; len(got) != 0 {
		t.Errorf("write under an edit allow rule: allow rules %v, want none", got)
	}
}
