package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/policy"
)

// ccHook is a Claude Code hook input of session s.
func ccHook(s, event, extra string) []byte {
	return []byte(`{"session_id":"` + s + `","transcript_path":"/home/dev/.claude/projects/shop/t.jsonl","cwd":"/workspace/shop",` +
		`"permission_mode":"default","hook_event_name":"` + event + `"` + extra + `}`)
}

func defaultEngine(t *testing.T, opts ...Option) (*Engine, *store.Store) {
	t.Helper()
	st := openStore(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	p, err := policy.Load(context.Background(), "", policy.DefaultManifest())
	if err != nil {
		t.Fatal(err)
	}
	return newEngine(t, decide.NewDecider(p), st, opts...), st
}

func readSession(t *testing.T, st *store.Store, k ledger.SessionKey) []*ledger.Envelope {
	t.Helper()
	var out []*ledger.Envelope
	err := st.ReadSession(context.Background(), k, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		out = append(out, e)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHostResolvedAsks: Claude Code resolves an ask in its own prompt. The
// engine records what the host did (a PostToolUse of the asked call: a
// Resolution approved by the host), never a timeout that contradicts the
// record, and asks the host resolves never pile up into DEFERRALS_EXCEEDED.
func TestHostResolvedAsks(t *testing.T) {
	e, st := defaultEngine(t, WithPendingTimeout(50*time.Millisecond))
	ctx := context.Background()
	const s = "host-asks"
	ask := func(i int) HookResponse {
		return e.Answer(ctx, Request{Host: "claude-code", Body: ccHook(s, "PreToolUse",
			fmt.Sprintf(`,"tool_name":"Bash","tool_input":{"command":"git push origin feature-%d"},"tool_use_id":"toolu_%d"`, i, i))})
	}
	r := ask(1)
	if r.Decision != aarts.Ask || r.HostAnswer != aarts.Ask || r.PendingID != "" {
		t.Fatalf("first ask: %+v, want an ask the host resolves (no pending id)", r)
	}
	// The user approved in Claude Code's prompt: the call ran.
	post := e.Answer(ctx, Request{Host: "claude-code", Body: ccHook(s, "PostToolUse",
		`,"tool_name":"Bash","tool_input":{"command":"git push origin feature-1"},"tool_response":{"stdout":"ok"},"tool_use_id":"toolu_1"`)})
	if post.ReasonCode == ReasonEngineFailure || post.ReasonCode == ReasonInputRejected {
		t.Fatalf("post: %+v", post)
	}
	// Three more asks in a row, with the pending timeout long past: each
	// is still an ask. The user denies the second in Claude Code's prompt.
	for i := 2; i <= 4; i++ {
		time.Sleep(60 * time.Millisecond)
		if r := ask(i); r.Decision != aarts.Ask {
			t.Fatalf("ask %d: %s %s %v, want ask", i, r.Decision, r.ReasonCode, r.Reasons)
		}
		if i == 2 {
			r := e.Answer(ctx, Request{Host: "claude-code", Body: ccHook(s, "PermissionDenied",
				`,"tool_name":"Bash","tool_input":{"command":"git push origin feature-2"},"tool_use_id":"toolu_2","reason":"user rejected"`)})
			if string(r.HostOutput) != "{}" {
				t.Fatalf("PermissionDenied answered %s, want {}", r.HostOutput)
			}
		}
	}
	time.Sleep(100 * time.Millisecond)
	var resolutions []aarts.ResolutionRecord
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: s}) {
		if env.EventType() != ledger.EventResolution {
			continue
		}
		var r aarts.ResolutionRecord
		if err := json.Unmarshal(env.Payload(), &r); err != nil {
			t.Fatal(err)
		}
		resolutions = append(resolutions, r)
	}
	if len(resolutions) != 2 || resolutions[0].Resolution != "approved" || resolutions[0].Source != "host" || resolutions[0].ForSeq != 0 ||
		resolutions[1].Resolution != "denied" || resolutions[1].Source != "host" {
		t.Fatalf("resolutions recorded: %+v, want approved by the host for seq 0, then denied by the host (and no timeout)", resolutions)
	}
	snap, err := e.Snapshot(ctx, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: s})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Snapshot.Pending) != 0 || len(snap.Snapshot.HostAsks) != 2 {
		t.Fatalf("pending %v, host asks %v: want none pending and 2 host asks open", snap.Snapshot.Pending, snap.Snapshot.HostAsks)
	}
}

