package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tokensFor(t *testing.T, pairs ...string) *Tokens {
	t.Helper()
	var f tokensFile
	for i := 0; i < len(pairs); i += 2 {
		sum := sha256.Sum256([]byte(pairs[i]))
		f.Tokens = append(f.Tokens, struct {
			SHA256 string `json:"sha256"`
			Tenant string `json:"tenant"`
		}{hex.EncodeToString(sum[:]), pairs[i+1]})
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
	st := openStore(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	h := Handler(ServerConfig{Engine: New(decider(t, "coding-agent.json"), st), Store: st,
		Tokens: tokensFor(t, "token-acme", "acme", "token-beta", "beta")})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func call(t *testing.T, srv *httptest.Server, method, path, token string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
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
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Decision != "deny" || resp.ReasonCode != "FORBIDDEN" || resp.Seq != 2 {
		t.Fatalf("deny: %d %s", code, body)
	}
	// A bad event records nothing.
	if code, body := call(t, srv, "POST", "/v1/hooks", "token-acme", []byte(`{"hook_point":"PreToolUse","session_id":"s1"}`)); code != 400 || !strings.Contains(string(body), "timestamp") {
		t.Fatalf("bad event: %d %s", code, body)
	}
	code, body = call(t, srv, "GET", "/v1/sessions/s1/snapshot", "token-acme", nil)
	if code != 200 || !strings.Contains(string(body), `"tool_calls_consumed":2`) || !strings.Contains(string(body), `"denied_count":1`) {
		t.Fatalf("snapshot: %d %s", code, body)
	}
	code, body = call(t, srv, "GET", "/v1/sessions/s1/verify", "token-acme", nil)
	if code != 200 || !strings.Contains(string(body), `"envelopes":4`) || !strings.Contains(string(body), `"faults":[]`) {
		t.Fatalf("verify: %d %s", code, body)
	}
	// Another tenant can neither read nor write the session.
	for _, c := range []struct{ method, path string }{{"GET", "/v1/sessions/s1/snapshot"}, {"GET", "/v1/sessions/s1/verify"}, {"POST", "/v1/hooks"}} {
		if code, body := call(t, srv, c.method, c.path, "token-beta", hookEvent("s1", 4)); code != 403 {
			t.Errorf("%s %s as beta: got %d %s, want 403", c.method, c.path, code, body)
		}
	}
	if code, _ := call(t, srv, "GET", "/v1/sessions/nope/snapshot", "token-acme", nil); code != 404 {
		t.Errorf("unknown session: got %d, want 404", code)
	}
	code, body = call(t, srv, "GET", "/metrics", "", nil)
	if code != 200 || !strings.Contains(string(body), `agentledger_decisions_total{decision="deny"} 1`) || !strings.Contains(string(body), "agentledger_decision_seconds_count 2") {
		t.Fatalf("metrics: %d %s", code, body)
	}
	if code, _ := call(t, srv, "GET", "/healthz", "", nil); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
}

func TestHTTPBodyLimit(t *testing.T) {
	srv := newTestServer(t)
	big := []byte(fmt.Sprintf(`{"x":"%s"}`, strings.Repeat("a", 2<<20)))
	if code, _ := call(t, srv, "POST", "/v1/hooks", "token-acme", big); code != 413 {
		t.Fatalf("2 MiB body: got %d, want 413", code)
	}
}
