package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/apitest"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// tokensFor makes a tokens file of (token, tenant) pairs; a tenant
// written "acme/approver" gives the token that role, with the principal
// "approver@acme.example".
func tokensFor(t *testing.T, pairs ...string) *Tokens {
	t.Helper()
	var f tokensFile
	for i := 0; i < len(pairs); i += 2 {
		sum := sha256.Sum256([]byte(pairs[i]))
		tenant, role, _ := strings.Cut(pairs[i+1], "/")
		role, prompts := strings.CutSuffix(role, "+prompts") // a host that prompts its user
		e := tokenEntry{SHA256: hex.EncodeToString(sum[:]), Tenant: tenant, Role: role, Name: pairs[i], Prompts: prompts}
		if role != "" {
			e.Principal = role + "@" + tenant + ".example"
		}
		f.Tokens = append(f.Tokens, e)
	}
	raw, _ := json.Marshal(f)
	path := filepath.Join(t.TempDir(), "tokens.json")
	os.WriteFile(path, raw, 0o600)
	tk, err := LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func newTestServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv, _ := newTestServerStore(t)
	return srv
}

func newTestServerStore(t *testing.T) (*httptest.Server, *store.Store) {
	t.Helper()
	st := openStore(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	h := Handler(ServerConfig{Engine: newEngine(t, decider(t, "coding-agent.json"), st), Store: st,
		Tokens: tokensFor(t, "token-acme", "acme", "token-beta", "beta", "approver-acme", "acme/approver", "auditor-acme", "acme/auditor")})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, st
}

func call(t *testing.T, srv *httptest.Server, method, path, token string, body []byte) (int, []byte) {
	t.Helper()
	return apitest.Call(t, srv, method, path, token, body)
}

func TestHTTPHooksAndTenants(t *testing.T) {
	srv := newTestServer(t)
	code, body := call(t, srv, "POST", "/v1/version", "", []byte(`{"aarts_version":"0.1"}`))
	if code != 200 || !strings.Contains(string(body), `"compatible":true`) {
		t.Fatalf("version: %d %s", code, body)
	}
	if code, _ := call(t, srv, "POST", "/v1/hooks", "", hookEvent("s1", 0)); code != 401 {
		t.Fatalf("no token: got %d, want 401", code)
	}
	code, body = call(t, srv, "POST", "/v1/hooks", "token-acme", hookEvent("s1", 0))
	var resp HookResponse
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Decision != "allow" || resp.Seq != 0 || len(resp.EventHash) != 64 {
		t.Fatalf("allow: %d %s", code, body)
	}
	deny := []byte(strings.Replace(string(hookEvent("s1", 2)), `go test ./p2/...`, `rm -rf /`, 1))
	code, body = call(t, srv, "POST", "/v1/hooks", "token-acme", deny)
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Decision != "deny" || resp.ReasonCode != "DESTRUCTIVE" || resp.Seq != 2 {
		t.Fatalf("deny: %d %s", code, body)
	}
	// A bad event is denied and its rejection recorded; the snapshot's
	// counts do not move.
	code, body = call(t, srv, "POST", "/v1/hooks", "token-acme", []byte(`{"hook_point":"PreToolUse","session_id":"s1"}`))
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Decision != "deny" || resp.ReasonCode != ReasonInputRejected || !strings.Contains(strings.Join(resp.Reasons, " "), "timestamp") {
		t.Fatalf("bad event: %d %s", code, body)
	}
	code, body = call(t, srv, "GET", "/v1/sessions/s1/snapshot", "token-acme", nil)
	if code != 200 || !strings.Contains(string(body), `"tool_calls_consumed":2`) || !strings.Contains(string(body), `"denied_count":1`) {
		t.Fatalf("snapshot: %d %s", code, body)
	}
	code, body = call(t, srv, "GET", "/v1/sessions/s1/verify", "token-acme", nil)
	if code != 200 || !strings.Contains(string(body), `"envelopes":5`) || !strings.Contains(string(body), `"faults":[]`) {
		t.Fatalf("verify: %d %s", code, body)
	}
	// Another tenant's session of the same id is another session: it does
	// not exist for beta until beta writes it (no existence leak), and then
	// it is beta's own chain.
	for _, path := range []string{"/v1/sessions/s1/snapshot", "/v1/sessions/s1/verify"} {
		if code, body := call(t, srv, "GET", path, "token-beta", nil); code != 404 {
			t.Errorf("GET %s as beta before beta wrote it: got %d %s, want 404", path, code, body)
		}
	}
	code, body = call(t, srv, "POST", "/v1/hooks", "token-beta", hookEvent("s1", 4))
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Seq != 0 || resp.Decision != "allow" {
		t.Fatalf("beta's first event of s1: %d %s, want seq 0 of beta's own chain", code, body)
	}
	code, body = call(t, srv, "GET", "/v1/sessions/s1/snapshot", "token-beta", nil)
	if code != 200 || !strings.Contains(string(body), `"tool_calls_consumed":1`) || !strings.Contains(string(body), `"tenant_id":"beta"`) {
		t.Fatalf("beta's snapshot: %d %s", code, body)
	}
	code, body = call(t, srv, "GET", "/v1/sessions/s1/snapshot", "token-acme", nil)
	if code != 200 || !strings.Contains(string(body), `"tool_calls_consumed":2`) {
		t.Fatalf("acme's snapshot after beta wrote s1: %d %s", code, body)
	}
	if code, _ := call(t, srv, "GET", "/v1/sessions/nope/snapshot", "token-acme", nil); code != 404 {
		t.Errorf("unknown session: got %d, want 404", code)
	}
	code, body = call(t, srv, "GET", "/metrics", "", nil)
	if code != 200 || !strings.Contains(string(body), `agentledger_decisions_total{decision="deny"} 1`) || !strings.Contains(string(body), "agentledger_decision_seconds_count 4") {
		t.Fatalf("metrics: %d %s", code, body)
	}
	if code, _ := call(t, srv, "GET", "/healthz", "", nil); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
}

// TestHTTPBodyLimit: a body over the limit is denied, not waved through,
// and its rejection (length, SHA-256 of the whole body) is recorded in the
// tenant's rejected session, since no session id can be read from it.
func TestHTTPBodyLimit(t *testing.T) {
	srv, st := newTestServerStore(t)
	big := []byte(fmt.Sprintf(`{"x":"%s"}`, strings.Repeat("a", 2<<20)))
	code, body := call(t, srv, "POST", "/v1/hooks", "token-acme", big)
	var resp HookResponse
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Decision != "deny" || resp.ReasonCode != ReasonInputRejected {
		t.Fatalf("2 MiB body: got %d %s, want a deny", code, body)
	}
	sum := sha256.Sum256(big)
	code, body = call(t, srv, "GET", "/v1/sessions/"+RejectedSession+"/verify", "token-acme", nil)
	if code != 200 || !strings.Contains(string(body), `"envelopes":1`) {
		t.Fatalf("rejected session: %d %s", code, body)
	}
	var seen bool
	err := st.ReadSession(context.Background(), ledger.SessionKey{Tenant: "acme", Session: RejectedSession}, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil {
			return err
		}
		var rej Rejection
		if err := json.Unmarshal(e.Payload(), &rej); err != nil {
			return err
		}
		seen = e.EventType() == ledger.EventRejected && rej.SHA256 == hex.EncodeToString(sum[:]) && rej.Length == int64(len(big)) &&
			strings.Contains(rej.Defect, "over the limit") && rej.Answered == "deny" && strings.HasPrefix(rej.Excerpt, `{"x":"`)
		return nil
	})
	if err != nil || !seen {
		t.Fatalf("no rejection record with the body's SHA-256 and length (%v)", err)
	}
}