// TestEngineClock: envelopes carry the engine's receive time, never the
// client's, and never run backwards within a session, even when the
// machine's clock does; the host's timestamp stays in the payload.
func TestEngineClock(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	e, st := defaultEngine(t, WithClock(func() time.Time { return now }))
	ctx := context.Background()
	ev := func(ts string, i int) []byte {
		return []byte(fmt.Sprintf(`{"hook_point":"PreToolUse","session_id":"clock","timestamp":%q,"host_id":"my-agent","aarts_version":"0.1","turn_id":"t%d","tool_name":"shell","tool_name_native":"exec","artifacts":[],"tool_input":{"command":"ls %d"}}`, ts, i, i))
	}
	for i, c := range []struct {
		client string
		clock  time.Time
	}{
		{"2099-01-01T00:00:00Z", now},
		{"1970-01-01T00:00:00Z", now.Add(time.Second)},
		{"2026-11-23T10:00:00Z", now.Add(-time.Hour)}, // the machine's clock stepped back
	} {
		now = c.clock
		if r := e.Answer(ctx, Request{Body: ev(c.client, i)}); r.ReasonCode == ReasonEngineFailure || r.ReasonCode == ReasonInputRejected {
			t.Fatalf("event %d: %+v", i, r)
		}
	}
	var last int64
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "clock"}) {
		if env.TsUnixMs() < last {
			t.Fatalf("seq %d: ts %d before the previous %d", env.Seq(), env.TsUnixMs(), last)
		}
		last = env.TsUnixMs()
		if y := time.UnixMilli(env.TsUnixMs()).UTC().Year(); y != 2026 {
			t.Fatalf("seq %d: ts in %d, want the engine's clock (2026)", env.Seq(), y)
		}
		if env.Seq() == 2 {
			var p struct{ Timestamp string }
			json.Unmarshal(env.Payload(), &p)
			if p.Timestamp != "1970-01-01T00:00:00Z" {
				t.Fatalf("the host's timestamp is not kept in the payload: %s", env.Payload())
			}
		}
	}
	if want := now.Add(time.Hour).Add(time.Second).UnixMilli(); last != want {
		t.Fatalf("last ts %d, want %d (the previous envelope's, since the clock stepped back)", last, want)
	}
}

// TestContendedSessionNeverFails: two engines (two store clients of one
// JetStream server, as two engine processes would be) answer 400 benign
// requests each on one session, concurrently, from two clients each that
// pause a moment between calls as agents do (a writer that never pauses
// wins every race for the head, and the other waits until it is done).
// Contention for the session's head is retried, never answered as
// ENGINE_FAILURE, and every event is recorded with its verdict.
func TestContendedSessionNeverFails(t *testing.T) {
	ctx := context.Background()
	srv, err := store.Open(ctx, store.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Sync: store.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := policy.Load(ctx, "", policy.DefaultManifest())
	if err != nil {
		t.Fatal(err)
	}
	const perEngine, workers = 400, 2
	var failures, answered atomic.Int64
	var wg sync.WaitGroup
	for en := range 2 {
		c, err := store.Open(ctx, store.Config{URL: srv.ClientURL()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		e := newEngine(t, decide.NewDecider(p), c)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < perEngine; i += workers {
					body := fmt.Sprintf(`{"hook_point":"PreToolUse","session_id":"contended","timestamp":"2026-11-23T10:00:00Z","host_id":"my-agent","aarts_version":"0.1","turn_id":"e%d-%d","tool_name":"shell","tool_name_native":"exec","artifacts":[],"tool_input":{"command":"ls -la src/e%d/f%d"}}`, en, i, en, i)
					// An ample deadline: what is tested is that contention is
					// retried, not how fast a loaded machine answers.
					rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					r := e.Answer(rctx, Request{Body: []byte(body)})
					cancel()
					time.Sleep(time.Duration(1+i%4) * time.Millisecond)
					answered.Add(1)
					if r.ReasonCode == ReasonEngineFailure || r.ReasonCode == ReasonInputRejected {
						failures.Add(1)
						t.Errorf("engine %d request %d: %s %v", en, i, r.ReasonCode, r.Reasons)
					}
				}
			}()
		}
	}
	wg.Wait()
	if failures.Load() != 0 || answered.Load() != 2*perEngine {
		t.Fatalf("%d of %d answers were failures", failures.Load(), answered.Load())
	}
	envs := readSession(t, srv, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "contended"})
	if len(envs) != 4*perEngine {
		t.Fatalf("%d envelopes, want %d (each event and its verdict)", len(envs), 4*perEngine)
	}
	for i := 0; i < len(envs); i += 2 {
		if envs[i].EventType() != "PreToolUse" || envs[i+1].EventType() != ledger.EventVerdict {
			t.Fatalf("seq %d: %s then %s, want an event and its verdict", i, envs[i].EventType(), envs[i+1].EventType())
		}
	}
	if n := checkChains(t, srv); n != 2*perEngine {
		t.Fatalf("%d events in verified chains, want %d", n, 2*perEngine)
	}
}

