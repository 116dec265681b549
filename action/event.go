package action

import "github.com/agentledger/agentledger/aarts"

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
		return &a
	case "PreMCPConnect":
		a := AnalyzeText(e.String("server_uri") + " " + e.String("server_command"))
		return &a
	}
	return (*Analysis)(nil)
}
