// Package inbox serves the approvers' pages: the open asks of a tenant
// with what each would do and why it was asked, the results that answer no
// call the host was let run, a session's incident view, and the forms that
// approve or deny. It is mounted beside the engine's API (With); the
// engine decides and records, the inbox only shows and relays an
// approver's resolution to it.
package inbox

import (
	"cmp"
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/incident"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/page"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/toolchange"
)

// The inbox's pages are for approver tokens only, served under /inbox. An approver signs in with their token in a form, or sends it as
// `Authorization: Bearer` with each request as on the API.
//
// A form sign-in is held by the engine and needs two things on every
// request: a random id in an HttpOnly, SameSite=Strict cookie, and a second
// random key in the page's URL (/inbox/k/KEY/...). A cookie is scoped to a
// host, not a port, so a page on another port of the same host (a dev
// server the agent started) receives it; it never sees the URL. Every form
// also carries a CSRF token bound to the sign-in, and a post the browser
// marks as coming from another site is refused. A resolution given here is
// the same as one through POST /v1/resolutions: recorded, signed, naming the
// approver token's identity.

const (
	inboxCookie = "agentledger_inbox"
	inboxTTL    = 8 * time.Hour
	// Sign-ins kept at most, per approver and in all.
	maxSignInsEach = 8
	maxSignIns     = 4096
)

// Config is what the inbox serves from.
type Config struct {
	// Engine holds the open asks and findings, and records resolutions.
	Engine *engine.Engine
	// Store is the ledger a session's incident view is read from.
	Store *store.Store
	// Tokens are the API's: only an approver's opens the inbox.
	Tokens *engine.Tokens
	// CheckpointKeys open the checkpoints recorded in the ledger that the
	// incident view shows; none: shown as not checked. A checkpoint a
	// records key signed is refused either way.
	CheckpointKeys receipt.Keyring
	// Timeout bounds recording a resolution. Default 5s.
	Timeout time.Duration
}

// Handler serves the inbox's pages under /inbox.
func Handler(cfg Config) http.Handler {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	mux := http.NewServeMux()
	newInbox(cfg).routes(mux)
	return mux
}

// With serves the inbox under /inbox and everything else with api (the
// engine's HTTP API, whose tokens the inbox shares).
func With(api http.Handler, cfg Config) http.Handler {
	mux := http.NewServeMux()
	in := Handler(cfg)
	mux.Handle("/inbox", in)
	mux.Handle("/inbox/", in)
	mux.Handle("/", api)
	return mux
}

type inbox struct {
	cfg     Config
	csrfKey [32]byte
	mu      sync.Mutex
	signIns map[string]*inboxSignIn // by cookie id
}

type inboxSignIn struct {
	p       *engine.Principal
	key     string // the URL key
	created time.Time
	expires time.Time
}

