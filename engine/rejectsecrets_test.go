package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/seal"
)

// TestRejectionKeepsNoSecret (issue 23, the first surface): a rejected
// input's record keeps an excerpt and the defect for good, so neither may
// hold a secret — not one hidden by a JSON escape (\/, \u0040), not part
// of one cut at the excerpt's end, not one the defect quotes back.
func TestRejectionKeepsNoSecret(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	ghp := "ghp_" + "0123456789abcdefghijABCDEFGHIJ0123456789"
	slack := "xoxb-" + "123456789012-abcdefghijklmnop"
	aws := "wJalrXUtnFEMI" + "/K7MDENG/bPxRfiCYEXAMPLEKEY"
	secrets := []string{ghp, slack, aws, "hunter2-secret-pw", "dev@example.com"}
	pad := strings.Repeat("x", 200) // puts the AWS key across the excerpt's end
	inputs := map[string]string{
		// a duplicate member: rejected, the excerpt is the input's start
		"escaped": `{"session_id":"rej","hook_point":"PreToolUse","x":"` + pad + `","k":"aws_secret_access_key=` + aws + `","m":"dev\u0040example.com","u":"https:\/\/me:hunter2-secret-pw@db.example\/x","t":"` + ghp + `","s":"` + slack + `","k":1,"k":2}`,
		// a value the defect quotes back: an invalid host_id
		"defect": `{"hook_point":"PreToolUse","session_id":"rej","timestamp":"2026-11-25T10:00:00Z","host_id":"` + ghp + `","aarts_version":"0.1","turn_id":"t","tool_name":"shell","tool_input":{"command":"ls"},"artifacts":[]}`,
	}
	for name, in := range inputs {
		r := e.Answer(context.Background(), Request{Body: []byte(in)})
		if r.ReasonCode != ReasonInputRejected {
			t.Fatalf("%s: %s %s, want a rejection", name, r.Decision, r.ReasonCode)
		}
		answer, _ := json.Marshal(r)
		for _, s := range secrets {
			if strings.Contains(string(answer), s) {
				t.Errorf("%s: the answer holds %q: %s", name, s, answer)
			}
		}
	}
	var n int
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "rej"}) {
		if env.EventType() != ledger.EventRejected {
			continue
		}
		n++
		var rej Rejection
		if err := json.Unmarshal(env.Payload(), &rej); err != nil {
			t.Fatal(err)
		}
		text := rej.Defect + "\n" + rej.Excerpt
		for _, s := range append(secrets, aws[:12], ghp[:20]) {
			if strings.Contains(text, s) {
				t.Errorf("the recorded rejection holds %q:\n%s", s, text)
			}
		}
		if rej.Excerpt == "" || len(rej.Excerpt) > excerptBytes {
			t.Errorf("excerpt of %d bytes", len(rej.Excerpt))
		}
	}
	if n != 2 {
		t.Fatalf("%d rejections recorded in rej, want 2", n)
	}
}

// TestSealedInputIsValidatedAsSent (issue 23): an event that carries a
// secret is validated as the host sent it, before the sealer re-encodes
// it — a duplicate member or a lone surrogate is rejected as it is in an
// event without one — and a sender's own "$sealed" object is refused.
func TestSealedInputIsValidatedAsSent(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	d := decider(t, "coding-agent.json")
	keys, err := seal.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d.Sealer = &seal.Sealer{Keys: keys, Policy: seal.PolicyOf(d.Policy.Manifest())}
	e := newEngine(t, d, st)
	ghp := "ghp_" + "0123456789abcdefghijABCDEFGHIJ0123456789"
	ev := func(turn, input string) string {
		return `{"hook_point":"PreToolUse","session_id":"valid","timestamp":"2026-11-25T10:00:00Z","host_id":"my-agent","aarts_version":"0.1","turn_id":"` + turn +
			`","tool_name":"shell","tool_name_native":"Bash","artifacts":[],"tool_input":` + input + `}`
	}
	for _, c := range []struct{ name, body string }{
		{"duplicate member", ev("t1", `{"command":"git push https://x:`+ghp+`@github.com/a/b","command":"ls"}`)},
		{"lone surrogate", ev("t2", `{"command":"echo \ud800 `+ghp+`"}`)},
		{"planted sealed value", ev("t3", `{"command":{"$sealed":{"v":1,"kind":"github_token","kid":"00000000000000000000000000000000-0000000000000000","alg":"AES-256-GCM","nonce":"AAAAAAAAAAAAAAAA","ct":"AAAA"}}}`)},
	} {
		r := e.Answer(context.Background(), Request{Body: []byte(c.body)})
		if r.ReasonCode != ReasonInputRejected || r.Decision != "deny" {
			t.Errorf("%s: %s %s %v, want a rejection", c.name, r.Decision, r.ReasonCode, r.Reasons)
		}
	}
	if r := e.Answer(context.Background(), Request{Body: []byte(ev("t4", `{"command":"git push https://x:`+ghp+`@github.com/a/b"}`))}); r.ReasonCode == ReasonInputRejected {
		t.Fatalf("a valid event with a secret: %+v", r)
	}
	var sealed, rejected int
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "valid"}) {
		if strings.Contains(string(env.Payload()), ghp) {
			t.Errorf("seq %d holds the token: %s", env.Seq(), env.Payload())
		}
		if env.EventType() == ledger.EventRejected {
			rejected++
		}
		if seal.Has(env.Payload()) && env.EventType() == "PreToolUse" {
			sealed++
		}
	}
	if rejected != 3 || sealed != 1 {
		t.Errorf("%d rejections and %d sealed events recorded, want 3 and 1", rejected, sealed)
	}
}

