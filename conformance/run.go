package conformance

import (
	"bytes"
	"cmp"
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
	Suite string `json:"suite"`
	// Version is the pack format's version; each host's pack is named
	// by its digest (HostReport.Pack).
	Version string        `json:"version"`
	Adapter string        `json:"adapter"`
	Hosts   []*HostReport `json:"hosts"`
	Passed  int           `json:"passed"`
	Failed  int           `json:"failed"`
}

// HostReport is one host's result: its cases and the AARTS level (0 to 3)
// the adapter reaches, with what the next level still needs.
type HostReport struct {
	Host string `json:"host"`
	// Pack is the pack the host's cases come from, named by its digest.
	Pack  ID  `json:"pack"`
	Level int `json:"level"`
	// CasesLevel is the highest level (0 to 3) every case of which, and
	// of each level below, passes: a level needs its cases to pass.
	CasesLevel int      `json:"cases_pass_to_level"`
	NextLevel  []string `json:"next_level_needs,omitempty"`
	// HookPoints are the hook points counted toward a level: mapped by a
	// passing case of a host event where a deny stops something (or a
	// notification hook point, AARTS §6.3).
	HookPoints []string `json:"hook_points"`
	// Unenforced are the hook points mapped only from host events where a
	// deny does nothing: not counted.
	Unenforced []string `json:"hook_points_unenforced,omitempty"`
	Tools      []string `json:"tools"`
	Enforces   []string `json:"enforces"`
	// AsksAs are the forms the adapter carries an ask out in at
	// PreToolUse, each shown by cases of its own: "prompt" (the host asks
	// its user), "held for an approver" (a deny that names the pending
	// ask), "defer" (the call waits for the run's caller).
	AsksAs []string `json:"asks_as"`
	// NotApplicable are the tool kinds the host has no tool of.
	NotApplicable []string     `json:"not_applicable,omitempty"`
	Provenance    bool         `json:"provenance"`
	Cases         []CaseResult `json:"cases"`
	Passed        int          `json:"passed"`
	Failed        int          `json:"failed"`
}

// CaseResult is one case: passed, or what failed (the mapping, or the
// answer to a verdict). Level is the level the case belongs to: that of
// the hook point it expects, or of the one the adapter mapped it to when
// that is lower; 1 for input to refuse or with no hook point.
type CaseResult struct {
	Name     string   `json:"name"`
	Level    int      `json:"level"`
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
		h, err := runPack(ctx, p, a)
		if err != nil {
			return nil, err
		}
		rep.Hosts = append(rep.Hosts, h)
		rep.Passed += h.Passed
		rep.Failed += h.Failed
	}
	return rep, nil
}

// outcome is what one case showed.
type outcome struct {
	ev      *aarts.Event    // the event mapped, when it could be read
	counts  bool            // a deny at the case's host event stops something
	answers map[string]bool // per verdict with a pattern: whether the answer matched
}

// runPack runs the cases of p against a.
func runPack(ctx context.Context, p *Pack, a Adapter) (*HostReport, error) {
	h := &HostReport{Host: p.Host, Pack: p.ID()}
	outs := make([]outcome, len(p.Cases))
	for i := range p.Cases {
		c := &p.Cases[i]
		res, out, err := runCase(ctx, p, c, a)
		if err != nil {
			return nil, err
		}
		outs[i] = out
		if res.Pass {
			h.Passed++
		} else {
			h.Failed++
		}
		h.Cases = append(h.Cases, res)
	}
	h.level(p, outs)
	return h, nil
}

