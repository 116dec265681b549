package policy

import (
	"math"
	"reflect"
	"slices"

	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/manifest"
)

// gates lists the names of the open gates, sorted: input.gates. A gate is
// a condition rules of the default policy start with ("rm" in
// input.gates), computed here once per evaluation. OPA's rule index tests
// membership without evaluating a rule's body, so an ordinary call
// evaluates a handful of bodies instead of every rule's.
//
// A gate is only ever a necessary condition of the rules that test it —
// each rule still states its whole condition, and a policy that reads no
// gate is unaffected — so a gate open too often costs time, never a
// decision (TestGatesChangeNoDecision evaluates every recorded call with
// every gate open, Policy.GatesOpen, and compares).
//
// The gates: rm (a command run by rm);
// manifest_forbidden (a manifest forbidden entry about the call's tool);
// over_steps, over_tool_calls, over_wall_time (a budget exceeded); loop;
// external_taint (taint other than local); permitted_tools, data_classes,
// data_findings (the snapshot's lists hold anything); deferred (calls wait
// for a decision). With them, exactly, the names of the action's lists
// (and strings), of its manifest facts and (as rules_deny, rules_allow,
// rules_ask) of its matching rules that hold anything: a rule about an
// empty list is not evaluated at all.
func gates(in Input, m *manifest.Manifest, am map[string]any, all bool) []string {
	s := in.Snapshot
	b := m.Budgets
	open := make([]string, 0, 32)
	gate := func(name string, ok bool) {
		if ok || all {
			open = append(open, name)
		}
	}
	gate("over_steps", b.MaxSteps > 0 && intOf(s["steps_consumed"]) > int64(b.MaxSteps))
	gate("over_tool_calls", b.MaxToolCalls > 0 && intOf(s["tool_calls_consumed"]) > int64(b.MaxToolCalls))
	gate("over_wall_time", b.MaxWallTimeMs > 0 && intOf(s["wall_time_ms"]) > b.MaxWallTimeMs)
	gate("loop", s["loop_violation"] != nil && s["loop_violation"] != "")
	gate("external_taint", slices.ContainsFunc(stringsOf(s["taint_kinds"]), func(k string) bool { return k != "local" }))
	gate("permitted_tools", lenOf(s["permitted_tools"]) > 0)
	gate("data_classes", lenOf(s["data_classes"]) > 0)
	gate("data_findings", lenOf(s["data_findings"]) > 0)
	gate("deferred", lenOf(s["pending"])+lenOf(s["host_asks"]) > 0)
	if a := in.Action; a != nil {
		gate("rm", slices.ContainsFunc(a.Commands, func(c action.Command) bool { return c.Binary == "rm" }))
		gate("manifest_forbidden", slices.ContainsFunc(m.Forbidden, func(f manifest.Forbidden) bool { return f.Tool == a.Tool }))
		present := func(prefix string, m map[string]any) {
			for k, v := range m {
				switch v := v.(type) {
				case string:
					if v != "" {
						open = append(open, prefix+k)
					}
				default:
					// Lists only: presence is exact (a rule may test
					// that a list is empty).
					if r := reflect.ValueOf(v); r.Kind() == reflect.Slice && r.Len() > 0 {
						open = append(open, prefix+k)
					}
				}
			}
		}
		present("", am)
		if mf, ok := am["manifest_facts"].(map[string]any); ok {
			present("", mf)
		}
		if r, ok := am["rules"].(map[string]any); ok {
			present("rules_", r)
		}
	}
	slices.Sort(open)
	return slices.Compact(open)
}

// GatesOpen returns a copy of p that evaluates with every gate open (the
// presence of the action's lists stays exact): every gated rule's body is
// evaluated, as with no gates at all. It decides as p does, only slower;
// tests use it to show that.
func (p *Policy) GatesOpen() *Policy {
	q := *p
	q.gatesOpen = true
	return &q
}

// The snapshot's values are read as the reducer writes them (Snapshot.Map);
// a value of another type opens its gate rather than close it: a gate may
// cost time, never a signal.

// intOf reads an integer; another type reads as the largest.
func intOf(v any) int64 {
	r := reflect.ValueOf(v)
	switch {
	case r.CanInt():
		return r.Int()
	case r.CanUint():
		return int64(min(r.Uint(), math.MaxInt64))
	case r.CanFloat():
		return int64(r.Float())
	case v == nil:
		return 0
	}
	return math.MaxInt64
}

// lenOf reads a list's length; a value that is not a list reads as one
// element.
func lenOf(v any) int {
	if v == nil {
		return 0
	}
	if r := reflect.ValueOf(v); r.Kind() == reflect.Slice {
		return r.Len()
	}
	return 1
}

// stringsOf reads a list of strings; anything else that is there reads as
// one unknown string.
func stringsOf(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case []string:
		return x
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			out[i], _ = e.(string)
			if _, ok := e.(string); !ok {
				out[i] = "?"
			}
		}
		return out
	}
	return []string{"?"}
}