func newInbox(cfg Config) *inbox {
	in := &inbox{cfg: cfg, signIns: map[string]*inboxSignIn{}}
	if _, err := rand.Read(in.csrfKey[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return in
}

func (in *inbox) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /inbox", in.list)
	mux.HandleFunc("POST /inbox/login", in.login)
	mux.HandleFunc("POST /inbox/resolve", in.resolve)
	mux.HandleFunc("GET /inbox/sessions/{id}", in.session)
	mux.HandleFunc("GET /inbox/k/{key}", in.list)
	mux.HandleFunc("POST /inbox/k/{key}/resolve", in.resolve)
	mux.HandleFunc("GET /inbox/k/{key}/sessions/{id}", in.session)
	mux.HandleFunc("POST /inbox/k/{key}/logout", in.logout)
}

// caller is who a request comes from: the approver, what its CSRF token is
// bound to, and the base of its pages' URLs.
type caller struct {
	p           *engine.Principal
	bound, base string
}

// who finds the caller: a bearer token, or, under /inbox/k/KEY, a sign-in
// cookie whose URL key is KEY. nil: none.
func (in *inbox) who(r *http.Request) *caller {
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token = strings.TrimSpace(token)
		if p, ok := in.cfg.Tokens.Lookup(token); ok {
			sum := sha256.Sum256([]byte(token))
			return &caller{p: p, bound: "token:" + base64.RawURLEncoding.EncodeToString(sum[:]), base: "/inbox"}
		}
		return nil
	}
	key := r.PathValue("key")
	c, err := r.Cookie(inboxCookie)
	if err != nil || key == "" {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	si := in.signIns[c.Value]
	if si == nil || time.Now().After(si.expires) {
		delete(in.signIns, c.Value)
		return nil
	}
	if !hmac.Equal([]byte(key), []byte(si.key)) {
		return nil
	}
	return &caller{p: si.p, bound: "cookie:" + c.Value, base: "/inbox/k/" + si.key}
}

func (in *inbox) csrf(bound string) string {
	m := hmac.New(sha256.New, in.csrfKey[:])
	m.Write([]byte(bound))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// headers are every inbox page's: its CSP (no framing), no caching, no
// referrer (the URL holds the sign-in's key).
func headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", page.CSP+"; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Type", "text/html; charset=utf-8")
}

// flashes are the only messages a page shows from its URL (?m=CODE): a
// link cannot put words of its own on the page.
var flashes = map[string]string{
	"gone":      "That approval is no longer open (resolved, or timed out).",
	"failed":    "The resolution was not recorded: the engine could not record it. Try again.",
	"signedout": "Signed out.",
	"unknown":   "That token is not known.",
	"full":      "Too many sign-ins are open; try again later.",
	"approver":  "This token's role is not approver: the inbox is for approver tokens only.",
}

// flash is the message of a page's ?m= and ?seq=.
func flash(r *http.Request) string {
	q := r.URL.Query()
	switch m := q.Get("m"); m {
	case "approved", "denied":
		seq, err := strconv.ParseUint(q.Get("seq"), 10, 64)
		if err != nil {
			return ""
		}
		return fmt.Sprintf("%s: recorded at seq %d of the session.", m, seq)
	default:
		return flashes[m]
	}
}

// gate answers a request that has no approver with the sign-in page (or a
// refusal naming the role it has), and reports whether it may go on.
func (in *inbox) gate(w http.ResponseWriter, r *http.Request) (*caller, bool) {
	c := in.who(r)
	if c == nil {
		// The sign-in form itself is no secret; a token or sign-in that
		// was sent and is not known is refused.
		code := http.StatusOK
		if r.Header.Get("Authorization") != "" || r.Method != http.MethodGet || r.PathValue("key") != "" {
			code = http.StatusUnauthorized
		}
		in.render(w, code, "agentledger approvals: sign in", loginPage, map[string]any{"Flash": flash(r)})
		return nil, false
	}
	if c.p.Role != engine.RoleApprover {
		in.render(w, http.StatusForbidden, "agentledger approvals: not an approver", loginPage, map[string]any{"Flash": flashes["approver"]})
		return nil, false
	}
	return c, true
}

func (in *inbox) render(w http.ResponseWriter, code int, title string, t *template.Template, data any) {
	headers(w)
	w.WriteHeader(code)
	_ = page.Render(w, title, t, data)
}

// sameSite refuses a state-changing post another site made, as the browser
// tells: Sec-Fetch-Site where it is sent (every current browser), else
// Origin (an opaque "null" origin counts as another site). A client that
// is not a browser sends neither; it is no CSRF victim.
func sameSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
	default:
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err == nil && o != "null" && u.Host == r.Host
	}
	return true
}

