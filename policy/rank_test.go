package policy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/rego"
)

// comprehensions is how the default policy ranked its signals before
// agentledger.rank: the reference the builtin is held to.
const comprehensions = `package ref

import rego.v1

strictness := {"allow": 0, "ask": 1, "deny": 2}

found := {s | some s in input.signals}

listed := [s | some s in found]

ranked := sort([[2 - strictness[s.decision], s.order, i] | some i, s in listed])

reasons := [listed[p[1]].reason | some p in sort([[s.order, i] | some i, s in listed])]

artifacts := sort({a | some s in found; some a in s.artifacts})

directives := object.union_n([s.directives | some s in found; s.decision == "allow"])

old := {"reasons": reasons, "artifacts": artifacts, "directives": directives, "winner": listed[ranked[0][2]]} if count(found) > 0

else := {"reasons": reasons, "artifacts": artifacts, "directives": directives}

r := agentledger.rank(found)

new := {"reasons": r.reasons, "artifacts": r.artifacts, "directives": object.union_n(r.allow_directives), "winner": r.winner} if count(found) > 0

else := {"reasons": r.reasons, "artifacts": r.artifacts, "directives": object.union_n(r.allow_directives)}
`

// randomSignals is a signal set with ties in strictness and order,
// repeated artifacts and nested directives that overwrite each other.
func randomSignals(rng *rand.Rand) []any {
	n := rng.IntN(7)
	sigs := make([]any, 0, n)
	decisions := []string{"allow", "ask", "deny"}
	orders := []any{1, 1.1, 2, 3.5, 6, 10, 12}
	for range n {
		arts := []any{}
		for range rng.IntN(3) {
			arts = append(arts, fmt.Sprintf("a%d", rng.IntN(4)))
		}
		dir := map[string]any{}
		if rng.IntN(2) == 0 {
			dir[fmt.Sprintf("k%d", rng.IntN(3))] = map[string]any{fmt.Sprintf("n%d", rng.IntN(2)): rng.IntN(5)}
		}
		sigs = append(sigs, map[string]any{
			"decision": decisions[rng.IntN(3)], "order": orders[rng.IntN(len(orders))],
			"reason": fmt.Sprintf("reason %d", rng.IntN(5)), "reason_code": fmt.Sprintf("C%d", rng.IntN(4)),
			"artifacts": arts, "directives": dir, "confidence": []any{1, 0.6, 0.8}[rng.IntN(3)],
			"aarm_decision": "X", "category": "c", "severity": "warning",
		})
	}
	return sigs
}

// TestRankIsTheComprehensions: on random signal sets, agentledger.rank
// gives the winner, reasons, artifacts and merged directives the
// comprehensions it replaced gave.
func TestRankIsTheComprehensions(t *testing.T) {
	ctx := context.Background()
	q, err := rego.New(rego.Module("ref.rego", comprehensions), rego.Query("data.ref.old = old; data.ref.new = new"),
		rego.Capabilities(Capabilities())).PrepareForEval(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(38, 2))
	winners := map[int]bool{}
	for i := range 500 {
		sigs := randomSignals(rng)
		rs, err := q.Eval(ctx, rego.EvalInput(map[string]any{"signals": sigs}))
		if err != nil || len(rs) != 1 {
			t.Fatalf("case %d: %v (%d results)", i, err, len(rs))
		}
		old, neu := rs[0].Bindings["old"], rs[0].Bindings["new"]
		if !reflect.DeepEqual(old, neu) {
			t.Fatalf("case %d: signals %v\nthe comprehensions give %v\nagentledger.rank gives %v", i, sigs, old, neu)
		}
		winners[len(sigs)] = true
	}
	if len(winners) < 5 {
		t.Fatalf("the cases had only %d distinct set sizes", len(winners))
	}
}

