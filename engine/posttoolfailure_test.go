package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/agentledger/agentledger/ledger"
)

// TestClaudeCodeFailedCallIsRecorded: a command that runs and fails fires
// Claude Code's PostToolUseFailure, not PostToolUse. It is recorded as the
// call's result (the error Claude got), closes the ask about that call as
// approved (it ran), and a secret in the error is a denial that says so
// next to the result.
func TestClaudeCodeFailedCallIsRecorded(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	in := func(event, extra string) []byte {
		return []byte(`{"session_id":"failing","transcript_path":"/t","cwd":"/workspace/shop","permission_mode":"default","hook_event_name":"` + event + `","tool_name":"Bash","tool_input":{"command":"rm -rf build && make"},"tool_use_id":"toolu_f1"` + extra + `}`)
	}
	r := e.Answer(context.Background(), Request{Host: "claude-code", Body: in("PreToolUse", "")})
	if r.Decision != "ask" {
		t.Fatalf("rm -rf under coding-agent: %s %s, want the rule's ask", r.Decision, r.ReasonCode)
	}
	r = e.Answer(context.Background(), Request{Host: "claude-code", Body: in("PostToolUseFailure", `,"error":"Exit code 2\nmake: *** No rule to make target","is_interrupt":false,"duration_ms":412`)})
	if r.Decision != "allow" || r.ReasonCode == ReasonInputRejected {
		t.Fatalf("PostToolUseFailure: %s %s %v", r.Decision, r.ReasonCode, r.Reasons)
	}
	var kinds []string
	var failed map[string]any
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "failing"}) {
		kinds = append(kinds, env.EventType())
		if env.EventType() == "PostToolUse" {
			json.Unmarshal(env.Payload(), &failed)
		}
	}
	if res, _ := failed["tool_result"].(map[string]any); failed["tool_failed"] != true || res["error"] == nil {
		t.Fatalf("recorded PostToolUse %v, want the failure and its error", failed)
	}
	approved := false
	for _, k := range kinds {
		approved = approved || k == ledger.EventResolution
	}
	if !approved {
		t.Errorf("record %v: the ask about the failed call is not closed", kinds)
	}
	token := "ghp_" + "0123456789abcdefghijABCDEFGHIJ0123456789"
	r = e.Answer(context.Background(), Request{Host: "claude-code", Body: bytes.Replace(in("PostToolUseFailure", `,"error":"Exit code 1\nGITHUB_TOKEN=`+token+`"`), []byte("toolu_f1"), []byte("toolu_f2"), 1)})
	if r.Decision != "deny" || !bytes.Contains(r.HostOutput, []byte(`"decision":"block"`)) || bytes.Contains(r.HostOutput, []byte(token)) {
		t.Errorf("a secret in a failed call's error: %s %s %s", r.Decision, r.ReasonCode, r.HostOutput)
	}
}

// TestClaudeCodeTurnsAndCompaction: events that are not a tool call take
// their turn from Claude Code's prompt_id; a PreCompact the engine denies
// (here: input it cannot take) blocks the compaction, which Claude Code
// honours.
func TestClaudeCodeTurnsAndCompaction(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	prompt := []byte(`{"session_id":"turns","transcript_path":"/t","cwd":"/workspace/shop","permission_mode":"default","hook_event_name":"UserPromptSubmit","prompt":"fix the tests","prompt_id":"550e8400-e29b-41d4-a716-446655440000"}`)
	if r := e.Answer(context.Background(), Request{Host: "claude-code", Body: prompt}); r.Decision != "allow" {
		t.Fatalf("prompt: %s %s", r.Decision, r.ReasonCode)
	}
	found := false
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "turns"}) {
		found = found || env.EventType() == "PreUserInput" && bytes.Contains(env.Payload(), []byte(`"turn_id":"550e8400-e29b-41d4-a716-446655440000"`))
	}
	if !found {
		t.Error("the prompt's turn is not its prompt_id")
	}
	compact := []byte(`{"session_id":"turns","transcript_path":"/t","cwd":"/workspace/shop","hook_event_name":"PreCompact","trigger":"auto","trigger":"manual"}`)
	r := e.Answer(context.Background(), Request{Host: "claude-code", Body: compact})
	if r.Decision != "deny" || !bytes.Contains(r.HostOutput, []byte(`"decision":"block"`)) {
		t.Errorf("a PreCompact the engine cannot take: %s %s, want compaction blocked", r.Decision, r.HostOutput)
	}
}

// TestClaudeCodePostCompactIsRecorded: the summary Claude goes on from after
// a compaction is recorded (AARTS PostCompact: the transcript it replaced by
// path, the summary as the modified value); Claude Code takes no decision
// there.
func TestClaudeCodePostCompactIsRecorded(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	in := []byte(`{"session_id":"compacted","transcript_path":"/t/x.jsonl","cwd":"/workspace/shop","hook_event_name":"PostCompact","trigger":"auto","compact_summary":"We fixed the cart totals; next: the checkout tests."}`)
	r := e.Answer(context.Background(), Request{Host: "claude-code", Body: in})
	if r.ReasonCode == ReasonInputRejected || string(r.HostOutput) != "{}" {
		t.Fatalf("PostCompact: %s %s %s", r.Decision, r.ReasonCode, r.HostOutput)
	}
	found := false
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "compacted"}) {
		found = found || env.EventType() == "PostCompact" && bytes.Contains(env.Payload(), []byte("checkout tests"))
	}
	if !found {
		t.Error("no PostCompact with the summary on record")
	}
}

