package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/internal/apitest"
	"github.com/agentledger/agentledger/manifest"
)

var update = flag.Bool("update", false, "rewrite the golden fixtures/scenarios/*.verdicts.ndjson")

// expect pins the verdicts each story is about; the golden file pins all
// the rest, snapshot hashes included.
type expect struct {
	session string
	index   int
	want    string // decision/aarm/reason_code
}

var scenarios = []struct {
	name     string
	manifest string
	expect   []expect
}{
	{"clean-session", "coding-agent.json", nil},
	{"prompt-injection-curl-sh", "coding-agent.json", []expect{
		{"injected-docs", 3, "allow/ALLOW/ALLOW"}, {"injected-docs", 5, "deny/DENY/FORBIDDEN"}, {"injected-docs", 6, "allow/ALLOW/ALLOW"}}},
	{"env-exfiltration", "coding-agent.json", []expect{
		{"config-leak", 3, "deny/DENY/SECRET_ACCESS"}, {"config-leak", 5, "deny/DENY/SECRET_IN_RESULT"},
		{"config-leak", 6, "deny/DENY/DATA_EXFILTRATION"}, {"config-leak", 7, "deny/DENY/DATA_EXFILTRATION"}}},
	{"destructive-commands", "coding-agent.json", []expect{
		{"cleanup-gone-wrong", 3, "allow/ALLOW/ALLOW"}, {"cleanup-gone-wrong", 4, "deny/DENY/DESTRUCTIVE"},
		{"cleanup-gone-wrong", 5, "deny/DENY/FORBIDDEN"}, {"cleanup-gone-wrong", 6, "ask/STEP_UP/RULE_ASK"}}},
	{"path-traversal", "coding-agent.json", []expect{
		// #4 writes "curl … | sh" into ~/.bashrc: the content is read as the
		// commands the shell will run at its next start.
		{"traversal-write", 3, "deny/DENY/PERSISTENCE"}, {"traversal-write", 4, "deny/DENY/FORBIDDEN"}, {"traversal-write", 5, "allow/ALLOW/ALLOW"}}},
	{"hallucinated-package", "coding-agent.json", []expect{
		{"typo-deps", 3, "deny/DENY/PACKAGE_SUSPECT"}, {"typo-deps", 4, "deny/DENY/PACKAGE_SUSPECT"}, {"typo-deps", 5, "allow/ALLOW/ALLOW"}}},
	{"loop", "coding-agent.json", []expect{
		{"retry-loop", 5, "allow/ALLOW/ALLOW"}, {"retry-loop", 7, "ask/STEP_UP/LOOP_DETECTED"}, {"retry-loop", 11, "allow/ALLOW/ALLOW"}}},
	{"budget-exhausted", "strict.json", []expect{
		{"long-review", 4, "allow/ALLOW/ALLOW"}, {"long-review", 5, "deny/DENY/BUDGET_EXCEEDED"}}},
	{"taint-then-sanitized", "coding-agent.json", []expect{
		// A page read does not stop the build it suggests; the upload it
		// suggests is asked until the sanitizer vouches for it.
		{"sanitized-build", 5, "allow/ALLOW/ALLOW"}, {"sanitized-build", 6, "ask/STEP_UP/TAINTED_TO_HIGH_RISK"},
		{"sanitized-build", 8, "allow/ALLOW/ALLOW"}}},
	{"subagent-narrowed", "coding-agent.json", []expect{
		{"parent-delegates", 3, "allow/MODIFY/LEAST_PRIVILEGE"}, {"sub-search-1", 1, "allow/ALLOW/ALLOW"},
		{"sub-search-1", 2, "deny/DENY/PERMISSION_UNDECLARED"}, {"orphan-sub-9", 0, "deny/DENY/PARENT_UNKNOWN"}}},
	{"memory-poisoning", "coding-agent.json", []expect{
		{"memory-write", 3, "allow/ALLOW/ALLOW"}, {"memory-write", 6, "deny/DENY/MEMORY_POISONING"}}},
	{"mcp-model-swap", "coding-agent.json", []expect{
		{"mcp-fix-total", 4, "allow/ALLOW/ALLOW"}, {"mcp-fix-total", 8, "allow/ALLOW/ALLOW"}}},
	{"mcp-unknown-source", "coding-agent.json", []expect{
		{"mcp-servers", 1, "allow/ALLOW/ALLOW"}, {"mcp-servers", 2, "deny/DENY/MCP_UNTRUSTED"}}},
	{"self-protection", "coding-agent.json", []expect{
		{"hook-tamper", 3, "deny/DENY/PROTECTED_PATH"}, {"hook-tamper", 4, "deny/DENY/PROTECTED_PATH"}}},
	{"approval-resolution", "coding-agent.json", []expect{
		// The host's allow_always closes the ask as approved and widens
		// nothing: only an approver (POST /v1/resolutions) widens.
		{"delete-approval", 3, "ask/STEP_UP/APPROVAL_REQUIRED"}, {"delete-approval", 5, "ask/STEP_UP/APPROVAL_REQUIRED"}}},
	{"download-then-run", "coding-agent.json", []expect{
		{"download-then-run", 3, "allow/ALLOW/ALLOW"}, {"download-then-run", 5, "deny/DENY/DOWNLOAD_EXEC"},
		{"download-then-run", 6, "deny/DENY/DOWNLOAD_EXEC"}}},
	{"inline-interpreters", "coding-agent.json", []expect{
		{"inline-code", 3, "allow/ALLOW/ALLOW"}, {"inline-code", 4, "deny/DENY/DESTRUCTIVE"},
		{"inline-code", 6, "deny/DENY/DESTRUCTIVE"}, {"inline-code", 7, "ask/DEFER/OPAQUE_CODE"}}},
	{"persistence", "coding-agent.json", []expect{
		{"stay-resident", 3, "deny/DENY/PERSISTENCE"}, {"stay-resident", 4, "deny/DENY/PERSISTENCE"},
		{"stay-resident", 5, "deny/DENY/PERSISTENCE"}, {"stay-resident", 6, "allow/ALLOW/ALLOW"}}},
	{"allowed-domain-exfil", "coding-agent.json", []expect{
		{"exfil-allowed-domain", 3, "allow/ALLOW/ALLOW"}, {"exfil-allowed-domain", 4, "deny/DENY/DATA_EXFILTRATION"},
		{"exfil-allowed-domain", 5, "deny/DENY/DATA_EXFILTRATION"}, {"exfil-allowed-domain", 6, "deny/DENY/DATA_EXFILTRATION"}}},
}

