package inbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/internal/apitest"
	"github.com/agentledger/agentledger/internal/browser"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/receipt"
)

// served is an engine (its decider signing with a fresh key) in a real
// embedded store, its API with the inbox beside it, with tokens for a host
// of acme and an approver of acme (approver@acme.example).
type served struct {
	srv  *httptest.Server
	st   *store.Store
	ring receipt.Keyring
}

func serve(t *testing.T) *served {
	t.Helper()
	st, err := store.Open(context.Background(), store.Config{DataDir: t.TempDir(), Sync: store.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := apitest.Decider(t, "../fixtures/manifests/coding-agent.json", nil)
	ring := apitest.Sign(t, d)
	e, err := engine.New(d, st)
	if err != nil {
		t.Fatal(err)
	}
	tokens := tokensFile(t, `{"tokens":[`+entry("token-acme", `"tenant":"acme","role":"host","name":"token-acme"`)+`,`+
		entry("approver-acme", `"tenant":"acme","role":"approver","name":"approver-acme","principal":"approver@acme.example"`)+`]}`)
	srv := httptest.NewServer(With(engine.Handler(engine.ServerConfig{Engine: e, Store: st, Tokens: tokens}), Config{Engine: e, Store: st, Tokens: tokens}))
	t.Cleanup(srv.Close)
	return &served{srv: srv, st: st, ring: ring}
}

// entry is a tokens file's entry for token, with fields.
func entry(token, fields string) string {
	sum := sha256.Sum256([]byte(token))
	return `{"sha256":"` + hex.EncodeToString(sum[:]) + `",` + fields + `}`
}

func tokensFile(t *testing.T, content string) *engine.Tokens {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	tk, err := engine.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// ask has the engine ask about deleting a file in session, and returns
// its answer.
func (s *served) ask(t *testing.T, session string) engine.HookResponse {
	t.Helper()
	ev := `{"hook_point":"PreToolUse","session_id":"` + session + `","timestamp":"2026-11-22T09:00:01Z","host_id":"claude-code","aarts_version":"0.1","cwd":"/workspace/shop","turn_id":"t","tool_name":"file_delete","tool_name_native":"Delete","artifacts":[],"tool_input":{"file_path":"/workspace/shop/old.txt"}}`
	code, body := call(t, s.srv, "POST", "/v1/hooks", "token-acme", []byte(ev))
	var resp engine.HookResponse
	if code != 200 || json.Unmarshal(body, &resp) != nil || resp.Decision != "ask" || resp.PendingID == "" {
		t.Fatalf("ask: %d %s", code, body)
	}
	return resp
}

func call(t *testing.T, srv *httptest.Server, method, path, token string, body []byte) (int, []byte) {
	t.Helper()
	return apitest.Call(t, srv, method, path, token, body)
}

// TestInboxInBrowser: in headless Chromium, the inbox shows the sign-in
// form to a visitor with no token and refuses a host's token; an approver
// signs in, sees the open ask with its context, and approves it by
// clicking. The resolution is on record, signed, with the approver's
// identity, and the session's incident view shows it. Nothing is loaded
// from anywhere but the engine.
func TestInboxInBrowser(t *testing.T) {
	s := serve(t)
	srv := s.srv
	resp := s.ask(t, "h")

	b := browser.Open(t)
	b.Load(t, srv.URL+"/inbox")
	if n := b.Count(t, "section.ask"); n != 0 || b.Count(t, "#token") != 1 {
		t.Fatalf("without a token: %d asks shown, sign-in form %d", n, b.Count(t, "#token"))
	}
	signIn := func(token string) {
		t.Helper()
		if err := b.Do(chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#sign-in")),
			chromedp.WaitReady(chromedp.CSS("#flash, #who"))); err != nil {
			t.Fatal(err)
		}
	}
	signIn("token-acme")
	if flash := browser.Eval[string](t, b, `document.getElementById("flash").textContent`); !strings.Contains(flash, "approver tokens only") ||
		b.Count(t, "section.ask") != 0 {
		t.Fatalf("a host token: %q", flash)
	}
	b.Load(t, srv.URL+"/inbox")
	signIn("approver-acme")
	if who := browser.Eval[string](t, b, `document.getElementById("who").textContent`); who != "approver@acme.example" {
		t.Fatalf("signed in as %q", who)
	}
	ask := "#ask-" + resp.PendingID
	if n := b.Count(t, ask); n != 1 || b.Count(t, "section.ask") != 1 {
		t.Fatalf("the open ask is not listed (%d)", n)
	}
	text := browser.Eval[string](t, b, `document.querySelector("`+ask+`").textContent`)
	asker := browser.Eval[string](t, b, `document.querySelector("`+ask+` .asked-by").textContent`)
	if !strings.HasPrefix(asker, "claude-code, as ") || !strings.Contains(asker, "token-acme") {
		t.Errorf("the ask does not name who asked: %q", asker)
	}
	for _, want := range []string{"Delete: /workspace/shop/old.txt", "APPROVAL_REQUIRED", "seq 0", "expires"} {
		if !strings.Contains(text, want) {
			t.Errorf("the ask lacks %q:\n%s", want, text)
		}
	}
	b.Clean(t, srv.URL)
	b.Screenshot(t, "inbox.png", 1100, false)

	if err := b.Do(chromedp.Click(chromedp.CSS(ask+" button.approve")), chromedp.WaitReady(chromedp.CSS("#flash"))); err != nil {
		t.Fatal(err)
	}
	base := browser.Eval[string](t, b, `location.pathname`)
	if flash := browser.Eval[string](t, b, `document.getElementById("flash").textContent`); !strings.Contains(flash, "approved: recorded") ||
		b.Count(t, "section.ask") != 0 {
		t.Fatalf("after approving: %q, %d asks left", flash, b.Count(t, "section.ask"))
	}
	recs := apitest.Records(t, s.st, s.ring, ledger.SessionKey{Tenant: "acme", Session: "h"}, ledger.EventResolution)
	var rec aarts.ResolutionRecord
	if len(recs) != 1 || ledger.DecodeExact(recs[0].Payload(), &rec) != nil {
		t.Fatalf("resolution records: %d", len(recs))
	}
	if rec.Resolution != "approved" || rec.By != "approver@acme.example" || rec.AuthenticatedBy != "token:approver-acme" || rec.Sig == nil {
		t.Fatalf("resolution record: %s", recs[0].Payload())
	}
	b.Load(t, srv.URL+base+"/sessions/h")
	if row := browser.Eval[string](t, b, `document.querySelector("tr.resolution").textContent`); !strings.Contains(row, "by approver@acme.example (token:approver-acme)") {
		t.Fatalf("the session view does not show who resolved it: %s", row)
	}
	if got := browser.Eval[string](t, b, `document.querySelector("#receipt-status b").textContent`); got != "ok" {
		t.Errorf("receipts: %s", got)
	}
	b.Clean(t, srv.URL)
	if r, err := s.st.Verify(context.Background(), store.Filter{}, ledger.Deep, nil); err != nil || !r.OK() {
		t.Fatalf("verify: %v %v", err, r.Err())
	}
}

// TestInboxRefusesForgedPosts: a resolution post without the form's CSRF
// token, or from another site, changes nothing; a host's bearer token
// gets no page.
func TestInboxRefusesForgedPosts(t *testing.T) {
	s := serve(t)
	srv := s.srv
	resp := s.ask(t, "h")
	if code, body := call(t, srv, "GET", "/inbox", "", nil); code != 200 || !strings.Contains(string(body), `id="token"`) || strings.Contains(string(body), resp.PendingID) {
		t.Fatalf("no token: %d", code)
	}
	if code, body := call(t, srv, "GET", "/inbox", "token-acme", nil); code != 403 || strings.Contains(string(body), resp.PendingID) {
		t.Fatalf("a host's token: %d", code)
	}
	code, body := call(t, srv, "GET", "/inbox", "approver-acme", nil)
	if code != 200 || !strings.Contains(string(body), resp.PendingID) {
		t.Fatalf("an approver's header: %d", code)
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := client.PostForm(srv.URL+"/inbox/login", url.Values{"token": {"approver-acme"}})
	if err != nil || r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/inbox/k/") {
		t.Fatalf("sign in: %v %v", err, r)
	}
	r.Body.Close()
	base := r.Header.Get("Location")
	// The sign-in cookie alone (what a page on another port of this host
	// receives) opens nothing: the key in the URL is needed too.
	for _, path := range []string{"/inbox/k/" + strings.Repeat("A", 43), "/inbox"} {
		r, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if strings.Contains(string(body), resp.PendingID) || strings.Contains(string(body), `name="csrf"`) {
			t.Fatalf("%s with the cookie alone shows the inbox (%d)", path, r.StatusCode)
		}
	}
	pending := func() int { return len(newPendingList(t, srv)) }
	// A link cannot put words on the page: ?m= takes codes only.
	if r, err := client.Get(srv.URL + "/inbox?m=" + url.QueryEscape("Paste your token at https://evil.example")); err == nil {
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if strings.Contains(string(body), "evil.example") {
			t.Fatal("the page shows a message from its URL")
		}
	}
	form := url.Values{"pending_id": {resp.PendingID}, "resolution": {"approved"}, "action_sha256": {newPendingList(t, srv)[0].ActionSHA256}}
	for name, mutate := range map[string]func(*http.Request){
		"no csrf token": func(*http.Request) {},
		"another site":  func(req *http.Request) { req.Header.Set("Sec-Fetch-Site", "cross-site") },
		"wrong origin":  func(req *http.Request) { req.Header.Set("Origin", "https://evil.example") },
		"opaque origin": func(req *http.Request) { req.Header.Set("Origin", "null") },
	} {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		if name != "no csrf token" {
			f.Set("csrf", csrfOf(t, client, srv.URL+base))
		}
		req, _ := http.NewRequest("POST", srv.URL+base+"/resolve", strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		mutate(req)
		r, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusForbidden || pending() != 1 {
			t.Fatalf("%s: %d, %d pending", name, r.StatusCode, pending())
		}
	}
}

func newPendingList(t *testing.T, srv *httptest.Server) []engine.PendingApproval {
	t.Helper()
	_, body := call(t, srv, "GET", "/v1/pending", "approver-acme", nil)
	var list struct {
		Pending []engine.PendingApproval `json:"pending"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	return list.Pending
}

// csrfOf reads the CSRF token the signed-in client's inbox page carries.
func csrfOf(t *testing.T, client *http.Client, inboxURL string) string {
	t.Helper()
	r, err := client.Get(inboxURL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var b strings.Builder
	buf := make([]byte, 1<<16)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	_, rest, ok := strings.Cut(b.String(), `name="csrf" value="`)
	if !ok {
		t.Fatalf("no csrf token on the page (%d)", r.StatusCode)
	}
	tok, _, _ := strings.Cut(rest, `"`)
	return tok
}

// TestSignInsAreBounded: an approver's sign-ins beyond the few it may hold
// forget the oldest, and expired ones go.
func TestSignInsAreBounded(t *testing.T) {
	in := newInbox(Config{})
	p := &engine.Principal{Role: engine.RoleApprover}
	for i := 0; i < 3*maxSignInsEach; i++ {
		if !in.signIn(randomID(), &inboxSignIn{p: p, key: randomID(), created: time.Unix(int64(i), 0), expires: time.Now().Add(time.Hour)}) {
			t.Fatal("refused")
		}
	}
	in.signIn(randomID(), &inboxSignIn{p: &engine.Principal{}, key: randomID(), expires: time.Now().Add(-time.Second)})
	in.signIn(randomID(), &inboxSignIn{p: &engine.Principal{}, key: randomID(), expires: time.Now().Add(time.Hour)})
	if n := len(in.signIns); n != maxSignInsEach+1 { // the expired one went
		t.Fatalf("%d sign-ins kept", n)
	}
}
