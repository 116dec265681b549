package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentledger/agentledger/aarts"
)

// Report is a conformance run over some packs.
type Report struct {
	Suite   string        `json:"suite"`
	Version string        `json:"version"`
	Adapter string        `json:"adapter"`
	Hosts   []*HostReport `json:"hosts"`
	Passed  int           `json:"passed"`
	Failed  int           `json:"failed"`
}

// HostReport is one host's result: its cases and the AARTS level (0 to 3)
// the adapter reaches, with what the next level still needs.
type HostReport struct {
	Host       string   `json:"host"`
	Level      int      `json:"level"`
	NextLevel  []string `json:"next_level_needs,omitempty"`
	HookPoints []string `json:"hook_points"`
	Tools      []string `json:"tools"`
	Enforces   []string `json:"enforces"`
	// AsksAs is how the host carries out an ask: "prompt" (it asks its
	// user) or "deny" (it cannot prompt; an ask is answered deny).
	AsksAs string `json:"asks_as"`
	// NotApplicable are the tool kinds the host has no tool of.
	NotApplicable []string     `json:"not_applicable,omitempty"`
	Provenance    bool         `json:"provenance"`
	Cases         []CaseResult `json:"cases"`
	Passed        int          `json:"passed"`
	Failed        int          `json:"failed"`
}

// CaseResult is one case: passed, or what failed (the mapping, or the
// answer to a verdict).
type CaseResult struct {
	Name     string   `json:"name"`
	Pass     bool     `json:"pass"`
	Failures []string `json:"failures,omitempty"`
}

// Failing names the failing cases of the report, host/case.
func (r *Report) Failing() []string {
	var out []string
	for _, h := range r.Hosts {
		for _, c := range h.Cases {
			if !c.Pass {
				out = append(out, h.Host+"/"+c.Name)
			}
		}
	}
	return out
}

// Run runs every case of packs against a, named name in the report.
func Run(ctx context.Context, packs []*Pack, a Adapter, name string) (*Report, error) {
	rep := &Report{Suite: "aarts-adapter-conformance", Version: PackVersion, Adapter: name}
	for _, p := range packs {
		h := &HostReport{Host: p.Host}
		var events []*aarts.Event // mapped by passing cases
		h.AsksAs = "deny"
		if p.HostAsks {
			h.AsksAs = "prompt"
		}
		enforced := map[string]bool{"allow": true, "deny": true, "ask": true}
		answered := map[string]bool{}
		for i := range p.Cases {
			c := &p.Cases[i]
			ev, failures, err := runCase(ctx, p, c, a, answered, enforced)
			if err != nil {
				return nil, err
			}
			res := CaseResult{Name: c.Name, Pass: len(failures) == 0, Failures: failures}
			if res.Pass {
				h.Passed++
				if ev != nil {
					events = append(events, ev)
				}
			} else {
				h.Failed++
			}
			h.Cases = append(h.Cases, res)
		}
		for _, v := range []string{"allow", "deny", "ask"} {
			if enforced[v] && answered[v] {
				h.Enforces = append(h.Enforces, v)
			}
		}
		h.level(events, p.Tools)
		rep.Hosts = append(rep.Hosts, h)
		rep.Passed += h.Passed
		rep.Failed += h.Failed
	}
	return rep, nil
}

// runCase runs one case with every verdict it has an answer for. It
// returns the event the input mapped to (nil when none), and the failures.
// A verdict whose answer fails is no longer enforced; one that passes is
// answered.
func runCase(ctx context.Context, p *Pack, c *Case, a Adapter, answered, enforced map[string]bool) (*aarts.Event, []string, error) {
	verdicts := []string{"deny"}
	if len(c.Answers) > 0 {
		verdicts = verdicts[:0]
		for _, v := range Verdicts {
			if _, ok := c.Answers[v]; ok {
				verdicts = append(verdicts, v)
			}
		}
	}
	var failures []string
	var ev *aarts.Event
	for i, v := range verdicts {
		res, err := a.Run(ctx, Request{Conformance: PackVersion, Host: p.Host, Input: c.Input, Verdict: verdict(v, c, p.HostAsks)})
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			failures = append(failures, fmt.Sprintf("%s: %v", v, err))
			continue
		}
		if i == 0 {
			var fails []string
			ev, fails = checkEvent(c.Expect, res)
			failures = append(failures, fails...)
		}
		want, ok := c.Answers[v]
		if !ok {
			continue
		}
		if why := matchAnswer(want, res.Answer); why != "" {
			failures = append(failures, fmt.Sprintf("answer to %s: %s", v, why))
			enforced[strings.TrimSuffix(v, "_default")] = false
		} else if ev != nil && ev.HookPoint == "PreToolUse" {
			answered[v] = true
		}
	}
	return ev, failures, nil
}

