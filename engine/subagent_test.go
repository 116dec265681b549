package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/adapter"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/manifest"
)

// TestHostSubAgentCeiling: Claude Code and Codex start sub-agents of their
// own agent types (SubagentStart) and send the sub-agent's calls with its
// agent_id. Each sub-agent gets a session of its own, a child of the
// host's session, bounded by the parent's spawn verdict: the manifest's
// sub_agents give an Explore agent file_read only, so its read is decided
// as usual and its shell command and write are denied; an agent type the
// manifest does not name gets the declared tools, so its ordinary build
// runs as in the parent. The sub-agent's stop is recorded in the parent as
// its result.
func TestHostSubAgentCeiling(t *testing.T) {
	for _, host := range []string{"claude-code", "codex"} {
		t.Run(host, func(t *testing.T) {
			st := openStore(t, t.TempDir())
			defer st.Close()
			d := deciderWith(t, "coding-agent.json", func(m *manifest.Manifest) {
				m.SubAgents = map[string][]string{"Explore": {"file_read"}}
			})
			e := newEngine(t, d, st)
			parent := "sub-" + host
			base := `"session_id":"` + parent + `","transcript_path":"/t","cwd":"/workspace/shop","model":"m","permission_mode":"default","turn_id":"turn-1"`
			send := hostSender(t, e, host, base)
			call := func(agent, id, tool, input string) HookResponse {
				t.Helper()
				a := ""
				if agent != "" {
					a = `,"agent_id":"` + agent + `","agent_type":"x"`
				}
				return send("PreToolUse", fmt.Sprintf(`,"tool_name":%q,"tool_input":%s,"tool_use_id":%q%s`, tool, input, id, a))
			}
			send("SessionStart", `,"source":"startup"`)
			send("SubagentStart", `,"agent_id":"ag-explore","agent_type":"Explore"`)
			send("SubagentStart", `,"agent_id":"ag-general","agent_type":"general-purpose"`)

			if r := call("ag-explore", "t1", "Read", `{"file_path":"/workspace/shop/main.go"}`); r.Decision == aarts.Deny {
				t.Errorf("Explore's read: %s %s %v", r.Decision, r.ReasonCode, r.Reasons)
			}
			for _, c := range []struct{ tool, input string }{
				{"Bash", `{"command":"go build ./..."}`},
				{"Write", `{"file_path":"/workspace/shop/main.go","content":"package main"}`},
			} {
				if r := call("ag-explore", "t-"+c.tool, c.tool, c.input); r.Decision != aarts.Deny || r.ReasonCode != "PERMISSION_UNDECLARED" {
					t.Errorf("Explore's %s: %s %s %v, want deny PERMISSION_UNDECLARED", c.tool, r.Decision, r.ReasonCode, r.Reasons)
				}
			}
			if r := call("ag-general", "t2", "Bash", `{"command":"go build ./..."}`); r.Decision == aarts.Deny {
				t.Errorf("general-purpose's build: %s %s %v", r.Decision, r.ReasonCode, r.Reasons)
			}
			if r := call("", "t3", "Bash", `{"command":"go build ./..."}`); r.Decision == aarts.Deny {
				t.Errorf("the parent's build: %s %s %v", r.Decision, r.ReasonCode, r.Reasons)
			}
			send("SubagentStop", `,"agent_id":"ag-explore","agent_type":"Explore","stop_hook_active":false,"last_assistant_message":"found 3 files"`)

			child := adapter.SubAgentSession(parent, "ag-explore")
			var inherited, spawns, results int
			for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: child}) {
				var p map[string]any
				_ = json.Unmarshal(env.Payload(), &p)
				if env.EventType() == "PreToolUse" && (p["parent_session_id"] != parent || p["is_sub_agent"] != true) {
					t.Errorf("child call %s names parent %v", env.Payload(), p["parent_session_id"])
				}
				if env.EventType() == ledger.EventVerdict && p["inherited"] != nil {
					inherited++
				}
			}
			for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: parent}) {
				switch env.EventType() {
				case "PreSubAgentSpawn":
					spawns++
				case "PostSubAgentResult":
					results++
					if !strings.Contains(string(env.Payload()), child) {
						t.Errorf("result %s does not name %s", env.Payload(), child)
					}
				case "PreToolUse":
					if strings.Contains(string(env.Payload()), "ag-") {
						t.Errorf("a sub-agent's call recorded in the parent: %s", env.Payload())
					}
				}
			}
			if inherited != 1 || spawns != 2 || results != 1 {
				t.Errorf("inherited %d, spawns %d, results %d; want 1, 2, 1", inherited, spawns, results)
			}
		})
	}
}

