package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/agentledger/agentledger/aarts"
)

// AdapterFunc is an Adapter that is a function.
type AdapterFunc func(ctx context.Context, req Request) (Result, error)

// Run calls f.
func (f AdapterFunc) Run(ctx context.Context, req Request) (Result, error) { return f(ctx, req) }

// mutant is the built-in adapter with one trick that games a suite whose
// checks are loose. A pack must catch every one: some case of level 1
// that the built-in adapter passes fails with the trick.
type mutant struct {
	name string
	run  AdapterFunc
}

// mutants are the tricks a pack must catch (conformance/testdata/broken
// plays them as external adapters).
var mutants = []mutant{
	{"an empty tool_input", mapped(func(ev map[string]any) {
		if _, ok := ev["tool_input"]; ok {
			ev["tool_input"] = map[string]any{}
		}
	})},
	{"a constant is_sub_agent false", mapped(func(ev map[string]any) {
		if ev["hook_point"] != "PreToolUse" {
			return
		}
		if parent, ok := ev["parent_session_id"]; ok {
			ev["session_id"] = parent
			delete(ev, "parent_session_id")
		}
		ev["is_sub_agent"] = false
	})},
	{"an event stripped to the members AARTS requires", mapped(func(ev map[string]any) {
		for k := range ev {
			if !slices.Contains(requiredMembers, k) {
				delete(ev, k)
			}
		}
	})},
	{"PostToolUse mapped as PreToolUse", mapped(func(ev map[string]any) {
		if ev["hook_point"] == "PostToolUse" {
			ev["hook_point"] = "PreToolUse"
			delete(ev, "tool_result")
		}
	})},
	{"an ask answered as a deny", func(ctx context.Context, req Request) (Result, error) {
		if req.Verdict.Decision == aarts.Ask {
			req.Verdict.Decision, req.Verdict.HostAnswer, req.Verdict.PendingID = aarts.Deny, aarts.Deny, ""
		}
		return Builtin{}.Run(ctx, req)
	}},
	{"a deny answered with no decision", func(ctx context.Context, req Request) (Result, error) {
		if req.Verdict.Decision == aarts.Deny {
			req.Verdict = Verdict{Decision: aarts.Allow, HostAnswer: aarts.HostAnswerNone, ReasonCode: req.Verdict.ReasonCode}
		}
		return Builtin{}.Run(ctx, req)
	}},
}

// requiredMembers are the event members some hook point requires (AARTS
// §6.1, §6.2, §8): an event of only these is still valid.
var requiredMembers = []string{"session_id", "timestamp", "host_id", "aarts_version", "hook_point", "turn_id", "tool_name",
	"tool_name_native", "tool_input", "artifacts", "tool_result", "raw_input", "full_prompt", "response_text", "context_before",
	"output_text", "sub_agent_id", "delegated_task", "result", "original_value", "modified_value", "was_modified",
	"modifier_chain", "host_event"}

// mapped is the built-in adapter with edit applied to every event it maps.
func mapped(edit func(ev map[string]any)) AdapterFunc {
	return func(ctx context.Context, req Request) (Result, error) {
		res, err := Builtin{}.Run(ctx, req)
		if err != nil || len(res.Event) == 0 || string(res.Event) == "null" {
			return res, err
		}
		var ev map[string]any
		if err := json.Unmarshal(res.Event, &ev); err != nil {
			return res, err
		}
		edit(ev)
		res.Event, err = json.Marshal(ev)
		return res, err
	}
}

// strong holds, by pack digest, the packs Strength found catch every
// mutant (the check is a function of the pack's bytes).
var strong sync.Map

// Strength checks that p reads its host as the suite does — each case
// expects the hook point (or none) the host's built-in adapter maps its
// input to, so that no pack credits a hook point through another event —
// and catches every mutant: with each, a case of level 1 that the
// built-in adapter passes fails. A pack that asserts too little (no
// tool_input, a few members of the event, answers that do not tell a deny
// from no decision) is refused, whatever it covers.
func Strength(ctx context.Context, p *Pack) error {
	if _, ok := strong.Load(p.digest); ok && p.digest != "" {
		return nil
	}
	var missing []string
	for i := range p.Cases {
		c := &p.Cases[i]
		res, err := Builtin{}.Run(ctx, Request{Conformance: PackVersion, Host: p.Host, Input: c.Input, Verdict: verdict(p.Host, "deny", c)})
		if err != nil {
			return err
		}
		if want, got := expectedHook(c.Expect), mappedHook(res); want != got {
			missing = append(missing, fmt.Sprintf("case %q: to expect %s, as the host's adapter maps its input (it expects %s)", c.Name, got, want))
		}
	}
	base, err := runPack(ctx, p, Builtin{})
	if err != nil {
		return err
	}
	for _, m := range mutants {
		h, err := runPack(ctx, p, m.run)
		if err != nil {
			return err
		}
		caught := false
		for i, c := range h.Cases {
			caught = caught || base.Cases[i].Pass && !c.Pass && c.Level == 1
		}
		if !caught {
			missing = append(missing, fmt.Sprintf("a case of level 1 that an adapter with %s fails", m.name))
		}
	}
	if len(missing) > 0 {
		return &CoverageError{Host: p.Host, SHA256: p.digest, Missing: missing}
	}
	strong.Store(p.digest, true)
	return nil
}

// expectedHook names what a case expects its input to become.
func expectedHook(e Expect) string {
	switch {
	case e.Rejected:
		return "a refusal"
	case e.NotJudged:
		return "no hook point"
	}
	return "hook point " + e.HookPoint
}

// mappedHook names what an adapter made of an input, as expectedHook.
func mappedHook(res Result) string {
	if res.Rejected != "" {
		return "a refusal"
	}
	var ev struct {
		HookPoint string `json:"hook_point"`
	}
	if json.Unmarshal(res.Event, &ev) != nil || ev.HookPoint == "" {
		return "no hook point"
	}
	return "hook point " + ev.HookPoint
}