func (in *inbox) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if !sameSite(r) || r.ParseForm() != nil {
		http.Error(w, "bad sign-in request", http.StatusBadRequest)
		return
	}
	p, ok := in.cfg.Tokens.Lookup(strings.TrimSpace(r.PostForm.Get("token")))
	if !ok {
		http.Redirect(w, r, "/inbox?m=unknown", http.StatusSeeOther)
		return
	}
	if p.Role != engine.RoleApprover {
		in.render(w, http.StatusForbidden, "agentledger approvals: not an approver", loginPage, map[string]any{"Flash": flashes["approver"]})
		return
	}
	sid, key := randomID(), randomID()
	if !in.signIn(sid, &inboxSignIn{p: p, key: key, created: time.Now(), expires: time.Now().Add(inboxTTL)}) {
		http.Redirect(w, r, "/inbox?m=full", http.StatusSeeOther)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: inboxCookie, Value: sid, Path: "/inbox", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int(inboxTTL / time.Second)})
	http.Redirect(w, r, "/inbox/k/"+key, http.StatusSeeOther)
}

// signIn keeps a sign-in, forgetting expired ones and an approver's
// oldest beyond maxSignInsEach; false when maxSignIns are open.
func (in *inbox) signIn(sid string, si *inboxSignIn) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	now := time.Now()
	var mine []string
	for id, o := range in.signIns {
		switch {
		case now.After(o.expires):
			delete(in.signIns, id)
		case o.p == si.p:
			mine = append(mine, id)
		}
	}
	slices.SortFunc(mine, func(a, b string) int { return in.signIns[a].created.Compare(in.signIns[b].created) })
	for len(mine) >= maxSignInsEach {
		delete(in.signIns, mine[0])
		mine = mine[1:]
	}
	if len(in.signIns) >= maxSignIns {
		return false
	}
	in.signIns[sid] = si
	return true
}

func randomID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (in *inbox) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(inboxCookie); err == nil && sameSite(r) && in.who(r) != nil {
		in.mu.Lock()
		delete(in.signIns, c.Value)
		in.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: inboxCookie, Value: "", Path: "/inbox", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/inbox?m=signedout", http.StatusSeeOther)
}

// inboxAsk is one open approval as the inbox shows it.
type inboxAsk struct {
	engine.PendingApproval
	Action, Input, Expires, SessionPath string
}

func (in *inbox) list(w http.ResponseWriter, r *http.Request) {
	c, ok := in.gate(w, r)
	if !ok {
		return
	}
	now := time.Now()
	var asks []inboxAsk
	for _, a := range in.cfg.Engine.Pending(r.Context(), c.p.Tenant) {
		input, _ := json.MarshalIndent(a.ToolInput, "", "  ")
		left := time.UnixMilli(a.ExpiresUnixMs).Sub(now).Round(time.Second)
		ask := inboxAsk{PendingApproval: a, Action: detect.Redact(incident.Action(cmp.Or(a.ToolNative, a.Tool), a.ToolInput)), Input: detect.RedactJSONText(string(input)),
			SessionPath: url.PathEscape(a.Session), Expires: fmt.Sprintf("in %s (%s UTC)", max(left, 0), time.UnixMilli(a.ExpiresUnixMs).UTC().Format("15:04:05"))}
		ask.Cwd = detect.Redact(a.Cwd) // AskedBy is the tokens file's names, no secret
		if a.Server != "" {
			ask.Action = "MCP server " + a.Server + ": " + changeSummary(a.ToolChanges)
		}
		ask.Reasons = redactAll(a.Reasons)
		ask.Artifacts = redactAll(a.Artifacts)
		asks = append(asks, ask)
	}
	var findings []inboxFinding
	for _, f := range in.cfg.Engine.Findings(c.p.Tenant) {
		findings = append(findings, inboxFinding{RecentAnswer: f, SessionPath: url.PathEscape(f.Session), When: f.At.UTC().Format("15:04:05"),
			Why: unboundWhy[f.Unbound]})
	}
	in.render(w, http.StatusOK, "agentledger approvals", inboxPage, map[string]any{"Who": approverName(c.p), "Tenant": c.p.Tenant,
		"Asks": asks, "Findings": findings, "CSRF": in.csrf(c.bound), "Base": c.base, "Form": c.base != "/inbox", "Flash": flash(r)})
}

