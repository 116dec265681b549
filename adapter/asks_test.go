package adapter

import (
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
)

// TestAsksOnlyWhereTheHostPrompts: a host's Asks says it prompts its user
// for an ask at an event only where its renderer gives the host an ask it
// carries out as a prompt, never a deny: the record (host_answer "ask",
// the ask its host's own) says what the host did. Everywhere else an ask
// is recorded as the deny the host gets, and held for an approver.
func TestAsksOnlyWhereTheHostPrompts(t *testing.T) {
	events := map[string][]string{
		"claude-code": {"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure",
			"PermissionDenied", "SubagentStart", "SubagentStop", "Stop", "PreCompact", "PostCompact", "ConfigChange",
			"InstructionsLoaded", "Notification", "SessionEnd", ""},
		"codex": {"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "SubagentStart",
			"SubagentStop", "Stop", "PreCompact", "PostCompact", "SessionEnd", ""},
		"copilot": {"sessionStart", "userPromptSubmitted", "preToolUse", "postToolUse", "postToolUseFailure", "agentStop",
			"subagentStop", "preCompact", "errorOccurred", "notification", "sessionEnd", ""},
		"cursor": {"sessionStart", "beforeSubmitPrompt", "beforeShellExecution", "afterShellExecution", "beforeMCPExecution",
			"afterMCPExecution", "preToolUse", "postToolUse", "postToolUseFailure", "beforeReadFile", "afterFileEdit",
			"subagentStart", "subagentStop", "stop", "preCompact", "afterAgentResponse", "afterAgentThought", "sessionEnd", ""},
		"gemini": {"SessionStart", "BeforeAgent", "BeforeModel", "AfterModel", "BeforeToolSelection", "BeforeTool", "AfterTool",
			"AfterAgent", "PreCompress", "Notification", "SessionEnd", ""},
	}
	prompts := map[string][]string{ // where each host prompts its user, by its hook's word
		"claude-code": {"PreToolUse"},
		"cursor":      {"beforeShellExecution", "beforeMCPExecution", "preToolUse"},
		"copilot":     {"preToolUse"}, // with --host-asks
	}
	denies := func(out string) bool {
		for _, d := range []string{`"permissionDecision":"deny"`, `"permission":"deny"`, `"decision":"deny"`, `"decision":"block"`, `"continue":false`, `"behavior":"deny"`} {
			if strings.Contains(out, d) {
				return true
			}
		}
		return false
	}
	for name, list := range events {
		h := Named(name)
		for _, ev := range list {
			for _, hostAsks := range []bool{false, true} {
				asks := h.Asks == nil || h.Asks(ev, hostAsks)
				want := false
				for _, p := range prompts[name] {
					want = want || p == ev && (name != "copilot" || hostAsks)
				}
				if asks != want {
					t.Errorf("%s %q (host asks %v): Asks %v, want %v", name, ev, hostAsks, asks, want)
				}
				if out := string(h.Render(ev, []byte(`{"tool_input":{"command":"ls"}}`), Answer{Decision: aarts.Ask, HostAnswer: aarts.Ask, Reasons: []string{"r"}})); asks && denies(out) {
					t.Errorf("%s %q: recorded as the host's own ask, but the host gets %s", name, ev, out)
				}
			}
		}
	}
}
