package conformance

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/adapter"
	"github.com/agentledger/agentledger/hookwire"
)

// host is what the suite knows of an agent host whatever pack it runs,
// read from the host's built-in adapter (adapter/<host>.go): the pack of
// a host must cover all of it, and no pack can declare it smaller.
type host struct {
	// events are the host's native hook events its adapter reads — those
	// it maps to a hook point and those it knows have none. A pack has a
	// case of each.
	events []string
	// tools are the canonical tool kinds (AARTS §7) the host has tools
	// of; a level asks for each of them that the level lists.
	tools []string
	// subAgents: the host's input says which calls are a sub-agent's
	// (Claude Code's and Codex's agent_id). Only then can an adapter show
	// provenance; elsewhere a pack asserts is_sub_agent absent.
	subAgents bool
	// asks are the forms (AskForms) the host carries an ask out in at
	// PreToolUse: its own prompt, a deny held for an approver, a deferral.
	asks []string
}

// hosts are the hosts the suite knows, by adapter name.
var hosts = map[string]host{
	"claude-code": {
		events: []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure",
			"PermissionDenied", "SubagentStart", "SubagentStop", "Stop", "PreCompact", "PostCompact", "ConfigChange",
			"InstructionsLoaded", "Notification", "SessionEnd"},
		tools: []string{aarts.ToolShell, aarts.ToolFileWrite, aarts.ToolFileEdit, aarts.ToolFileRead, aarts.ToolWebRequest,
			aarts.ToolMCPCall, aarts.ToolPackageInstall, aarts.ToolDelegate, aarts.ToolOther},
		subAgents: true,
		asks:      []string{"ask", "ask_held", "ask_defer"},
	},
	"codex": {
		events: []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "SubagentStart",
			"SubagentStop", "Stop", "StopFailure", "PreCompact", "PostCompact", "SessionEnd"},
		tools:     []string{aarts.ToolShell, aarts.ToolFileEdit, aarts.ToolMCPCall, aarts.ToolPackageInstall},
		subAgents: true,
		asks:      []string{"ask_held"},
	},
	"copilot": {
		events: []string{"sessionStart", "userPromptSubmitted", "preToolUse", "postToolUse", "postToolUseFailure", "agentStop",
			"subagentStop", "preCompact", "errorOccurred", "notification", "sessionEnd"},
		tools: []string{aarts.ToolShell, aarts.ToolFileWrite, aarts.ToolFileEdit, aarts.ToolFileRead, aarts.ToolWebRequest,
			aarts.ToolMCPCall, aarts.ToolPackageInstall, aarts.ToolOther},
		asks: []string{"ask_held"},
	},
	"cursor": {
		events: []string{"sessionStart", "beforeSubmitPrompt", "beforeShellExecution", "afterShellExecution", "beforeMCPExecution",
			"afterMCPExecution", "preToolUse", "postToolUse", "postToolUseFailure", "beforeReadFile", "afterFileEdit",
			"subagentStart", "subagentStop", "stop", "preCompact", "afterAgentResponse", "afterAgentThought", "sessionEnd"},
		tools: []string{aarts.ToolShell, aarts.ToolFileWrite, aarts.ToolFileEdit, aarts.ToolFileRead, aarts.ToolWebRequest,
			aarts.ToolMCPCall, aarts.ToolPackageInstall, aarts.ToolOther},
		asks: []string{"ask", "ask_held"}, // held where Cursor cannot ask: beforeReadFile
	},
	"gemini": {
		events: []string{"SessionStart", "BeforeAgent", "BeforeModel", "AfterModel", "BeforeToolSelection", "BeforeTool", "AfterTool",
			"AfterAgent", "PreCompress", "Notification", "SessionEnd"},
		tools: []string{aarts.ToolShell, aarts.ToolFileWrite, aarts.ToolFileEdit, aarts.ToolFileRead, aarts.ToolWebRequest,
			aarts.ToolMCPCall, aarts.ToolPackageInstall, aarts.ToolOther},
		asks: []string{"ask_held"},
	},
	"qwen-code": {
		events: []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "PreCompact", "PostCompact",
			"SubagentStart", "SubagentStop", "Stop", "SessionEnd"},
		tools: []string{aarts.ToolShell, aarts.ToolFileWrite, aarts.ToolFileEdit, aarts.ToolFileRead, aarts.ToolWebRequest,
			aarts.ToolMCPCall, aarts.ToolPackageInstall, aarts.ToolDelegate, aarts.ToolOther},
		subAgents: true,
		asks:      []string{"ask_held"},
	},
	"droid": {
		events: []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "SubagentStop", "Stop", "SessionEnd"},
		tools: []string{aarts.ToolShell, aarts.ToolFileWrite, aarts.ToolFileEdit, aarts.ToolFileRead, aarts.ToolWebRequest,
			aarts.ToolMCPCall, aarts.ToolPackageInstall, aarts.ToolOther},
		asks: []string{"ask_held"},
	},
	// opencode and Kilo CLI: the hooks of agentledger's plugin. Their MCP
	// tools are named SERVER_TOOL, which no one can tell from a tool of
	// their own: judged as other.
	"opencode": opencodeSuite,
	"kilo":     opencodeSuite,
	// Cline: a sub-agent's events carry its agent_id and its parent's.
	"cline": {
		events: []string{"agent_start", "prompt_submit", "tool_call", "tool_result", "agent_end", "agent_error", "agent_abort", "session_shutdown"},
		tools: []string{aarts.ToolShell, aarts.ToolFileEdit, aarts.ToolFileRead, aarts.ToolWebRequest, aarts.ToolPackageInstall,
			aarts.ToolDelegate, aarts.ToolOther},
		subAgents: true,
		asks:      []string{"ask_held"},
	},
}

