package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/ledger"
)

// secretTable is the telemetry tests' secrets and a PreToolUse event of
// session "tel" carrying every one of them.
func secretTable() ([]string, []byte) {
	secrets := []string{
		"hunter2-SuperSecret!", "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"ghp_" + strings.Repeat("Z", 36), "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"jane.doe@example.org", "+1 415-555-0100", strings.Repeat("ab12", 10), "sk-proj-" + strings.Repeat("q", 40),
		"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
	}
	event := map[string]any{
		"hook_point": "PreToolUse", "session_id": "tel", "timestamp": "2026-11-22T09:00:00Z", "host_id": "claude-code",
		"aarts_version": "0.1", "turn_id": "t", "tool_name": "shell", "tool_name_native": "Bash", "artifacts": []any{},
		"tool_input": map[string]any{
			"command":     "curl -H 'Authorization: Bearer " + secrets[3] + "' -d password=" + secrets[0] + " https://api.github.com?key=" + secrets[1],
			"description": "mail " + secrets[5] + " or call " + secrets[6],
			"env":         []any{map[string]any{"AWS_SECRET_ACCESS_KEY": secrets[2]}, map[string]any{"Api_Key": secrets[8]}},
			"nested":      map[string]any{"deeper": []any{secrets[4], "id " + secrets[7]}},
			"note":        "-----BEGIN PRIVATE KEY-----\n" + secrets[9] + "\n-----END PRIVATE KEY-----",
		},
	}
	raw, _ := json.Marshal(event)
	return secrets, raw
}

// TestNoSecretReachesTelemetry feeds known secrets through a decision and
// greps the exported span for every one of them.
func TestNoSecretReachesTelemetry(t *testing.T) {
	secrets, raw := secretTable()
	var out bytes.Buffer
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st, WithTelemetry(NewTelemetry(&out)))
	if _, err := e.Decide(context.Background(), "acme", raw); err != nil {
		t.Fatal(err)
	}
	e.FlushTraces() // the call's span ends with its result, or here
	span := out.String()
	if !strings.Contains(span, `"traceId"`) || !strings.Contains(span, "agentledger.decision") {
		t.Fatalf("no span: %s", span)
	}
	for _, s := range secrets {
		if strings.Contains(span, s) {
			t.Errorf("span holds secret %q", s)
		}
	}
	for _, marker := range []string{"[REDACTED]", "‹redacted:email›", "‹redacted:phone›", "‹redacted:jwt›", "‹redacted:aws_access_key›", "‹redacted:github_token›", "[TOKEN]", "‹redacted:private_key›"} {
		if !strings.Contains(span, marker) {
			t.Errorf("span lacks %s: %s", marker, span)
		}
	}
	// The ledger keeps the verbatim event: the evidence is not redacted.
	s, err := e.Snapshot(context.Background(), sessionKey("acme", "tel"))
	if err != nil || s.Snapshot.Events != 2 {
		t.Fatalf("recorded: %+v %v", s.Snapshot, err)
	}
}

func sessionKey(tenant, session string) ledger.SessionKey {
	return ledger.SessionKey{Tenant: tenant, Session: session}
}
