package engine

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/incident"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/page"
	"github.com/agentledger/agentledger/receipt"
)

// The approvals inbox: pages for approvers only, served under /inbox. An
// approver signs in with their bearer token (a login form, or the
// Authorization header as on the API); the form's sign-in is kept in a
// server-side session named by an HttpOnly, SameSite=Strict cookie. Every
// form carries a CSRF token bound to the sign-in, and a post from another
// site is refused. A resolution given here is the same as one given
// through POST /v1/resolutions: recorded, signed, naming the approver
// token's identity.

const (
	inboxCookie = "agentledger_inbox"
	inboxTTL    = 8 * time.Hour
)

type inbox struct {
	s       *server
	csrfKey [32]byte
	mu      sync.Mutex
	signIns map[string]inboxSignIn
}

type inboxSignIn struct {
	p       *Principal
	expires time.Time
}

func newInbox(s *server) *inbox {
	in := &inbox{s: s, signIns: map[string]inboxSignIn{}}
	if _, err := rand.Read(in.csrfKey[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return in
}

func (in *inbox) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /inbox", in.list)
	mux.HandleFunc("POST /inbox/login", in.login)
	mux.HandleFunc("POST /inbox/logout", in.logout)
	mux.HandleFunc("POST /inbox/resolve", in.resolve)
	mux.HandleFunc("GET /inbox/sessions/{id}", in.session)
}

// who is the approver a request comes from: its bearer token, or its
// sign-in cookie; bound is what its CSRF token is bound to.
func (in *inbox) who(r *http.Request) (p *Principal, bound string) {
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if p, ok := in.s.cfg.Tokens.Lookup(strings.TrimSpace(token)); ok {
			sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
			return p, "token:" + base64.RawURLEncoding.EncodeToString(sum[:])
		}
		return nil, ""
	}
	c, err := r.Cookie(inboxCookie)
	if err != nil {
		return nil, ""
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	si, ok := in.signIns[c.Value]
	if !ok || time.Now().After(si.expires) {
		delete(in.signIns, c.Value)
		return nil, ""
	}
	return si.p, "cookie:" + c.Value
}

func (in *inbox) csrf(bound string) string {
	m := hmac.New(sha256.New, in.csrfKey[:])
	m.Write([]byte(bound))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// headers are every inbox page's: its CSP (no framing), no caching, no
// referrer.
func headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", page.CSP+"; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Type", "text/html; charset=utf-8")
}

// gate answers a request that has no approver with the sign-in page (or a
// refusal naming the role it has), and reports whether it may go on.
func (in *inbox) gate(w http.ResponseWriter, r *http.Request) (*Principal, string, bool) {
	p, bound := in.who(r)
	if p == nil {
		// The sign-in form itself is no secret; a token that was sent and
		// is not known is refused.
		code := http.StatusOK
		if r.Header.Get("Authorization") != "" || r.Method != http.MethodGet {
			code = http.StatusUnauthorized
		}
		in.render(w, code, "agentledger approvals: sign in", loginPage, map[string]any{"Flash": r.URL.Query().Get("m")})
		return nil, "", false
	}
	if p.Role != RoleApprover {
		in.render(w, http.StatusForbidden, "agentledger approvals: not an approver", loginPage,
			map[string]any{"Flash": "This token's role is " + p.Role + ": the inbox is for approver tokens only."})
		return nil, "", false
	}
	return p, bound, true
}

func (in *inbox) render(w http.ResponseWriter, code int, title string, t *template.Template, data any) {
	headers(w)
	w.WriteHeader(code)
	_ = page.Render(w, title, t, data)
}

// sameSite refuses a state-changing post another site made: the browser
// says where it came from (Sec-Fetch-Site, or Origin).
func sameSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		return err == nil && u.Host == r.Host
	}
	return true
}

