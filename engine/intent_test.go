package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
)

// TestIntentAlignment (AARM R3): after "summarise the README, change
// nothing", a push, a write and a removal are asked about, quoting the
// request; reading goes on. Once the user asks for a change, the same
// write is judged on its own. A request that asks for a change to begin
// with never makes the rule fire.
func TestIntentAlignment(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	n := 0
	cc := func(session, event, extra string) HookResponse {
		t.Helper()
		n++
		r := e.Answer(context.Background(), Request{Host: "claude-code", Body: []byte(`{"session_id":"` + session + `","transcript_path":"/t","cwd":"/workspace/shop","permission_mode":"default","hook_event_name":"` + event + `"` + extra + `}`)})
		if r.ReasonCode == ReasonInputRejected || r.ReasonCode == ReasonEngineFailure {
			t.Fatalf("%s: %s %v", event, r.ReasonCode, r.Reasons)
		}
		return r
	}
	bash := func(session, command string) HookResponse {
		return cc(session, "PreToolUse", `,"tool_name":"Bash","tool_input":{"command":"`+command+`"},"tool_use_id":"toolu_i`+strings.Repeat("x", n)+`"`)
	}
	edit := `,"tool_name":"Edit","tool_input":{"file_path":"/workspace/shop/README.md","old_string":"a","new_string":"b"},"tool_use_id":"toolu_e"`

	cc("intent", "UserPromptSubmit", `,"prompt":"Summarise the README for me, change nothing."`)
	for _, c := range []string{"git push origin main", "rm -rf build", "echo hi > notes.txt"} {
		r := bash("intent", c)
		if r.Decision != aarts.Ask || r.ReasonCode != "INTENT_MISMATCH" || !strings.Contains(strings.Join(r.Reasons, " "), "Summarise the README") {
			t.Errorf("%s after a read-only request: %s %s %v", c, r.Decision, r.ReasonCode, r.Reasons)
		}
	}
	if r := cc("intent", "PreToolUse", edit); r.ReasonCode != "INTENT_MISMATCH" {
		t.Errorf("an edit after a read-only request: %s %s", r.Decision, r.ReasonCode)
	}
	for _, c := range []string{"cat README.md", "git log --oneline", "grep -rn TODO ."} {
		if r := bash("intent", c); r.Decision == aarts.Deny || r.ReasonCode == "INTENT_MISMATCH" {
			t.Errorf("%s after a read-only request: %s %s", c, r.Decision, r.ReasonCode)
		}
	}
	cc("intent", "UserPromptSubmit", `,"prompt":"Now fix the typo in the README."`)
	if r := cc("intent", "PreToolUse", edit); r.ReasonCode == "INTENT_MISMATCH" || r.Decision == aarts.Deny {
		t.Errorf("the edit once asked for: %s %s", r.Decision, r.ReasonCode)
	}
	cc("fix", "UserPromptSubmit", `,"prompt":"Explain why TestTotal fails and fix it."`)
	if r := cc("fix", "PreToolUse", edit); r.ReasonCode == "INTENT_MISMATCH" {
		t.Errorf("an edit after explain-and-fix: %s %s", r.Decision, r.ReasonCode)
	}
}
