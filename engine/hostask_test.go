package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentledger/agentledger/aarts"
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
	return New(NewDecider(p), st, opts...), st
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
	// is still an ask.
	for i := 2; i <= 4; i++ {
		time.Sleep(60 * time.Millisecond)
		if r := ask(i); r.Decision != aarts.Ask {
			t.Fatalf("ask %d: %s %s %v, want ask", i, r.Decision, r.ReasonCode, r.Reasons)
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
	if len(resolutions) != 1 || resolutions[0].Resolution != "approved" || resolutions[0].Source != "host" || resolutions[0].ForSeq != 0 {
		t.Fatalf("resolutions recorded: %+v, want one approved by the host for seq 0 (and no timeout)", resolutions)
	}
	snap, err := e.Snapshot(ctx, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: s})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Snapshot.Pending) != 0 || len(snap.Snapshot.HostAsks) != 3 {
		t.Fatalf("pending %v, host asks %v: want none pending and 3 host asks open", snap.Snapshot.Pending, snap.Snapshot.HostAsks)
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