// TestRankRefusesMalformedSignals: a signal sig() would not build halts
// the evaluation, and a policy with one is a policy error (which the engine
// answers with a deny), never the default allow.
func TestRankRefusesMalformedSignals(t *testing.T) {
	// full is the rest of what sig() builds.
	full := `, "aarm_decision": "DENY", "reason_code": "X", "category": "c", "severity": "critical", "confidence": 1}`
	cases := map[string][2]string{ // the signal, and what the error says
		"no confidence":                   {`{"decision": "deny", "aarm_decision": "DENY", "reason_code": "X", "category": "c", "severity": "critical", "order": 1, "reason": "r", "artifacts": [], "directives": {}}`, "no confidence"},
		"no category":                     {`{"decision": "deny", "aarm_decision": "DENY", "reason_code": "X", "severity": "critical", "order": 1, "reason": "r", "artifacts": [], "directives": {}, "confidence": 1}`, "no category"},
		"no reason_code, no aarm":         {`{"decision": "deny", "category": "c", "severity": "critical", "order": 1, "reason": "r", "artifacts": [], "directives": {}, "confidence": 1}`, "no aarm_decision"},
		"ask, no confidence, no severity": {`{"decision": "ask", "aarm_decision": "STEP_UP", "reason_code": "X", "category": "c", "order": 1, "reason": "r", "artifacts": [], "directives": {}}`, "no severity"},
		"severity a number":               {`{"decision": "deny", "aarm_decision": "DENY", "reason_code": "X", "category": "c", "severity": 3, "order": 1, "reason": "r", "artifacts": [], "directives": {}, "confidence": 1}`, "severity is a number"},
		"confidence a string":             {`{"decision": "deny", "order": 1, "reason": "r", "artifacts": [], "directives": {}, "aarm_decision": "DENY", "reason_code": "X", "category": "c", "severity": "critical", "confidence": "1"}`, "confidence is a string"},
		"no decision":                     {`{"order": 1, "reason": "r", "artifacts": [], "directives": {}` + full, "decision is"},
		"unknown decision":                {`{"decision": "maybe", "order": 1, "reason": "r", "artifacts": [], "directives": {}` + full, "not allow, ask or deny"},
		"order not a number":              {`{"decision": "deny", "order": "1", "reason": "r", "artifacts": [], "directives": {}` + full, "order is a string"},
		"no reason":                       {`{"decision": "deny", "order": 1, "artifacts": [], "directives": {}` + full, "no reason"},
		"no artifacts":                    {`{"decision": "deny", "order": 1, "reason": "r", "directives": {}` + full, "no artifacts"},
		"artifacts a string":              {`{"decision": "deny", "order": 1, "reason": "r", "artifacts": "x", "directives": {}` + full, "artifacts are a string"},
		"allow, no directives":            {`{"decision": "allow", "order": 1, "reason": "r", "artifacts": []` + full, "no directives"},
		"directives not object":           {`{"decision": "allow", "order": 1, "reason": "r", "artifacts": [], "directives": []` + full, "directives are a array"},
		"not an object":                   {`"deny"`, "not an object"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			sig, want := c[0], c[1]
			dir := t.TempDir()
			mod := "package agentledger.policy\n\nimport rego.v1\n\nsignals contains " + sig + " if input.event.hook_point == \"PreToolUse\"\n"
			if err := os.WriteFile(filepath.Join(dir, "bad.rego"), []byte(mod), 0o600); err != nil {
				t.Fatal(err)
			}
			p, err := LoadLayers(context.Background(), []string{"default", dir}, DefaultManifest())
			if err != nil {
				t.Fatal(err)
			}
			d, err := p.Evaluate(context.Background(), Input{Event: map[string]any{"hook_point": "PreToolUse", "tool_name": "read", "tool_input": map[string]any{"path": "README.md"}}}, time.Unix(0, 0))
			if err == nil || !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), "agentledger.rank") || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %+v, %v; want a policy error from agentledger.rank saying %q", d, err, want)
			}
		})
	}
}