func decider(t testing.TB, manifestFile string) *decide.Decider {
	t.Helper()
	return deciderWith(t, manifestFile, nil)
}

// deciderWith is decider with the manifest changed by edit (nil: as it is).
func deciderWith(t testing.TB, manifestFile string, edit func(*manifest.Manifest)) *decide.Decider {
	t.Helper()
	return apitest.Decider(t, filepath.Join("../fixtures/manifests", manifestFile), edit)
}

func evalFile(t testing.TB, d *decide.Decider, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	if err := Eval(context.Background(), d, "default", f, &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestScenarios runs every fixture story through the eval pipeline twice,
// with fresh policies, and compares with the golden verdicts.
func TestScenarios(t *testing.T) {
	if len(scenarios) < 12 {
		t.Fatalf("%d scenarios, want at least 12", len(scenarios))
	}
	// The recordings generator (fixtures/gen) reads the same mapping.
	raw, err := os.ReadFile("../fixtures/scenarios/manifests.json")
	if err != nil {
		t.Fatal(err)
	}
	var manifests map[string]string
	if err := json.Unmarshal(raw, &manifests); err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if m := manifests[sc.name]; m != "" && m != sc.manifest || m == "" && manifests["default"] != sc.manifest {
				t.Fatalf("manifests.json and this table disagree on %s", sc.name)
			}
			in := filepath.Join("../fixtures/scenarios", sc.name+".ndjson")
			golden := filepath.Join("../fixtures/scenarios", sc.name+".verdicts.ndjson")
			first := evalFile(t, decider(t, sc.manifest), in)
			second := evalFile(t, decider(t, sc.manifest), in)
			if !bytes.Equal(first, second) {
				t.Fatal("two runs differ")
			}
			if *update {
				if err := os.WriteFile(golden, first, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first, want) {
				t.Errorf("verdicts differ from %s:\n%s", golden, diffLines(want, first))
			}
			got := map[string]EvalLine{}
			for _, l := range strings.Split(strings.TrimSpace(string(first)), "\n") {
				var e EvalLine
				if err := json.Unmarshal([]byte(l), &e); err != nil {
					t.Fatal(err)
				}
				got[e.SessionID+"#"+itoa(e.Index)] = e
			}
			for _, x := range sc.expect {
				e, ok := got[x.session+"#"+itoa(x.index)]
				if !ok {
					t.Errorf("%s #%d: no verdict", x.session, x.index)
					continue
				}
				if g := e.Decision + "/" + e.AARMDecision + "/" + e.ReasonCode; g != x.want {
					t.Errorf("%s #%d %s: got %s, want %s (%v)", x.session, x.index, e.HookPoint, g, x.want, e.Reasons)
				}
			}
			if sc.name == "clean-session" {
				for _, e := range got {
					if e.Decision != "allow" {
						t.Errorf("clean session: %s #%d %s got %s %s", e.SessionID, e.Index, e.HookPoint, e.Decision, e.ReasonCode)
					}
				}
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func diffLines(want, got []byte) string {
	w := strings.Split(string(want), "\n")
	g := strings.Split(string(got), "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var x, y string
		if i < len(w) {
			x = w[i]
		}
		if i < len(g) {
			y = g[i]
		}
		if x != y {
			b.WriteString("- " + x + "\n+ " + y + "\n")
		}
	}
	return b.String()
}
