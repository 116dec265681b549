package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/manifest"
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

// TestRuleConflictDefers (AARM R3): an allow rule and a deny rule of the
// same specificity that both match disagree at one priority: the call is
// deferred naming both, never allowed or silently denied. A deny rule more
// specific than the allow (git push --force under git *) still denies.
func TestRuleConflictDefers(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	d := deciderWith(t, "coding-agent.json", func(m *manifest.Manifest) {
		m.Rules.Deny = append(m.Rules.Deny, "file_write(**/*.env)")
		m.Rules.Allow = append(m.Rules.Allow, "file_write(**/.env)")
	})
	e := newEngine(t, d, st)
	cc := func(extra string) HookResponse {
		return e.Answer(context.Background(), Request{Host: "claude-code", Body: []byte(`{"session_id":"conflict","transcript_path":"/t","cwd":"/workspace/shop","permission_mode":"default","hook_event_name":"PreToolUse"` + extra + `}`)})
	}
	r := cc(`,"tool_name":"Write","tool_input":{"file_path":"/workspace/shop/.env","content":"DEBUG=1"},"tool_use_id":"toolu_c1"`)
	if r.AARMDecision != aarts.AARMDefer || r.ReasonCode != "RULE_CONFLICT" || !strings.Contains(strings.Join(r.Reasons, " "), "file_write(**/.env)") {
		t.Errorf("conflicting rules: %s %s %v, want DEFER naming both", r.AARMDecision, r.ReasonCode, r.Reasons)
	}
	if r := cc(`,"tool_name":"Bash","tool_input":{"command":"git push --force origin main"},"tool_use_id":"toolu_c2"`); r.Decision != aarts.Deny || r.ReasonCode != "RULE_DENY" {
		t.Errorf("git push --force under shell(git *): %s %s, want the more specific deny", r.Decision, r.ReasonCode)
	}
}

// TestRuleConflictIsPerCommand: rules conflict only where both match the
// same simple command; `npm install && npm publish` under allow npm
// install and deny npm publish is denied, as it was.
func TestRuleConflictIsPerCommand(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	d := deciderWith(t, "coding-agent.json", func(m *manifest.Manifest) {
		m.Rules.Deny = append(m.Rules.Deny, "shell(npm publish:*)", "shell(sudo:*)")
		m.Rules.Allow = append(m.Rules.Allow, "shell(npm install:*)")
	})
	e := newEngine(t, d, st)
	for _, c := range []string{"npm install && npm publish", "true; sudo systemctl stop ufw"} {
		r := e.Answer(context.Background(), Request{Host: "claude-code", Body: []byte(`{"session_id":"per-command","transcript_path":"/t","cwd":"/workspace/shop","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"` + c + `"},"tool_use_id":"toolu_` + strings.ReplaceAll(c[:4], " ", "") + `"}`)})
		if r.Decision != aarts.Deny {
			t.Errorf("%s: %s %s %v, want the deny rule's deny", c, r.Decision, r.ReasonCode, r.Reasons)
		}
	}
}