// TestLongClaudeCodeSession is a working day's session through the Claude
// Code adapter with the built-in manifest: 300 tool calls over two hours
// of engine time, using the host's own workflow tools. None of those is
// denied, and no budget stops the session.
func TestLongClaudeCodeSession(t *testing.T) {
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	e, _ := defaultEngine(t, WithClock(func() time.Time { return now }))
	ctx := context.Background()
	calls := []struct{ tool, input string }{
		{"TodoWrite", `{"todos":[{"content":"fix the checkout total","status":"in_progress","activeForm":"Fixing the checkout total"}]}`},
		{"Read", `{"file_path":"/workspace/shop/checkout/total.go"}`},
		{"Grep", `{"pattern":"discount","path":"/workspace/shop"}`},
		{"Edit", `{"file_path":"/workspace/shop/checkout/total.go","old_string":"a","new_string":"b"}`},
		{"Bash", `{"command":"go test ./checkout/...","run_in_background":true}`},
		{"BashOutput", `{"bash_id":"bash_1"}`},
		{"AskUserQuestion", `{"questions":[{"question":"Keep the old rounding?","header":"Rounding","options":[{"label":"Yes","description":"keep"},{"label":"No","description":"drop"}],"multiSelect":false}]}`},
		{"ExitPlanMode", `{"plan":"1. fix total 2. add test"}`},
		{"EnterPlanMode", `{}`},
		{"Write", `{"file_path":"/workspace/shop/checkout/total_test.go","content":"package checkout\n"}`},
		{"KillShell", `{"shell_id":"bash_1"}`},
		{"Skill", `{"command":"pdf"}`},
		{"SlashCommand", `{"command":"/review"}`},
		{"ListMcpResourcesTool", `{}`},
		{"ReadMcpResourceTool", `{"server":"docs","uri":"docs://checkout"}`},
		{"NotebookRead", `{"notebook_path":"/workspace/shop/analysis.ipynb"}`},
		{"Glob", `{"pattern":"**/*.go"}`},
		{"Bash", `{"command":"git status"}`},
	}
	workflow := map[string]bool{"TodoWrite": true, "ExitPlanMode": true, "EnterPlanMode": true, "AskUserQuestion": true, "BashOutput": true,
		"KillShell": true, "Skill": true, "SlashCommand": true, "ListMcpResourcesTool": true, "ReadMcpResourceTool": true, "NotebookRead": true}
	const s, n = "long-day", 300
	e.Answer(ctx, Request{Host: "claude-code", Body: ccHook(s, "SessionStart", `,"source":"startup","model":"claude-sonnet-4-5"`)})
	for i := range n {
		now = now.Add(2 * time.Hour / n)
		c := calls[i%len(calls)]
		input := strings.Replace(c.input, "total", fmt.Sprintf("total%d", i), 1)
		r := e.Answer(ctx, Request{Host: "claude-code", Body: ccHook(s, "PreToolUse",
			fmt.Sprintf(`,"tool_name":%q,"tool_input":%s,"tool_use_id":"toolu_%d"`, c.tool, input, i))})
		if r.ReasonCode == "BUDGET_EXCEEDED" || r.ReasonCode == ReasonEngineFailure || r.ReasonCode == ReasonInputRejected ||
			workflow[c.tool] && r.Decision != aarts.Allow {
			t.Fatalf("call %d (%s): %s %s %v", i, c.tool, r.Decision, r.ReasonCode, r.Reasons)
		}
		post := e.Answer(ctx, Request{Host: "claude-code", Body: ccHook(s, "PostToolUse",
			fmt.Sprintf(`,"tool_name":%q,"tool_input":%s,"tool_response":{"ok":true},"tool_use_id":"toolu_%d"`, c.tool, input, i))})
		if post.Decision != aarts.Allow {
			t.Fatalf("call %d (%s) result: %s %s %v", i, c.tool, post.Decision, post.ReasonCode, post.Reasons)
		}
	}
	snap, err := e.Snapshot(ctx, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: s})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Snapshot.ToolCallsConsumed != n || snap.Snapshot.WallTimeMs < (2*time.Hour).Milliseconds() {
		t.Fatalf("tool calls %d, wall time %d ms: want %d calls over two hours", snap.Snapshot.ToolCallsConsumed, snap.Snapshot.WallTimeMs, n)
	}
}

