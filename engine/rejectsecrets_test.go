package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