// runCase runs one case with every verdict it has an answer for (deny
// when it has none) and checks the event the first mapped and each
// answer.
func runCase(ctx context.Context, p *Pack, c *Case, a Adapter) (CaseResult, outcome, error) {
	verdicts := []string{"deny"}
	if len(c.Answers) > 0 {
		verdicts = verdicts[:0]
		for _, v := range Verdicts {
			if _, ok := c.Answers[v]; ok {
				verdicts = append(verdicts, v)
			}
		}
	}
	res := CaseResult{Name: c.Name, Level: caseLevel(c.Expect)}
	out := outcome{answers: map[string]bool{}}
	hook := c.Expect.HookPoint
	out.counts = enforced(p.Host, nativeEvent(p.Host, c.Input)) || slices.Contains(notificationHooks, hook)
	for i, v := range verdicts {
		req := Request{Conformance: PackVersion, Host: p.Host, Input: c.Input, Verdict: verdict(p.Host, v, c)}
		got, err := a.Run(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return res, out, ctx.Err()
			}
			res.Failures = append(res.Failures, fmt.Sprintf("%s: %v", v, err))
			continue
		}
		// The event is checked with every verdict: an adapter maps an
		// input whatever the engine will answer.
		ev, mappedTo, fails := checkEvent(c.Expect, got)
		if i == 0 {
			out.ev = ev
		}
		for _, f := range fails {
			if i > 0 && !slices.Contains(res.Failures, f) {
				f = "with the " + v + " verdict: " + f
			}
			if !slices.Contains(res.Failures, f) {
				res.Failures = append(res.Failures, f)
			}
		}
		if mappedTo != hook && (mappedTo != "" || c.Expect.Rejected || c.Expect.NotJudged) {
			// A case mapped to another hook point fails that one's level
			// too: it makes an event of that hook point up.
			res.Level = min(res.Level, hookLevel(mappedTo))
		}
		want, ok := c.Answers[v]
		if !ok {
			continue
		}
		why := matchAnswer(want, got.Answer)
		if id := req.Verdict.PendingID; why == "" && !bytes.Contains(got.Answer, []byte(id)) {
			why = "does not name the pending ask " + id + " (a plain deny: nothing tells the agent that the call waits for an approver)"
		}
		out.answers[v] = why == ""
		if why != "" {
			res.Failures = append(res.Failures, fmt.Sprintf("answer to %s: %s", v, why))
		}
	}
	res.Pass = len(res.Failures) == 0
	return res, out, nil
}

// checkEvent checks what an adapter made of a case's input: the event it
// mapped (nil when none could be read), the hook point it names ("" when
// none), and what is wrong.
func checkEvent(want Expect, res Result) (*aarts.Event, string, []string) {
	raw := strings.TrimSpace(string(res.Event))
	mappedTo := ""
	if raw != "" && raw != "null" {
		var probe struct {
			HookPoint string `json:"hook_point"`
		}
		_ = json.Unmarshal(res.Event, &probe)
		mappedTo = cmp.Or(probe.HookPoint, "?")
	}
	switch {
	case want.Rejected:
		if res.Rejected == "" {
			return nil, mappedTo, []string{"the input was accepted (mapped to " + orNone(raw) + "), want it refused"}
		}
		return nil, "", nil
	case res.Rejected != "":
		return nil, "", []string{"the input was refused: " + res.Rejected}
	case want.NotJudged:
		if mappedTo != "" {
			return nil, mappedTo, []string{"mapped to an AARTS event, want none: " + raw}
		}
		return nil, "", nil
	case mappedTo == "":
		return nil, "", []string{"mapped to no AARTS event, want " + want.HookPoint}
	}
	ev, err := aarts.ParseEvent(res.Event)
	if err != nil {
		return nil, mappedTo, []string{"not a valid AARTS event: " + err.Error()}
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
	if len(want.ToolInput) > 0 {
		got, _ := json.Marshal(ev.Field("tool_input"))
		if !sameJSON(want.ToolInput, got) {
			fails = append(fails, fmt.Sprintf("tool_input %s, want %s (compared whole)", got, compact(want.ToolInput)))
		}
	}
	if len(want.Fields) > 0 {
		pattern, _ := json.Marshal(want.Fields)
		if why := Match(pattern, res.Event); why != "" {
			fails = append(fails, "event: "+why)
		}
	}
	return ev, ev.HookPoint, fails
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return show(va) == show(vb)
}

func compact(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return show(v)
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
// ("" when it matches; every member that differs). In an object pattern each member must match the
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
		var whys []string
		for _, k := range keys {
			got, present := vo[k]
			switch {
			case pt[k] == nil:
				if present {
					whys = append(whys, fmt.Sprintf("%s.%s: %s, want it absent", at, k, show(got)))
				}
			case pt[k] == "*":
				if !present || got == nil {
					whys = append(whys, fmt.Sprintf("%s.%s: absent, want it present", at, k))
				}
			case !present:
				whys = append(whys, fmt.Sprintf("%s.%s: absent, want %s", at, k, show(pt[k])))
			default:
				if why := match(pt[k], got, at+"."+k); why != "" {
					whys = append(whys, why)
				}
			}
		}
		return strings.Join(whys, "; ")
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
