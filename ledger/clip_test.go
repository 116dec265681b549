package ledger

import (
	"strings"
	"testing"
)

// TestClipKeepsNoPartOfASecret (issue 37): an error quoting the start of
// a value redacts it before cutting, so no part of a secret (here a bare
// AWS secret key, which a 40-byte cut would leave at 38 characters, past
// every detector) is quoted.
func TestClipKeepsNoPartOfASecret(t *testing.T) {
	const key = "JtL6KKKYEoTpPfNinZZqR5PqNg0zN4UEFuTSGti3"
	for _, v := range []string{`["` + key + `"]`, `{"k":"` + key + `"}`, `["ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"]`} {
		got := clip([]byte(v))
		if strings.Contains(got, key[:16]) || strings.Contains(got, "ghp_0123456789") || len(got) > clipBytes+len("…") {
			t.Errorf("clip(%s) = %q", v, got)
		}
	}
	if got := clip([]byte(`"` + strings.Repeat("é", 30) + `"`)); !strings.HasSuffix(got, "é…") {
		t.Errorf("clip cuts a character in two: %q", got)
	}
	_, err := Decode([]byte(`{"event_type":"PreToolUse","hash":"00","payload":{},"prev_hash":null,"seq":1,"session_id":["`+key+`"],"tenant_id":"t","ts_unix_ms":1,"v":1}`), Limits{})
	if err == nil || strings.Contains(err.Error(), key[:16]) {
		t.Errorf("Decode: %v", err)
	}
}
