package action

import (
	"fmt"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/elide"
)

// eventKey keys an event's analysis among its derived values.
type eventKey struct{}

// Of is the engine's reading of what an event would do: the tool call of
// PreToolUse and PostToolUse, the server of PreMCPConnect; nil for events
// without an action. It is computed once per event (aarts.Event.Derived)
// and shared by the reducer, the policy and the receipt: callers MUST NOT
// modify it.
func Of(ev *aarts.Event) *Analysis {
	a, _ := ev.Derived(eventKey{}, analyzeEvent).(*Analysis)
	return a
}

func analyzeEvent(e *aarts.Event) any {
	switch e.HookPoint {
	case "PreToolUse", "PostToolUse":
		a := AnalyzeTool(e.NativeTool(), e.ToolInput, e.Cwd)
		a.observed(e.Field(FSFacts))
		a.cut(e.Field(elide.Member))
		return &a
	case "PreMCPConnect":
		a := AnalyzeText(e.String("server_uri") + " " + e.String("server_command"))
		return &a
	}
	return (*Analysis)(nil)
}

// FSFacts is the event member (an agentledger extension) in which the
// engine records what it saw of the file system when the event arrived:
// {"symlinks": {"<path>": "<target>"}, "removes": ["<path>", ...]}.
const FSFacts = "fs_facts"

// observed takes the engine's recorded observation of the file system
// into the analysis: symlinks of the paths the call names, and the
// untracked files a git clean or stash of the call would take away.
func (a *Analysis) observed(facts any) {
	m, ok := facts.(map[string]any)
	if !ok {
		return
	}
	if links, ok := m["symlinks"].(map[string]any); ok {
		for p, t := range links {
			if target, ok := t.(string); ok {
				if a.Symlinks == nil {
					a.Symlinks = map[string]string{}
				}
				a.Symlinks[p] = target
			}
		}
	}
	if rm, ok := m["removes"].([]any); ok {
		for _, p := range rm {
			if s, ok := p.(string); ok {
				a.Removes = append(a.Removes, s)
			}
		}
	}
}

// cut notes the values the engine cut from the call's input to fit the
// record (the event's elided member): what was not read cannot be vouched
// for, so the call is never explicitly allowed.
func (a *Analysis) cut(cuts any) {
	list, _ := cuts.([]any)
	for _, c := range list {
		m, _ := c.(map[string]any)
		ptr, _ := m["pointer"].(string)
		a.Caveats = append(a.Caveats, fmt.Sprintf("%s was cut to fit the record (%v bytes, %v read)", ptr, m["size"], m["kept"]))
	}
}