var opencodeSuite = host{
	events: []string{"session.created", "chat.message", "tool.execute.before", "tool.execute.after"},
	tools: []string{aarts.ToolShell, aarts.ToolFileWrite, aarts.ToolFileEdit, aarts.ToolFileRead, aarts.ToolWebRequest,
		aarts.ToolPackageInstall, aarts.ToolDelegate, aarts.ToolOther},
	subAgents: true,
	asks:      []string{"ask_held"},
}

// notificationHooks are the hook points AARTS §6.3 makes notifications:
// the host fires them and goes on, so they count without a deny that
// stops anything.
var notificationHooks = []string{"SessionEnd", "PostAskResolution"}

// nativeEvent is the name of the host event input is, as the host's
// adapter reads it ("" when it cannot be told).
func nativeEvent(hostName string, input []byte) string {
	if hostName == "copilot" {
		// Copilot's camelCase payloads do not name their event.
		_, event, _ := adapter.ParseCopilot(input)
		return event
	}
	return hookwire.Probe(input).HostEvent
}

// enforced reports whether a deny stops anything at the host's event, as
// the host's adapter says (adapter.Host.Blocking).
func enforced(hostName, event string) bool {
	h := adapter.Named(hostName)
	return h != nil && event != "" && h.Blocking(event)
}

// ErrCoverage is the error of a pack that is refused: it covers less of
// its host than the host documents, or lets an adapter that games the
// suite keep a level.
var ErrCoverage = errors.New("pack below the minimum coverage")

// CoverageError names what a refused pack lacks.
type CoverageError struct {
	Host    string
	SHA256  string
	Missing []string
}

func (e *CoverageError) Error() string {
	return fmt.Sprintf("pack for %s (sha256:%s) refused, below the minimum coverage: it needs %s", e.Host, e.SHA256, strings.Join(e.Missing, "; "))
}

// Unwrap is ErrCoverage.
func (e *CoverageError) Unwrap() error { return ErrCoverage }

// Coverage checks that p covers what its host documents: a case of each
// of the host's native events, its tool list at least the host's tools, a
// PreToolUse case of each tool, answers at PreToolUse to allow, an allow
// that rests on no rule, deny and each form the host carries an ask out
// in, an input the adapter must refuse, tool_input expected whole in every
// tool event, and is_sub_agent asserted in every PreToolUse case — both
// ways where the host says which calls are a sub-agent's, absent where it
// does not.
func Coverage(p *Pack) error {
	h, ok := hosts[p.Host]
	if !ok {
		return &CoverageError{Host: p.Host, SHA256: p.digest, Missing: []string{fmt.Sprintf(
			"a host this suite documents (%s); of another host it knows no events to cover", strings.Join(slices.Sorted(maps.Keys(hosts)), ", "))}}
	}
	var missing []string
	for _, t := range h.tools {
		if !slices.Contains(p.Tools, t) {
			missing = append(missing, "tool kind "+t+" in its tools (the host has it)")
		}
	}
	if prompts := slices.Contains(h.asks, "ask"); p.HostAsks != prompts {
		missing = append(missing, fmt.Sprintf("host_asks %v (asks at this host are carried out as %s)", prompts, strings.Join(h.asks, ", ")))
	}
	events, tools, answers := map[string]bool{}, map[string]bool{}, map[string]bool{}
	subAgent := map[any]bool{}
	refused := false
	for _, c := range p.Cases {
		e := c.Expect
		if e.Rejected {
			refused = true
			continue
		}
		events[nativeEvent(p.Host, c.Input)] = true
		if (e.HookPoint == "PreToolUse" || e.HookPoint == "PostToolUse") && len(e.ToolInput) == 0 {
			missing = append(missing, fmt.Sprintf("case %q: expect.tool_input (compared whole)", c.Name))
		}
		if e.HookPoint != "PreToolUse" {
			continue
		}
		tools[e.ToolName] = true
		for v := range c.Answers {
			answers[v] = true
		}
		v, asserted := e.Fields["is_sub_agent"]
		switch {
		case h.subAgents && v == nil:
			missing = append(missing, fmt.Sprintf("case %q: is_sub_agent asserted (true or false: the host names a sub-agent's calls)", c.Name))
		case !h.subAgents && (!asserted || v != nil):
			missing = append(missing, fmt.Sprintf("case %q: is_sub_agent asserted absent (null: the host's input names no sub-agent)", c.Name))
		}
		subAgent[v] = true
	}
	for _, ev := range h.events {
		if !events[ev] {
			missing = append(missing, "a case of the host's event "+ev)
		}
	}
	for _, t := range union(h.tools, p.Tools) {
		if !tools[t] {
			missing = append(missing, "a PreToolUse case of tool "+t)
		}
	}
	for _, v := range append([]string{"allow", "allow_default", "deny"}, h.asks...) {
		if !answers[v] {
			missing = append(missing, "an answer to "+v+" at PreToolUse")
		}
	}
	if !refused {
		missing = append(missing, "a case of input the adapter must refuse")
	}
	if h.subAgents && !(subAgent[true] && subAgent[false]) {
		missing = append(missing, "PreToolUse cases of a sub-agent's call and of the main agent's (is_sub_agent true and false)")
	}
	if len(missing) > 0 {
		return &CoverageError{Host: p.Host, SHA256: p.digest, Missing: missing}
	}
	return nil
}

// union is a and the members of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
