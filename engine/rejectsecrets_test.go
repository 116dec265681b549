package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/ledger"
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