// checkEvent checks what an adapter made of a case's input.
func checkEvent(want Expect, res Result) (*aarts.Event, []string) {
	raw := strings.TrimSpace(string(res.Event))
	switch {
	case want.Rejected:
		if res.Rejected == "" {
			return nil, []string{"the input was accepted (mapped to " + orNone(raw) + "), want it refused"}
		}
		return nil, nil
	case res.Rejected != "":
		return nil, []string{"the input was refused: " + res.Rejected}
	case want.NotJudged:
		if raw != "" && raw != "null" {
			return nil, []string{"mapped to an AARTS event, want none: " + raw}
		}
		return nil, nil
	case raw == "" || raw == "null":
		return nil, []string{"mapped to no AARTS event, want " + want.HookPoint}
	}
	ev, err := aarts.ParseEvent(res.Event)
	if err != nil {
		return nil, []string{"not a valid AARTS event: " + err.Error()}
	}
	var fails []string
	check := func(field, got, want string) {
		if want != "" && got != want {
			fails = append(fails, fmt.Sprintf("%s %q, want %q", field, got, want))
		}
	}
	check("hook_point", ev.HookPoint, want.HookPoint)
	check("tool_name", ev.ToolName, want.ToolName)
	check("tool_name_native", ev.ToolNameNative, want.ToolNameNative)
	var arts []aarts.Artifact
	b, _ := json.Marshal(ev.Field("artifacts"))
	_ = json.Unmarshal(b, &arts)
	for _, a := range want.Artifacts {
		if !slices.Contains(arts, a) {
			fails = append(fails, fmt.Sprintf("no artifact %s %q from %s (have %v)", a.Type, a.Value, a.SourceField, arts))
		}
	}
	if len(want.Fields) > 0 {
		pattern, _ := json.Marshal(want.Fields)
		if why := Match(pattern, res.Event); why != "" {
			fails = append(fails, "event: "+why)
		}
	}
	return ev, fails
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// matchAnswer checks a host answer against a pattern.
func matchAnswer(pattern, answer json.RawMessage) string {
	if len(answer) == 0 {
		return "no answer"
	}
	return Match(pattern, answer)
}

// Match checks a JSON value against a pattern and says where it differs
// ("" when it matches). In an object pattern each member must match the
// value's member of the same name, null means the member must be absent
// and "*" that it must be present; the value may have other members.
// Arrays match element by element; anything else must be equal.
func Match(pattern, value json.RawMessage) string {
	var p, v any
	if err := json.Unmarshal(pattern, &p); err != nil {
		return "bad pattern: " + err.Error()
	}
	if err := json.Unmarshal(value, &v); err != nil {
		return fmt.Sprintf("not JSON: %.200q", value)
	}
	return match(p, v, "$")
}

func match(p, v any, at string) string {
	switch pt := p.(type) {
	case map[string]any:
		vo, ok := v.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: %s, want an object", at, show(v))
		}
		keys := make([]string, 0, len(pt))
		for k := range pt {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			got, present := vo[k]
			switch {
			case pt[k] == nil:
				if present {
					return fmt.Sprintf("%s.%s: %s, want it absent", at, k, show(got))
				}
			case pt[k] == "*":
				if !present || got == nil {
					return fmt.Sprintf("%s.%s: absent, want it present", at, k)
				}
			case !present:
				return fmt.Sprintf("%s.%s: absent, want %s", at, k, show(pt[k]))
			default:
				if why := match(pt[k], got, at+"."+k); why != "" {
					return why
				}
			}
		}
		return ""
	case []any:
		va, ok := v.([]any)
		if !ok || len(va) != len(pt) {
			return fmt.Sprintf("%s: %s, want %s", at, show(v), show(p))
		}
		for i := range pt {
			if why := match(pt[i], va[i], fmt.Sprintf("%s[%d]", at, i)); why != "" {
				return why
			}
		}
		return ""
	}
	if show(p) != show(v) {
		return fmt.Sprintf("%s: %s, want %s", at, show(v), show(p))
	}
	return ""
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// levels are AARTS §11's conformance levels: the hook points each adds,
// the tools each requires.
// level is what one AARTS level adds: hook points and tool kinds.
type level struct {
	hooks, tools []string
}

var levels = []level{
	{[]string{"SessionStart", "PreToolUse"},
		[]string{aarts.ToolShell, aarts.ToolFileWrite, aarts.ToolFileEdit, aarts.ToolWebRequest, aarts.ToolMCPCall, aarts.ToolPackageInstall}},
	{[]string{"PrePluginLoad", "PreSkillLoad", "PostInputProcessing", "PreLLMRequest", "PostToolUse", "PostAskResolution"},
		[]string{aarts.ToolShell, aarts.ToolFileWrite, aarts.ToolFileEdit, aarts.ToolFileRead, aarts.ToolFileDelete, aarts.ToolWebRequest,
			aarts.ToolMCPCall, aarts.ToolCodeExec, aarts.ToolPackageInstall, aarts.ToolBrowser, aarts.ToolDatabase, aarts.ToolDelegate, aarts.ToolOther}},
	{[]string{"PreUserInput", "PostLLMResponse", "PreToolInputModification", "PreSubAgentSpawn", "PostSubAgentResult", "PreMCPConnect",
		"PreMemoryWrite", "PreMemoryRead", "PreCompact", "PostCompact", "PreOutputDeliver", "SessionEnd"}, nil},
}

// provenanceFields are the members of AARTS §6.2.5's Provenance extension,
// which sit at the top of the event.
var provenanceFields = []string{"source_prompt_modified", "active_skill", "is_sub_agent", "parent_session_id", "input_modifier_chain"}

// hasProvenance reports whether ev carries any Provenance member with a
// value (an empty object under some other name does not count).
func hasProvenance(ev *aarts.Event) bool {
	return slices.ContainsFunc(provenanceFields, func(f string) bool { return ev.Field(f) != nil })
}

// level works out the level from the events of the passing cases.
func (h *HostReport) level(events []*aarts.Event, hostTools []string) {
	hooks, tools := map[string]bool{}, map[string]bool{}
	pre, withProvenance := 0, 0
	for _, ev := range events {
		hooks[ev.HookPoint] = true
		if ev.HookPoint == "PreToolUse" {
			tools[ev.ToolName] = true
			pre++
			if hasProvenance(ev) {
				withProvenance++
			}
		}
	}
	applies := func(tool string) bool { return len(hostTools) == 0 || slices.Contains(hostTools, tool) }
	for _, t := range aarts.CanonicalTools {
		if !applies(t) && slices.ContainsFunc(levels, func(l level) bool { return slices.Contains(l.tools, t) }) && !slices.Contains(h.NotApplicable, t) {
			h.NotApplicable = append(h.NotApplicable, t)
		}
	}
	h.Provenance = pre > 0 && withProvenance == pre
	h.HookPoints, h.Tools = sortedKeys(hooks), sortedKeys(tools)
	var needHooks []string
	for n, l := range levels {
		var need []string
		needHooks = append(needHooks, l.hooks...)
		for _, hp := range needHooks {
			if !hooks[hp] {
				need = append(need, "hook point "+hp)
			}
		}
		for _, t := range l.tools {
			if applies(t) && !tools[t] {
				need = append(need, "tool "+t)
			}
		}
		enforce := []string{"allow", "deny"}
		if n >= 1 {
			enforce = append(enforce, "ask")
			if !h.Provenance {
				need = append(need, "provenance on every PreToolUse")
			}
		}
		for _, v := range enforce {
			if !slices.Contains(h.Enforces, v) {
				need = append(need, "enforcement of "+v)
			}
		}
		if len(need) > 0 {
			h.NextLevel = need
			return
		}
		h.Level = n + 1
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