// inboxFinding is a result that answers no call the host was let run, as
// the inbox shows it.
type inboxFinding struct {
	engine.RecentAnswer
	SessionPath string
	When        string
	Why         string
}

// unboundWhy says to an approver what each kind of unbound result means.
var unboundWhy = map[string]string{
	aarts.ResultDeniedCall:   "the host ran a call agentledger denied (or reports one that did not happen)",
	aarts.ResultAskedCall:    "the host ran a call that still waits for an approver",
	aarts.ResultUnknownCall:  "a result for a call agentledger never judged",
	aarts.ResultInputDiffers: "a result whose input differs from the call it names",
}

func redactAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = detect.Redact(s)
	}
	return out
}

func approverName(p *engine.Principal) string {
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
	c, ok := in.gate(w, r)
	if !ok {
		return
	}
	if !sameSite(r) || !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(in.csrf(c.bound))) {
		http.Error(w, "this form did not come from this inbox (CSRF token or origin)", http.StatusForbidden)
		return
	}
	res := r.PostForm.Get("resolution")
	if res != "approved" && res != "denied" {
		http.Error(w, "resolution: want approved or denied", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), in.cfg.Timeout)
	defer cancel()
	got, err := in.cfg.Engine.Resolve(ctx, c.p.Tenant, r.PostForm.Get("pending_id"), res, r.PostForm.Get("action_sha256"), c.p.Identity)
	to := c.base + "?m=failed"
	switch {
	case err == nil:
		to = fmt.Sprintf("%s?m=%s&seq=%d", c.base, res, got.Seq)
	case errors.Is(err, engine.ErrNoPending), errors.Is(err, engine.ErrWrongAction):
		to = c.base + "?m=gone"
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// session shows a session of the approver's tenant as the incident view,
// read from the ledger as it stands, receipts checked with the engine's
// own key.
func (in *inbox) session(w http.ResponseWriter, r *http.Request) {
	c, ok := in.gate(w, r)
	if !ok {
		return
	}
	k := ledger.SessionKey{Tenant: c.p.Tenant, Session: r.PathValue("id")}
	if ledger.ValidKey(k.Tenant, k.Session) != nil {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	lim := in.cfg.Engine.Decider().Limits
	recs, err := incident.Read(r.Context(), in.cfg.Store, k, lim, nil)
	if err == nil && len(recs) == 0 {
		http.Error(w, "no session "+k.Session, http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, "read the session: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	var keys receipt.Keyring
	if sg := in.cfg.Engine.Decider().Signer; sg != nil {
		keys = receipt.Keyring{sg.KeyID(): sg.PublicKey()}
	}
	cp, err := incident.NewestCheckpoint(r.Context(), in.cfg.Store, engine.CheckpointSession, k, in.cfg.CheckpointKeys, keys)
	if err != nil {
		http.Error(w, "read the checkpoints: "+err.Error(), http.StatusServiceUnavailable)
		return
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
<div class="muted">Signed in as <b id="who">{{.Who}}</b> (tenant {{.Tenant}}).{{if .Form}} <form class="inline" method="post" action="{{.Base}}/logout"><button type="submit">Sign out</button></form>{{end}}</div>
{{if .Flash}}<p class="flash" id="flash">{{.Flash}}</p>{{end}}
<div class="cards"><div class="card"><b id="n-open">{{len .Asks}}</b><span>open asks</span></div></div>
{{range .Asks}}<section class="box ask" id="ask-{{.PendingID}}">
<h3><span class="d ask">ask</span> <span class="act">{{.Action}}</span></h3>
<table>
<tr><th>session</th><td><a href="{{$.Base}}/sessions/{{.SessionPath}}#seq-{{.ForSeq}}">{{.Session}}</a>, seq {{.ForSeq}} ({{.HookPoint}})</td></tr>
<tr><th>asked by</th><td class="asked-by">{{if .Host}}{{.Host}}{{else}}an unnamed host{{end}}{{if .AskedBy}}, as <code>{{.AskedBy}}</code>{{end}}</td></tr>
<tr><th>why</th><td>{{.ReasonCode}} ({{.AARMDecision}}){{range .Reasons}}<div>{{.}}</div>{{end}}</td></tr>
{{if .Artifacts}}<tr><th>artifacts</th><td class="act">{{range $i, $a := .Artifacts}}{{if $i}} {{end}}{{$a}}{{end}}</td></tr>{{end}}
{{if .Cwd}}<tr><th>directory</th><td class="act">{{.Cwd}}</td></tr>{{end}}
<tr><th>expires</th><td>{{.Expires}}; unanswered, it is denied</td></tr>
</table>
{{if .Server}}<p class="muted">The MCP server <code>{{.Server}}</code> declared tools other than those pinned: approving pins them as declared now, and the gateway lists and calls them again.</p>
{{range .ToolChanges}}<section class="tool-change" data-tool="{{.Name}}">
<h4><code>{{.Name}}</code> <span class="d {{if eq .Status "removed"}}none{{else}}ask{{end}}">{{.Status}}</span></h4>
{{if .Flags}}<ul class="flags">{{range .Flags}}<li class="flag"><b>{{.Name}}</b>{{if .Words}}: {{range $i, $w := .Words}}{{if $i}}, {{end}}<q>{{$w}}</q>{{end}}{{end}}</li>{{end}}</ul>{{end}}
{{if .Diff}}<pre class="diff">{{range .Diff}}<span class="{{if eq .Op "+"}}add{{else if eq .Op "-"}}del{{else}}same{{end}}">{{.Op}} {{.Text}}</span>{{end}}</pre>{{end}}
<details><summary>both definitions</summary><table><tr><th>pinned</th><th>declared now</th></tr>
<tr><td class="act before">{{if .Before}}{{.Before}}{{else}}(none: {{if eq .Status "added"}}never pinned{{else}}pinned before definitions were recorded{{end}}){{end}}</td><td class="act after">{{if .After}}{{.After}}{{else}}(no longer declared){{end}}</td></tr></table></details>
</section>{{end}}{{else}}<details><summary>tool input</summary><pre class="act">{{.Input}}</pre></details>{{end}}
<div class="actions">
<form class="inline" method="post" action="{{$.Base}}/resolve"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="pending_id" value="{{.PendingID}}"><input type="hidden" name="action_sha256" value="{{.ActionSHA256}}"><input type="hidden" name="resolution" value="approved"><button class="approve" type="submit">Approve once</button></form>
<form class="inline" method="post" action="{{$.Base}}/resolve"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="pending_id" value="{{.PendingID}}"><input type="hidden" name="action_sha256" value="{{.ActionSHA256}}"><input type="hidden" name="resolution" value="denied"><button class="deny" type="submit">Deny</button></form>
</div>
</section>{{else}}<p id="empty">Nothing waits for an approver.</p>{{end}}
{{if .Findings}}<h2>Results without an allow</h2>
<table id="findings"><tr><th>when (UTC)</th><th>session</th><th>what</th></tr>
{{range .Findings}}<tr class="finding"><td>{{.When}}</td><td><a href="{{$.Base}}/sessions/{{.SessionPath}}#seq-{{.Seq}}">{{.Session}}</a>, seq {{.Seq}}</td><td>{{.Why}} ({{.Unbound}}{{if .Tool}}, {{.Tool}}{{end}})</td></tr>
{{end}}</table>{{end}}
`))

// changeSummary names a re-declaration's changed tools, by status.
func changeSummary(changes []toolchange.Change) string {
	by := map[string][]string{}
	for _, c := range changes {
		by[c.Status] = append(by[c.Status], c.Name)
	}
	var parts []string
	for _, status := range []string{"changed", "added", "removed"} {
		if names := by[status]; len(names) > 0 {
			parts = append(parts, status+" "+strings.Join(names, ", "))
		}
	}
	if len(parts) == 0 {
		return "declared again"
	}
	return "tools " + strings.Join(parts, "; ")
}
