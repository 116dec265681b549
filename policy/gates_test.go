package policy

import (
	"slices"
	"testing"

	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/manifest"
)

// TestGatesOpenOnWhatTheyCannotRead: a snapshot value of a type the gates
// do not expect opens its gate (costing time), never closes it (costing a
// signal); values as the reducer writes them decide exactly.
func TestGatesOpenOnWhatTheyCannotRead(t *testing.T) {
	m := &manifest.Manifest{Budgets: manifest.Budgets{MaxSteps: 10, MaxToolCalls: 10, MaxWallTimeMs: 10}}
	exact := Input{Snapshot: map[string]any{
		"steps_consumed": 3, "tool_calls_consumed": 11, "wall_time_ms": int64(4), "loop_violation": "",
		"taint_kinds": []string{"local"}, "permitted_tools": []string{}, "data_classes": []string{"INTERNAL"},
		"data_findings": []any{}, "pending": []any{},
	}}
	if got, want := gates(exact, m, nil, false), []string{"data_classes", "over_tool_calls"}; !slices.Equal(got, want) {
		t.Fatalf("gates %v, want %v", got, want)
	}
	odd := Input{Snapshot: map[string]any{
		"steps_consumed": "3", "tool_calls_consumed": uint8(11), "wall_time_ms": 4.5, "loop_violation": 7,
		"taint_kinds": []any{"local", 1}, "permitted_tools": []int{1}, "data_classes": "INTERNAL",
		"data_findings": map[string]any{}, "pending": struct{}{},
	}}
	got := gates(odd, m, nil, false)
	for _, g := range []string{"over_steps", "over_tool_calls", "loop", "external_taint", "permitted_tools", "data_classes", "data_findings", "deferred"} {
		if !slices.Contains(got, g) {
			t.Errorf("gate %s closed on a value it cannot read (gates %v)", g, got)
		}
	}
}

// TestPresenceIsExact: the action's lists and strings are named when they
// hold something, and only then; other values are never named (a rule may
// test that a list is empty: not "rule_conflicts" in input.gates).
func TestPresenceIsExact(t *testing.T) {
	am := map[string]any{
		"hosts": []string{"a.example"}, "paths": []string{}, "tool": "shell", "mcp_server": "", "piped_to_shell": true,
		"rule_conflicts": [][2]string{}, "findings": []any{map[string]any{"class": "x"}},
		"manifest_facts": map[string]any{"hosts_unlisted": []string{"a.example"}, "secret_paths": []string{}, "tool_declared": true},
		"rules":          map[string]any{"deny": []string{}, "ask": []string{"shell(curl:*)"}},
	}
	got := gates(Input{Snapshot: map[string]any{}, Action: &action.Analysis{}}, &manifest.Manifest{}, am, false)
	want := []string{"findings", "hosts", "hosts_unlisted", "rules_ask", "tool"}
	if !slices.Equal(got, want) {
		t.Fatalf("gates %v, want %v", got, want)
	}
}