func (in *inbox) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if !sameSite(r) || r.ParseForm() != nil {
		http.Error(w, "bad sign-in request", http.StatusBadRequest)
		return
	}
	p, ok := in.s.cfg.Tokens.Lookup(strings.TrimSpace(r.PostForm.Get("token")))
	if !ok {
		http.Redirect(w, r, "/inbox?m="+url.QueryEscape("That token is not known."), http.StatusSeeOther)
		return
	}
	if p.Role != RoleApprover {
		in.render(w, http.StatusForbidden, "agentledger approvals: not an approver", loginPage,
			map[string]any{"Flash": "This token's role is " + p.Role + ": the inbox is for approver tokens only."})
		return
	}
	var id [32]byte
	if _, err := rand.Read(id[:]); err != nil {
		http.Error(w, "no randomness", http.StatusInternalServerError)
		return
	}
	sid := base64.RawURLEncoding.EncodeToString(id[:])
	in.mu.Lock()
	for k, si := range in.signIns { // forget the expired
		if time.Now().After(si.expires) {
			delete(in.signIns, k)
		}
	}
	in.signIns[sid] = inboxSignIn{p: p, expires: time.Now().Add(inboxTTL)}
	in.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: inboxCookie, Value: sid, Path: "/inbox", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int(inboxTTL / time.Second)})
	http.Redirect(w, r, "/inbox", http.StatusSeeOther)
}

func (in *inbox) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(inboxCookie); err == nil && sameSite(r) {
		in.mu.Lock()
		delete(in.signIns, c.Value)
		in.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: inboxCookie, Value: "", Path: "/inbox", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/inbox?m="+url.QueryEscape("Signed out."), http.StatusSeeOther)
}

// inboxAsk is one open approval as the inbox shows it.
type inboxAsk struct {
	PendingApproval
	Action, Input, Expires string
}

func (in *inbox) list(w http.ResponseWriter, r *http.Request) {
	p, bound, ok := in.gate(w, r)
	if !ok {
		return
	}
	now := time.Now()
	var asks []inboxAsk
	for _, a := range in.s.cfg.Engine.Pending(p.Tenant) {
		input, _ := json.MarshalIndent(a.ToolInput, "", "  ")
		left := time.UnixMilli(a.ExpiresUnixMs).Sub(now).Round(time.Second)
		asks = append(asks, inboxAsk{PendingApproval: a, Action: detect.Redact(actionText(a)), Input: detect.RedactJSONText(string(input)),
			Expires: fmt.Sprintf("in %s (%s UTC)", max(left, 0), time.UnixMilli(a.ExpiresUnixMs).UTC().Format("15:04:05"))})
	}
	in.render(w, http.StatusOK, "agentledger approvals", inboxPage, map[string]any{"Who": approverName(p), "Tenant": p.Tenant,
		"Asks": asks, "CSRF": in.csrf(bound), "Flash": r.URL.Query().Get("m")})
}

// actionText is an asked call in readable form: the tool and its command,
// path or URL.
func actionText(a PendingApproval) string {
	tool := a.ToolNative
	if tool == "" {
		tool = a.Tool
	}
	if m, ok := a.ToolInput.(map[string]any); ok {
		for _, k := range []string{"command", "cmd", "file_path", "path", "url", "query"} {
			if s, ok := m[k].(string); ok && s != "" {
				return tool + ": " + s
			}
		}
	}
	return tool
}

func approverName(p *Principal) string {
	if p.Identity.Principal != "" {
		return p.Identity.Principal
	}
	return strings.TrimPrefix(p.Identity.By, "token:")
}

func (in *inbox) resolve(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if r.ParseForm() != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	p, bound, ok := in.gate(w, r)
	if !ok {
		return
	}
	if !sameSite(r) || !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(in.csrf(bound))) {
		http.Error(w, "this form did not come from this inbox (CSRF token or origin)", http.StatusForbidden)
		return
	}
	res := r.PostForm.Get("resolution")
	if res != "approved" && res != "denied" {
		http.Error(w, "resolution: want approved or denied", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), in.s.cfg.Timeout)
	defer cancel()
	id := r.PostForm.Get("pending_id")
	got, err := in.s.cfg.Engine.Resolve(ctx, p.Tenant, id, res, r.PostForm.Get("action_sha256"), p.Identity)
	msg := ""
	switch {
	case err == nil:
		msg = fmt.Sprintf("%s: recorded at seq %d of the session, by %s.", res, got.Seq, approverName(p))
	case errors.Is(err, ErrNoPending):
		msg = "That approval is no longer open (resolved, or timed out)."
	default:
		msg = "Not recorded: " + detect.Redact(err.Error())
	}
	http.Redirect(w, r, "/inbox?m="+url.QueryEscape(msg), http.StatusSeeOther)
}

