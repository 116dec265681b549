package policy

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/loader"

	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/manifest"
)

func loadManifest(t testing.TB, name string) *manifest.Manifest {
	t.Helper()
	b, err := os.ReadFile("../fixtures/manifests/" + name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRego runs the default bundle's Rego unit tests through OPA's tester.
func TestRego(t *testing.T) {
	p, err := Load(context.Background(), "", loadManifest(t, "coding-agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	results, err := p.Test(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < 10 {
		t.Fatalf("got %d Rego tests, want the bundle's tests", len(results))
	}
	for _, r := range results {
		if !r.Pass {
			t.Errorf("%s (%s:%d) failed: %v", r.Name, r.File, r.Line, r.Err)
		}
	}
}

func TestLoadErrorsNameFileAndLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.rego"), []byte("package agentledger.policy\n\nimport rego.v1\n\ndecision := {\n"), 0o600)
	_, err := Load(context.Background(), dir, loadManifest(t, "strict.json"))
	if err == nil || !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), "bad.rego:") {
		t.Fatalf("got %v, want ErrPolicy naming bad.rego and its line", err)
	}
	os.WriteFile(filepath.Join(dir, "bad.rego"), []byte("package agentledger.policy\n\nimport rego.v1\n\ndecision := http.send({\"method\": \"get\", \"url\": \"http://x\"})\n"), 0o600)
	_, err = Load(context.Background(), dir, loadManifest(t, "strict.json"))
	if err == nil || !strings.Contains(err.Error(), "http.send") {
		t.Fatalf("network builtin: got %v, want it refused", err)
	}
}

func TestDigestCoversPolicyAndManifest(t *testing.T) {
	ctx := context.Background()
	a, _ := Load(ctx, "", loadManifest(t, "coding-agent.json"))
	b, _ := Load(ctx, "", loadManifest(t, "coding-agent.json"))
	c, _ := Load(ctx, "", loadManifest(t, "strict.json"))
	if a.Digest() != b.Digest() || a.Digest() == c.Digest() || len(a.Digest()) != 64 {
		t.Fatalf("digests: %s %s %s", a.Digest(), b.Digest(), c.Digest())
	}
}

// TestLoadBundleFile loads the default policy packed as an OPA bundle
// tarball, as users ship policies, and gets the same digest and verdicts.
func TestLoadBundleFile(t *testing.T) {
	ctx := context.Background()
	m := loadManifest(t, "coding-agent.json")
	b, err := loader.NewFileLoader().WithFS(DefaultBundle()).AsBundle(".")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "policy.tar.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := bundle.NewWriter(f).Write(*b); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fromFile, err := Load(ctx, path, m)
	if err != nil {
		t.Fatal(err)
	}
	builtin, _ := Load(ctx, "", m)
	if fromFile.Digest() != builtin.Digest() {
		t.Errorf("digest of the bundle file %s differs from the built-in %s", fromFile.Digest(), builtin.Digest())
	}
	results, err := fromFile.Test(ctx)
	if err != nil || len(results) == 0 {
		t.Fatalf("tests in the bundle file: %v %v", results, err)
	}
}

func TestDigestDoesNotDependOnLoadPath(t *testing.T) {
	m := loadManifest(t, "coding-agent.json")
	ctx := context.Background()
	a, err := LoadLayers(ctx, []string{"default", "../fixtures/policies/strict"}, m)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("../fixtures/policies/strict")
	b, err := LoadLayers(ctx, []string{"", abs}, m)
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest() != b.Digest() {
		t.Fatalf("digest depends on the load path: %s vs %s", a.Digest(), b.Digest())
	}
	if _, err := LoadLayers(ctx, []string{"../fixtures/policies/strict", abs}, m); err == nil || !strings.Contains(err.Error(), "/strict.rego") {
		t.Fatalf("the same module twice: %v", err)
	}
}

// TestVerdictMustFields: a policy whose decision lacks a MUST field of an
// AARTS verdict (category, source) is an error, not a verdict.
func TestVerdictMustFields(t *testing.T) {
	for _, missing := range []string{"category", "source"} {
		dir := t.TempDir()
		fields := map[string]string{"category": `"category": "tool_execution",`, "source": `"source": "policy",`}
		fields[missing] = ""
		rego := "package agentledger.policy\n\nimport rego.v1\n\ndecision := {\"decision\": \"allow\", \"aarm_decision\": \"ALLOW\", \"reason_code\": \"ALLOW\", " +
			fields["category"] + fields["source"] + " \"severity\": \"info\"}\n"
		if err := os.WriteFile(filepath.Join(dir, "p.rego"), []byte(rego), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := Load(context.Background(), dir, DefaultManifest())
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Evaluate(context.Background(), Input{Event: map[string]any{"hook_point": "PreToolUse"}}, time.Unix(0, 0))
		if err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("decision without %s: got %v, want an error naming it", missing, err)
		}
	}
}

func TestPlainNumbers(t *testing.T) {
	got := plainNumbers(map[string]any{"a": json.Number("1.048576e+06"), "b": []any{json.Number("2.5"), json.Number("7")}, "c": "1e3"})
	raw, _ := json.Marshal(got)
	if string(raw) != `{"a":1048576,"b":[2.5,7],"c":"1e3"}` {
		t.Fatalf("%s", raw)
	}
}

// TestSelfProtectionCommands: agentledger's own commands that lift its
// protection, a signal to its engine, and an overwrite of the hook program
// wherever PATH finds it are denied to the agent; their look-alikes are
// not touched.
func TestSelfProtectionCommands(t *testing.T) {
	p, err := Load(context.Background(), "", DefaultManifest())
	if err != nil {
		t.Fatal(err)
	}
	g := newGuard(p.manifest)
	tests := []struct {
		cmd  string
		want bool
	}{
		{"engine uninstall claude-code --project .", true},
		{"engine install claude-code --project . --monitor", true},
		{"ledger shred --session s1", true},
		{"pkill -f 'engine serve'", true},
		{"kill -9 $(pgrep -f engine)", true},
		{"killall agentledger-hook", true},
		{`cp /tmp/x "$(command -v agentledger-hook)"`, true},
		{"cp /tmp/x `which agentledger-hook`", true},
		{"engine status", false},
		{"ledger verify", false},
		{"pgrep -f engine", false},
		{"pkill -f vite", false},
		{"kill -9 $(pgrep -f vite)", false},
		{`cp /tmp/x "$(command -v mytool)"`, false},
	}
	for _, tt := range tests {
		a := action.AnalyzeTool("Bash", map[string]any{"command": tt.cmd}, "/workspace/shop")
		if got := len(g.hits(&a, "")) > 0; got != tt.want {
			t.Errorf("%q: hits %v, want any: %v", tt.cmd, g.hits(&a, ""), tt.want)
		}
	}
}

// TestDecisionUnknownField: a decision with a field the engine does not
// read is a policy error naming the first such field in key order.
func TestDecisionUnknownField(t *testing.T) {
	dir := t.TempDir()
	rego := "package agentledger.policy\n\nimport rego.v1\n\ndecision := {\"decision\": \"allow\", \"aarm_decision\": \"ALLOW\", \"reason_code\": \"ALLOW\", \"category\": \"none\", \"source\": \"policy\", \"severity\": \"info\", \"zz_extra\": 1, \"b_extra\": 2}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.rego"), []byte(rego), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(context.Background(), dir, DefaultManifest())
	if err != nil {
		t.Fatal(err)
	}
	for range 20 { // map order varies: the field named must not
		_, err = p.Evaluate(context.Background(), Input{Event: map[string]any{"hook_point": "PreToolUse"}}, time.Unix(0, 0))
		if err == nil || !strings.Contains(err.Error(), `unknown field "b_extra"`) {
			t.Fatalf("got %v, want the unknown field b_extra named", err)
		}
	}
}