// TestSubAgentAnswersToTheUsersRequest: a sub-agent's calls answer to what
// the user asked the parent: after "explain the checkout flow, change
// nothing", a general-purpose sub-agent's edit is asked about as the
// parent's would be.
func TestSubAgentAnswersToTheUsersRequest(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	send := hostSender(t, e, "claude-code", `"session_id":"sub-intent","transcript_path":"/t","cwd":"/workspace/shop","permission_mode":"default"`)
	send("UserPromptSubmit", `,"prompt":"Explain the checkout flow, change nothing."`)
	send("SubagentStart", `,"agent_id":"ag-1","agent_type":"general-purpose"`)
	r := send("PreToolUse", `,"tool_name":"Edit","tool_input":{"file_path":"/workspace/shop/cart.go","old_string":"a","new_string":"b"},"tool_use_id":"toolu_s1","agent_id":"ag-1","agent_type":"general-purpose"`)
	if r.ReasonCode != "INTENT_MISMATCH" {
		t.Errorf("the sub-agent's edit after a read-only request: %s %s %v", r.Decision, r.ReasonCode, r.Reasons)
	}
}

// TestSubAgentSpawnIsANotice: Claude Code and Codex go on from
// SubagentStart whatever the answer, so a spawn the policy asks about (a
// tainted session delegating) is recorded as what happened — no host
// answer, no one owning the ask — and leaves nothing waiting for an
// approver; a sender of AARTS events cannot claim the notice for itself.
func TestSubAgentSpawnIsANotice(t *testing.T) {
	for _, host := range []string{"claude-code", "codex"} {
		t.Run(host, func(t *testing.T) {
			st := openStore(t, t.TempDir())
			defer st.Close()
			e := newEngine(t, decider(t, "coding-agent.json"), st)
			base := `"session_id":"notice-` + host + `","transcript_path":"/t","cwd":"/workspace/shop","model":"m","permission_mode":"default","turn_id":"turn-1"`
			send := hostSender(t, e, host, base)
			send("PreToolUse", `,"tool_name":"WebFetch","tool_input":{"url":"https://docs.example.com/a","prompt":"read"},"tool_use_id":"w1"`)
			send("PostToolUse", `,"tool_name":"WebFetch","tool_input":{"url":"https://docs.example.com/a","prompt":"read"},"tool_use_id":"w1","tool_response":"some page text"`)
			r := send("SubagentStart", `,"agent_id":"ag-1","agent_type":"general-purpose"`)
			if r.Verdict.Decision != aarts.Ask {
				t.Fatalf("the tainted spawn: %s %s, want the ask this test is about", r.Verdict.Decision, r.ReasonCode)
			}
			if r.HostAnswer != aarts.HostAnswerNone || r.AskOwner != "" || r.PendingID != "" {
				t.Errorf("the spawn, which runs whatever the answer: host answer %q, ask owner %q, pending %q; want none, none, none", r.HostAnswer, r.AskOwner, r.PendingID)
			}
			if p := e.Pending(context.Background(), ledger.DefaultTenant); len(p) != 0 {
				t.Errorf("approvals waiting for a spawn that ran: %+v", p)
			}
			if string(r.HostOutput) != "{}" {
				t.Errorf("the host was told %s at a notice", r.HostOutput)
			}
		})
	}
	// An AARTS sender (perhaps the agent itself) cannot mark its own event
	// a notice.
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	r := e.Answer(context.Background(), Request{Body: []byte(`{"aarts_version":"0.1","session_id":"forged","timestamp":"2026-01-01T00:00:00Z","hook_point":"PreToolUse","turn_id":"t1","tool_name":"shell","tool_name_native":"Bash","tool_input":{"command":"ls"},"host_waits":false}`)})
	if r.ReasonCode != ReasonInputRejected || !strings.Contains(strings.Join(r.Reasons, " "), "host_waits") {
		t.Errorf("an event claiming host_waits: %s %s %v, want it rejected naming the member", r.Verdict.Decision, r.ReasonCode, r.Reasons)
	}
}