// TestShreddedSessionGoesOn (issue 23): a live session whose keys are
// shredded goes on recording under a fresh key — in the running engine
// and in one started afterwards (which rebuilds the session from the
// record, its shredded values as recorded) — and nothing is left owed to
// the ledger.
func TestShreddedSessionGoesOn(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	defer st.Close()
	keyDir := t.TempDir()
	sealed := func() *decide.Decider {
		d := decider(t, "coding-agent.json")
		keys, err := seal.OpenFileStore(keyDir)
		if err != nil {
			t.Fatal(err)
		}
		d.Sealer = &seal.Sealer{Keys: keys, Policy: seal.PolicyOf(d.Policy.Manifest())}
		return d
	}
	ghp := "ghp_" + "0123456789abcdefghijABCDEFGHIJ0123456789"
	ev := func(i int) []byte {
		return []byte(fmt.Sprintf(`{"hook_point":"PreToolUse","session_id":"shred-live","timestamp":"2026-11-25T10:00:%02dZ","host_id":"my-agent","aarts_version":"0.1","turn_id":"t%d",`+
			`"tool_name":"shell","tool_name_native":"Bash","artifacts":[],"tool_input":{"command":"git fetch https://x:%s@github.com/a/b"}}`, i, i, ghp))
	}
	spool := t.TempDir()
	d := sealed()
	e := newEngine(t, d, st, WithSpool(spool))
	for i := range 2 {
		if r := e.Answer(context.Background(), Request{Body: ev(i)}); r.ReasonCode == ReasonEngineFailure || r.ReasonCode == ReasonInputRejected {
			t.Fatalf("event %d: %+v", i, r)
		}
	}
	if kids, err := d.Sealer.Keys.Shred(seal.Scope{Tenant: ledger.DefaultTenant, Session: "shred-live"}); err != nil || len(kids) != 1 {
		t.Fatalf("shred: %v %v", kids, err)
	}
	if r := e.Answer(context.Background(), Request{Body: ev(2)}); r.ReasonCode == ReasonEngineFailure {
		t.Fatalf("after the shred, the running engine: %+v", r)
	}
	e2 := newEngine(t, sealed(), st, WithSpool(spool))
	if r := e2.Answer(context.Background(), Request{Body: ev(3)}); r.ReasonCode == ReasonEngineFailure {
		t.Fatalf("after the shred, a restarted engine: %+v", r)
	}
	kids := map[string]bool{}
	var events int
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "shred-live"}) {
		if env.EventType() == ledger.EventEngineFailure {
			t.Errorf("seq %d: an engine failure: %s", env.Seq(), env.Payload())
		}
		if env.EventType() == "PreToolUse" {
			events++
			for _, r := range seal.Refs(env.Payload()) {
				kids[r.Kid] = true
			}
		}
	}
	if events != 4 || len(kids) != 2 {
		t.Errorf("%d events under %d keys, want 4 under 2 (the shredded one and a fresh one)", events, len(kids))
	}
	if entries, _ := os.ReadDir(spool); len(entries) != 0 {
		t.Errorf("%d records left in the spool", len(entries))
	}
}

// TestShredDropsWhatTheEngineHolds (issue 23): a request the manifest
// seals whole is never shown in the clear by the snapshot API, and once
// the session's key is shredded (by another process, as ledger shred
// does) the running engine no longer holds it: the session is rebuilt from
// the ledger, where the value is shredded.
func TestShredDropsWhatTheEngineHolds(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	keyDir := t.TempDir()
	d := decider(t, "coding-agent.json")
	keys, err := seal.OpenFileStore(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	p := seal.PolicyOf(d.Policy.Manifest())
	p.Fields = map[string][]string{"*": {"raw_input"}}
	d.Sealer = &seal.Sealer{Keys: keys, Policy: p}
	e := newEngine(t, d, st)
	secret := "ship it with passphrase tango-foxtrot-42"
	body := `{"hook_point":"PreUserInput","session_id":"held","timestamp":"2026-11-25T10:00:00Z","host_id":"my-agent","aarts_version":"0.1","turn_id":"u1","raw_input":"` + secret + `"}`
	if r := e.Answer(context.Background(), Request{Body: []byte(body)}); r.ReasonCode == ReasonEngineFailure || r.ReasonCode == ReasonInputRejected {
		t.Fatalf("prompt: %+v", r)
	}
	k := ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "held"}
	s, err := e.Snapshot(context.Background(), k)
	if err != nil || s.Snapshot.OriginalRequest != secret {
		t.Fatalf("the engine judged %q (%v), want the plaintext", s.Snapshot.OriginalRequest, err)
	}
	shown, err := e.ShownSnapshot(s.Snapshot)
	if err != nil || strings.Contains(string(shown), "tango-foxtrot") || !strings.Contains(string(shown), "‹sealed: field:raw_input›") {
		t.Fatalf("snapshot API: %v %s", err, shown)
	}
	// ledger shred, in another process: its own key store on the directory.
	other, _ := seal.OpenFileStore(keyDir)
	if kids, err := other.Shred(seal.Scope{Tenant: k.Tenant, Session: k.Session}); err != nil || len(kids) != 1 {
		t.Fatalf("shred: %v %v", kids, err)
	}
	s, err = e.Snapshot(context.Background(), k)
	if err != nil || strings.Contains(s.Snapshot.OriginalRequest, "tango-foxtrot") {
		t.Fatalf("after the shred the engine still holds %q (%v)", s.Snapshot.OriginalRequest, err)
	}
}
