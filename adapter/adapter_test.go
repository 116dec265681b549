package adapter

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/hostconfig"
)

// checkAction checks the tool an adapter mapped ev to and what the engine
// reads in it: the canonical and native names, and binaries and paths
// among the analysis's.
func checkAction(t *testing.T, ev *aarts.Event, tool, native string, binaries, paths []string) *action.Analysis {
	t.Helper()
	a := action.Of(ev)
	if ev.ToolName != tool || ev.ToolNameNative != native || a.Tool != tool {
		t.Errorf("tool %s (%s, analysed %s), want %s (%s)", ev.ToolName, ev.ToolNameNative, a.Tool, tool, native)
	}
	for _, b := range binaries {
		if !slices.Contains(a.Binaries, b) {
			t.Errorf("binaries %v lack %s", a.Binaries, b)
		}
	}
	for _, p := range paths {
		if !slices.Contains(a.Paths, p) {
			t.Errorf("paths %v lack %s", a.Paths, p)
		}
	}
	return a
}

// TestNoEngineInside: the adapters are mapping and rendering only; what
// the engine, the conformance suite and a gateway share links no store,
// no policy engine, no network and no engine.
func TestNoEngineInside(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/agentledger/agentledger/aarts") {
		t.Fatalf("go list -deps gave %d packages without aarts", len(deps))
	}
	for _, d := range deps {
		switch {
		case d == "net", d == "net/http", strings.Contains(d, "nats-io"), strings.Contains(d, "open-policy-agent"),
			strings.HasSuffix(d, "agentledger/engine"), strings.HasSuffix(d, "agentledger/decide"), strings.HasSuffix(d, "agentledger/policy"):
			t.Errorf("adapter depends on %s", d)
		}
	}
}

// TestNoticesGetNoDecision: an event a host adapter calls a notice (the
// host goes on whatever the answer; recorded with no host answer) is
// rendered with no decision, however strict the answer; and each host's
// calls before a tool runs are no notices.
func TestNoticesGetNoDecision(t *testing.T) {
	answers := []Answer{
		{Decision: aarts.Deny, ReasonCode: "FORBIDDEN", Reasons: []string{"no"}},
		{Decision: aarts.Ask, ReasonCode: "TAINTED_TO_HIGH_RISK", HostAnswer: aarts.Deny},
		{Decision: aarts.Allow, Rewrite: map[string]any{"command": "true"}},
	}
	notices := 0
	for name, h := range Hosts {
		for _, event := range hostconfig.Events(name) {
			if !h.Notice(event) {
				continue
			}
			notices++
			for _, a := range answers {
				if out := h.Render(event, []byte(`{}`), a); string(out) != "{}" {
					t.Errorf("%s %s, a notice, rendered %s for %s", name, event, out, a.Decision)
				}
			}
		}
		pre := map[string]string{"claude-code": "PreToolUse", "codex": "PreToolUse", "copilot": "preToolUse", "gemini": "BeforeTool", "cursor": "beforeShellExecution"}
		for _, event := range []string{"", pre[name]} {
			if h.Notice(event) {
				t.Errorf("%s: %q is taken for a notice", name, event)
			}
		}
	}
	if notices < 10 {
		t.Errorf("%d notices over every host, want the session and sub-agent lifecycle events", notices)
	}
}
