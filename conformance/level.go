package conformance

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentledger/agentledger/aarts"
)

// level is what one AARTS level (§11) adds: hook points and tool kinds.
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

// hookLevel is the level a hook point belongs to; 3 for one no level
// lists (agentledger's own), 1 for none at all (an event made up of
// input that has no hook point).
func hookLevel(hook string) int {
	if hook == "" {
		return 1
	}
	for n, l := range levels {
		if slices.Contains(l.hooks, hook) {
			return n + 1
		}
	}
	return 3
}

// caseLevel is the level of a case by what it expects: input to refuse
// and host events without a hook point are level 1 (a made-up event is
// judged as any other).
func caseLevel(e Expect) int {
	if e.Rejected || e.NotJudged {
		return 1
	}
	return hookLevel(e.HookPoint)
}

// askForm names an ask form (AskForms) in a report.
var askForm = map[string]string{"ask": "prompt", "ask_held": "held for an approver", "ask_defer": "defer"}

// level works out what the cases of p showed and the level they earn:
// every case of the level and below passes, and the passing cases cover
// the level's hook points (at host events where a deny stops something),
// its tools, its enforcement and, from level 2, provenance.
func (h *HostReport) level(p *Pack, outs []outcome) {
	spec := hosts[p.Host]
	hooks, tools, unenforced := map[string]bool{}, map[string]bool{}, map[string][]string{}
	answered, failed := map[string]bool{}, map[string]bool{}
	provenance, subAgent := true, map[any]bool{}
	for i, o := range outs {
		c, pass := &p.Cases[i], h.Cases[i].Pass
		if c.Expect.HookPoint == "PreToolUse" {
			for v, ok := range o.answers {
				answered[v] = answered[v] || ok
				failed[v] = failed[v] || !ok
			}
			provenance = provenance && pass
			subAgent[c.Expect.Fields["is_sub_agent"]] = true
		}
		if !pass || o.ev == nil {
			continue
		}
		if !o.counts {
			native := nativeEvent(p.Host, c.Input)
			if !slices.Contains(unenforced[o.ev.HookPoint], native) {
				unenforced[o.ev.HookPoint] = append(unenforced[o.ev.HookPoint], native)
			}
			continue
		}
		hooks[o.ev.HookPoint] = true
		if o.ev.HookPoint == "PreToolUse" {
			tools[o.ev.ToolName] = true
		}
	}
	for hp := range hooks {
		delete(unenforced, hp)
	}
	h.Unenforced = sortedKeys(unenforced)
	applicable := union(spec.tools, p.Tools)
	for _, t := range aarts.CanonicalTools {
		if !slices.Contains(applicable, t) && slices.ContainsFunc(levels, func(l level) bool { return slices.Contains(l.tools, t) }) {
			h.NotApplicable = append(h.NotApplicable, t)
		}
	}
	// Provenance: only where the host's input names a sub-agent's calls,
	// and shown both ways, so that a constant is_sub_agent fails a case.
	h.Provenance = spec.subAgents && provenance && subAgent[true] && subAgent[false]
	h.HookPoints, h.Tools = sortedKeys(hooks), sortedKeys(tools)
	if answered["allow"] && !failed["allow"] && !failed["allow_default"] {
		h.Enforces = append(h.Enforces, "allow")
	}
	if answered["deny"] && !failed["deny"] {
		h.Enforces = append(h.Enforces, "deny")
	}
	asks := len(spec.asks) > 0
	for _, form := range AskForms {
		switch {
		case failed[form]:
			asks = false
		case answered[form]:
			h.AsksAs = append(h.AsksAs, askForm[form])
		case slices.Contains(spec.asks, form):
			asks = false
		}
	}
	if asks {
		h.Enforces = append(h.Enforces, "ask")
	}

	h.CasesLevel = len(levels)
	failing := map[int][]string{}
	for _, c := range h.Cases {
		if !c.Pass {
			h.CasesLevel = min(h.CasesLevel, c.Level-1)
			failing[c.Level] = append(failing[c.Level], c.Name)
		}
	}
	var needHooks []string
	for n, l := range levels {
		var need []string
		if n+1 > h.CasesLevel {
			var names []string
			for k := 1; k <= n+1; k++ {
				names = append(names, failing[k]...)
			}
			need = append(need, fmt.Sprintf("every case of level %d and below to pass (%d fail: %s)", n+1, len(names), strings.Join(names, ", ")))
		}
		needHooks = append(needHooks, l.hooks...)
		for _, hp := range needHooks {
			switch {
			case hooks[hp]:
			case len(unenforced[hp]) > 0:
				need = append(need, fmt.Sprintf("hook point %s where a deny stops something (mapped only from %s, where a deny does nothing at %s)",
					hp, strings.Join(unenforced[hp], ", "), p.Host))
			default:
				need = append(need, "hook point "+hp)
			}
		}
		for _, t := range l.tools {
			if slices.Contains(applicable, t) && !tools[t] {
				need = append(need, "tool "+t)
			}
		}
		enforce := []string{"allow", "deny"}
		if n >= 1 {
			enforce = append(enforce, "ask")
			if !slices.Contains(h.AsksAs, askForm["ask"]) {
				need = append(need, "an ask the host prompts its user for (interactive prompting)")
			}
			if !h.Provenance {
				need = append(need, provenanceNeed(spec))
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

// provenanceNeed says what provenance still needs at a host.
func provenanceNeed(spec host) string {
	if !spec.subAgents {
		return "provenance on every PreToolUse (the host's input does not say which calls are a sub-agent's, so no adapter can show it)"
	}
	return "provenance on every PreToolUse (every PreToolUse case passing, a sub-agent's call and the main agent's among them)"
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