// session shows a session of the approver's tenant as the incident view,
// read from the ledger as it stands, receipts checked with the engine's
// own key.
func (in *inbox) session(w http.ResponseWriter, r *http.Request) {
	p, _, ok := in.gate(w, r)
	if !ok {
		return
	}
	k := ledger.SessionKey{Tenant: p.Tenant, Session: r.PathValue("id")}
	if ledger.ValidKey(k.Tenant, k.Session) != nil {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	lim := in.s.cfg.Engine.Decider().Limits
	recs, err := incident.Read(r.Context(), in.s.cfg.Store, k, lim, nil)
	if err == nil && len(recs) == 0 {
		http.Error(w, "no session "+k.Session, http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, "read the session: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	cp, err := incident.NewestCheckpoint(r.Context(), in.s.cfg.Store, CheckpointSession)
	if err != nil {
		http.Error(w, "read the checkpoints: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	var keys receipt.Keyring
	if sg := in.s.cfg.Engine.Decider().Signer; sg != nil {
		keys = receipt.Keyring{sg.KeyID(): sg.PublicKey()}
	}
	headers(w)
	_ = incident.WriteHTML(w, incident.Build(incident.Input{Key: k, Records: recs, Keys: keys, Checkpoint: cp, Limits: lim}))
}

var loginPage = template.Must(template.New("login").Parse(`
<h1>agentledger approvals</h1>
{{if .Flash}}<p class="flash" id="flash">{{.Flash}}</p>{{end}}
<form method="post" action="/inbox/login">
<p><label>Approver token <input type="password" name="token" id="token" autocomplete="off" required></label>
<button type="submit" id="sign-in">Sign in</button></p>
</form>
<p class="muted">Only an approver token opens the inbox. A host's token never approves: the agent cannot approve its own ask.</p>
`))

var inboxPage = template.Must(template.New("inbox").Funcs(page.Funcs).Parse(`
<h1>agentledger approvals</h1>
<div class="muted">Signed in as <b id="who">{{.Who}}</b> (tenant {{.Tenant}}). <form class="inline" method="post" action="/inbox/logout"><button type="submit">Sign out</button></form></div>
{{if .Flash}}<p class="flash" id="flash">{{.Flash}}</p>{{end}}
<div class="cards"><div class="card"><b id="n-open">{{len .Asks}}</b><span>open asks</span></div></div>
{{range .Asks}}<section class="box ask" id="ask-{{.PendingID}}">
<h3><span class="d ask">ask</span> <span class="act">{{.Action}}</span></h3>
<table>
<tr><th>session</th><td><a href="/inbox/sessions/{{.Session}}#seq-{{.ForSeq}}">{{.Session}}</a>, seq {{.ForSeq}} ({{.HookPoint}})</td></tr>
<tr><th>why</th><td>{{.ReasonCode}} ({{.AARMDecision}}){{range .Reasons}}<div>{{.}}</div>{{end}}</td></tr>
{{if .Artifacts}}<tr><th>artifacts</th><td class="act">{{range .Artifacts}}{{.}} {{end}}</td></tr>{{end}}
{{if .Cwd}}<tr><th>directory</th><td class="act">{{.Cwd}}</td></tr>{{end}}
<tr><th>expires</th><td>{{.Expires}}; unanswered, it is denied</td></tr>
</table>
<details><summary>tool input</summary><pre class="act">{{.Input}}</pre></details>
<div class="actions">
<form class="inline" method="post" action="/inbox/resolve"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="pending_id" value="{{.PendingID}}"><input type="hidden" name="action_sha256" value="{{.ActionSHA256}}"><input type="hidden" name="resolution" value="approved"><button class="approve" type="submit">Approve once</button></form>
<form class="inline" method="post" action="/inbox/resolve"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="pending_id" value="{{.PendingID}}"><input type="hidden" name="action_sha256" value="{{.ActionSHA256}}"><input type="hidden" name="resolution" value="denied"><button class="deny" type="submit">Deny</button></form>
</div>
</section>{{else}}<p id="empty">Nothing waits for an approver.</p>{{end}}
`))
