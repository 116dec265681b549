package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/ledger"
)

// bareKey is an AWS secret access key with no name beside it (random, not
// a live credential).
const bareKey = "JtL6KKKYEoTpPfNinZZqR5PqNg0zN4UEFuTSGti3"

// keepsRunOf returns the longest run of secret's characters, 16 or more,
// that text holds in the clear ("" when none).
func keepsRunOf(text, secret string) string {
	for n := len(secret); n >= 16; n-- {
		for i := 0; i+n <= len(secret); i++ {
			if strings.Contains(text, secret[i:i+n]) {
				return secret[i : i+n]
			}
		}
	}
	return ""
}

// TestRejectionKeepsNoBareSecret (issue 37): a bare AWS secret key in a
// rejected input is redacted before the excerpt is cut, wherever the cut
// falls — no 16-character run of it is left, in the excerpt, the defect,
// the answer or the recorded Rejected envelope.
func TestRejectionKeepsNoBareSecret(t *testing.T) {
	for at := excerptBytes - 45; at <= excerptBytes+5; at += 5 {
		pad := strings.Repeat("y ", at)[:at-len(`{"x":"`)-1] + " " // words, so the key stands alone
		in := `{"x":"` + pad + bareKey + `","k":1,"k":2}`
		if i := strings.Index(in, bareKey); i != at {
			t.Fatalf("the key is at %d, want %d", i, at)
		}
		for _, body := range []string{in, strings.Replace(in, bareKey, `\u004a`+bareKey[1:], 1)} {
			rej := newRejection([]byte(body), "", 0, false, "duplicate member k in "+body)
			if run := keepsRunOf(rej.Excerpt+"\n"+rej.Defect, bareKey); run != "" {
				t.Errorf("key at byte %d: the rejection keeps %q:\nexcerpt %q\ndefect %q", at, run, rej.Excerpt, rej.Defect)
			}
		}
	}

	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	inputs := []string{
		// a duplicate member, the key across the excerpt's end
		`{"session_id":"rej","hook_point":"PreToolUse","x":"` + strings.Repeat("x", 200) + `","o":"` + bareKey + `","k":1,"k":2}`,
		// a value the defect quotes back: an invalid host_id
		`{"hook_point":"PreToolUse","session_id":"rej","timestamp":"2026-12-02T10:00:00Z","host_id":"` + bareKey + `","aarts_version":"0.1","turn_id":"t","tool_name":"shell","tool_input":{"command":"ls"},"artifacts":[]}`,
	}
	for _, in := range inputs {
		r := e.Answer(context.Background(), Request{Body: []byte(in)})
		if r.ReasonCode != ReasonInputRejected {
			t.Fatalf("%s %s, want a rejection", r.Decision, r.ReasonCode)
		}
		answer, _ := json.Marshal(r)
		if run := keepsRunOf(string(answer), bareKey); run != "" {
			t.Errorf("the answer keeps %q: %s", run, answer)
		}
	}
	n := 0
	for _, env := range readSession(t, st, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "rej"}) {
		if env.EventType() != ledger.EventRejected {
			continue
		}
		n++
		if run := keepsRunOf(string(env.Payload()), bareKey); run != "" {
			t.Errorf("the recorded rejection keeps %q: %s", run, env.Payload())
		}
	}
	if n != len(inputs) {
		t.Fatalf("%d rejections recorded, want %d", n, len(inputs))
	}
}