// TestPostAskResolutionClosesThePendingAsk: an AARTS host that resolves
// asks itself (its deployment says it prompts: Request.Prompts, from its
// token) and reports them with PostAskResolution never runs into
// DEFERRALS_EXCEEDED, and nothing it approved is later recorded as a
// timeout. Without that word, the same resolution is rejected: the ask
// waits for an approver.
func TestPostAskResolutionClosesThePendingAsk(t *testing.T) {
	e, st := defaultEngine(t, WithPendingTimeout(30*time.Millisecond))
	ctx := context.Background()
	ev := func(hook string, i int, extra string) []byte {
		return []byte(fmt.Sprintf(`{"hook_point":%q,"session_id":"asks","timestamp":"2026-11-23T10:00:00Z","host_id":"my-agent","aarts_version":"0.1","turn_id":"t%d"%s}`, hook, i, extra))
	}
	for i := range 5 {
		tool := fmt.Sprintf(`,"tool_name":"shell","tool_name_native":"exec","artifacts":[],"tool_input":{"command":"git push origin f%d"}`, i)
		r := e.Answer(ctx, Request{Body: ev("PreToolUse", i, tool), Prompts: true})
		if r.Decision != aarts.Ask || r.AskOwner != aarts.AskOwnerHost {
			t.Fatalf("round %d: %s %s %v owner %q, want an ask of the host's prompt", i, r.Decision, r.ReasonCode, r.Reasons, r.AskOwner)
		}
		resolution := ev("PostAskResolution", i, fmt.Sprintf(`,"original_hook_point":"PreToolUse","original_verdict":{"decision":"ask","category":%q,"severity":%q,"source":%q,"matched_rule_id":%q},"resolution":"approved"`,
			r.Category, r.Severity, r.Source, r.MatchedRuleID))
		res := e.Answer(ctx, Request{Body: resolution, Prompts: true})
		if res.ReasonCode == ReasonInputRejected || res.ReasonCode == ReasonEngineFailure {
			t.Fatalf("round %d resolution: %+v", i, res)
		}
		if post := e.Answer(ctx, Request{Body: ev("PostToolUse", i, tool+`,"tool_result":"ok"`), Prompts: true}); post.Decision != aarts.Allow {
			t.Fatalf("round %d result: %+v", i, post)
		}
		time.Sleep(40 * time.Millisecond) // past the pending timeout
	}
	time.Sleep(100 * time.Millisecond)
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "asks"}) {
		if env.EventType() == ledger.EventResolution && strings.Contains(string(env.Payload()), `"timeout"`) {
			t.Fatalf("seq %d: a timeout recorded for an ask the host resolved: %s", env.Seq(), env.Payload())
		}
	}

	// The same host without its deployment's word: the ask is the
	// approver's, and the host's resolution of it is rejected — answered
	// as rejected, with the seq of its Rejected record.
	e2, st2 := defaultEngine(t)
	other := func(hook string, extra string) []byte {
		return []byte(strings.Replace(string(ev(hook, 0, extra)), `"session_id":"asks"`, `"session_id":"asks-api"`, 1))
	}
	r := e2.Answer(ctx, Request{Body: other("PreToolUse", `,"tool_name":"shell","tool_name_native":"exec","artifacts":[],"tool_input":{"command":"git push origin f0"}`)})
	if r.Decision != aarts.Ask || r.AskOwner != aarts.AskOwnerApprover || r.PendingID == "" {
		t.Fatalf("an AARTS sender's ask: %s owner %q pending %q, want an approver's ask", r.Decision, r.AskOwner, r.PendingID)
	}
	res := e2.Answer(ctx, Request{Body: other("PostAskResolution", `,"original_hook_point":"PreToolUse","original_verdict":{"decision":"ask","category":"tool_execution","severity":"warning","source":"pattern_match"},"resolution":"allow_always"`)})
	recs := readSession(t, st2, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "asks-api"})
	if res.ReasonCode != ReasonInputRejected || res.Decision != aarts.Deny || !res.Rejected || res.Seq == 0 ||
		int(res.Seq) >= len(recs) || recs[res.Seq].EventType() != ledger.EventRejected {
		t.Fatalf("an AARTS sender's resolution of an approver's ask: %s %s rejected %v seq %d, want deny INPUT_REJECTED at the seq of its Rejected record", res.Decision, res.ReasonCode, res.Rejected, res.Seq)
	}
	if st, err := e2.WaitPending(ctx, ledger.DefaultTenant, r.PendingID, 0); err != nil || st.Status != "open" {
		t.Fatalf("the approver's ask after the host's resolution: %+v %v, want still open", st, err)
	}
}