// TestCodexExplicitAllowGivesNoDecision: Codex takes a PreToolUse allow
// only with the input to run, so an explicit allow without new input
// gives it no decision ({}), and is recorded so (host answer none); its
// PermissionRequest prompt an explicit allow does answer.
func TestCodexExplicitAllowGivesNoDecision(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	d := deciderWith(t, "coding-agent.json", func(m *manifest.Manifest) {
		m.Rules.Allow = append(m.Rules.Allow, "shell(touch *)")
	})
	e := newEngine(t, d, st)
	base := `"session_id":"codex-allow","transcript_path":"/t","cwd":"/workspace/shop","model":"m","permission_mode":"default","turn_id":"turn-1"`
	send := hostSender(t, e, "codex", base)
	r := send("PreToolUse", `,"tool_name":"Bash","tool_input":{"command":"touch a"},"tool_use_id":"c1"`)
	if r.Verdict.Decision != aarts.Allow || r.Verdict.MatchedRuleID == "" || r.HostAnswer != aarts.HostAnswerNone || string(r.HostOutput) != "{}" {
		t.Errorf("an explicit allow at PreToolUse: %s rule %q, host answer %q, output %s; want the allow, host answer none, no decision",
			r.Verdict.Decision, r.Verdict.MatchedRuleID, r.HostAnswer, r.HostOutput)
	}
	r = send("PermissionRequest", `,"tool_name":"Bash","tool_input":{"command":"touch b"},"tool_use_id":"c2"`)
	if r.HostAnswer != aarts.Allow || !strings.Contains(string(r.HostOutput), `"behavior":"allow"`) {
		t.Errorf("an explicit allow at PermissionRequest: host answer %q, output %s; want the prompt answered allow", r.HostAnswer, r.HostOutput)
	}
}

// TestUnreportedCallsCloseAtTurnEnd: a call the host was let run and
// never reported on is named once by the verdict of the turn's end
// (unreported); a result reported later still binds to it.
func TestUnreportedCallsCloseAtTurnEnd(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	base := `"session_id":"unreported","transcript_path":"/t","cwd":"/workspace/shop","permission_mode":"default"`
	send := hostSender(t, e, "claude-code", base)
	call := `,"tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":"u1"`
	opened := send("PreToolUse", call)
	send("PreToolUse", `,"tool_name":"Bash","tool_input":{"command":"go vet ./..."},"tool_use_id":"u2"`)
	send("PostToolUse", `,"tool_name":"Bash","tool_input":{"command":"go vet ./..."},"tool_use_id":"u2","tool_response":"ok"`)
	send("Stop", `,"stop_hook_active":false,"last_assistant_message":"done"`)
	send("Stop", `,"stop_hook_active":false,"last_assistant_message":"done again"`)
	late := send("PostToolUse", call+`,"tool_response":"PASS"`)
	if late.Unbound != "" || late.Verdict.Decision != aarts.Allow {
		t.Errorf("the late result: %s unbound %q, want it bound to its call", late.Verdict.Decision, late.Unbound)
	}
	var named [][]uint64
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "unreported"}) {
		if env.EventType() != ledger.EventVerdict {
			continue
		}
		var v aarts.VerdictRecord
		if err := json.Unmarshal(env.Payload(), &v); err != nil {
			t.Fatal(err)
		}
		if v.HookPoint != "PreOutputDeliver" {
			if len(v.Unreported) != 0 {
				t.Errorf("seq %d (%s) names unreported calls %v", env.Seq(), v.HookPoint, v.Unreported)
			}
			continue
		}
		var seqs []uint64
		for _, c := range v.Unreported {
			seqs = append(seqs, c.EventSeq)
			if c.VerdictSeq != c.EventSeq+1 || c.VerdictHash == "" {
				t.Errorf("unreported %+v does not name the call's verdict", c)
			}
		}
		named = append(named, seqs)
	}
	if len(named) != 2 || !slices.Equal(named[0], []uint64{opened.Seq}) || len(named[1]) != 0 {
		t.Errorf("unreported calls named at the two turn ends: %v, want [[%d] []]", named, opened.Seq)
	}
}

// hostSender sends host's native events to e, each the object base (its
// members, without braces) with hook_event_name event and extra members;
// an input rejected or an engine failure fails t.
func hostSender(t *testing.T, e *Engine, host, base string) func(event, extra string) HookResponse {
	return func(event, extra string) HookResponse {
		t.Helper()
		r := e.Answer(context.Background(), Request{Host: host, Body: []byte(`{` + base + `,"hook_event_name":"` + event + `"` + extra + `}`)})
		if r.ReasonCode == ReasonInputRejected || r.ReasonCode == ReasonEngineFailure {
			t.Fatalf("%s %s: %s %v", event, extra, r.ReasonCode, r.Reasons)
		}
		return r
	}
}