// TestClaudeCodeRefusalsAndLifecycle: a call the engine explicitly allowed
// that Claude Code then refused itself (plan mode re-checks an allow;
// PermissionDenied) is on record as refused — a PostToolUse whose result is
// the refusal, never as a call that ran; a settings file that changed and
// an instruction file that was loaded are recorded (HostLifecycle) and
// stop nothing.
func TestClaudeCodeRefusalsAndLifecycle(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	cc := func(event, extra string) HookResponse {
		t.Helper()
		r := e.Answer(context.Background(), Request{Host: "claude-code", Body: []byte(`{"session_id":"refused","transcript_path":"/t","cwd":"/workspace/shop","permission_mode":"plan","hook_event_name":"` + event + `"` + extra + `}`)})
		if r.ReasonCode == ReasonInputRejected || r.ReasonCode == ReasonEngineFailure {
			t.Fatalf("%s: %s %v", event, r.ReasonCode, r.Reasons)
		}
		return r
	}
	call := `,"tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":"toolu_p1"`
	if r := cc("PreToolUse", call); r.HostAnswer != "allow" {
		t.Fatalf("go test under coding-agent: host answer %q, want the explicit allow", r.HostAnswer)
	}
	if r := cc("PermissionDenied", call+`,"reason":"plan mode: the user has not approved running commands"`); string(r.HostOutput) != "{}" {
		t.Errorf("PermissionDenied answered %s", r.HostOutput)
	}
	cc("ConfigChange", `,"source":"project_settings","file_path":"/workspace/shop/.claude/settings.json"`)
	if r := cc("InstructionsLoaded", `,"file_path":"/workspace/shop/CLAUDE.md","memory_type":"Project","load_reason":"session_start"`); r.Decision != "allow" || string(r.HostOutput) != "{}" {
		t.Errorf("InstructionsLoaded: %s %s", r.Decision, r.HostOutput)
	}
	var refused, lifecycle int
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "refused"}) {
		var p map[string]any
		_ = json.Unmarshal(env.Payload(), &p)
		switch env.EventType() {
		case "PostToolUse":
			res, _ := p["tool_result"].(map[string]any)
			if p["host_refused"] != true || p["turn_id"] != "toolu_p1" || res["permission_denied"] != true {
				t.Errorf("refusal recorded as %s", env.Payload())
			}
			refused++
		case ledger.EventHostLifecycle:
			if p["host_event"] != "ConfigChange" && p["host_event"] != "InstructionsLoaded" || p["details"] == nil {
				t.Errorf("lifecycle recorded as %s", env.Payload())
			}
			lifecycle++
		}
	}
	if refused != 1 || lifecycle != 2 {
		t.Errorf("%d refusals and %d lifecycle events recorded, want 1 and 2", refused, lifecycle)
	}
}

// TestClaudeCodeAskRefusedInThePrompt: Claude Code reports nothing when
// its user refuses a call in the permission prompt. A call asked about
// that has not run when the agent's turn ends (Stop) was refused, and is
// recorded so; one that ran was approved.
func TestClaudeCodeAskRefusedInThePrompt(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	cc := func(event, extra string) HookResponse {
		t.Helper()
		return e.Answer(context.Background(), Request{Host: "claude-code", Body: []byte(`{"session_id":"prompt-refused","transcript_path":"/t","cwd":"/workspace/shop","permission_mode":"default","hook_event_name":"` + event + `"` + extra + `}`)})
	}
	ran := `,"tool_name":"Bash","tool_input":{"command":"rm -rf build"},"tool_use_id":"toolu_r1"`
	refused := `,"tool_name":"Bash","tool_input":{"command":"rm -rf dist"},"tool_use_id":"toolu_r2"`
	for _, c := range []string{ran, refused} {
		if r := cc("PreToolUse", c); r.HostAnswer != "ask" {
			t.Fatalf("rm -rf: host answer %q, want Claude Code's prompt", r.HostAnswer)
		}
	}
	cc("PostToolUse", ran+`,"tool_response":{"stdout":"","stderr":"","interrupted":false}`)
	cc("Stop", `,"stop_hook_active":false,"last_assistant_message":"Cleaned build; you declined dist."`)
	got := map[uint64]string{}
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "prompt-refused"}) {
		if env.EventType() == ledger.EventResolution {
			var r struct {
				ForSeq     uint64 `json:"for_seq"`
				Resolution string `json:"resolution"`
				Source     string `json:"source"`
			}
			_ = json.Unmarshal(env.Payload(), &r)
			got[r.ForSeq] = r.Resolution + "/" + r.Source
		}
	}
	if got[0] != "approved/host" || got[2] != "denied/host" || len(got) != 2 {
		t.Errorf("resolutions %v, want the call that ran approved and the other denied, by the host", got)
	}
}
