package adapter

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/action"
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
