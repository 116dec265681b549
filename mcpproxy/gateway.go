package mcpproxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
)

// HeaderSession is the header a client of the stateless revision
// (2026-07-28) may send to keep its calls in one agentledger session:
// the session is its key under the caller's tenant.
const HeaderSession = "X-Agentledger-Session"

// Gateway serves the proxy over Streamable HTTP to any number of clients,
// each authenticated by a bearer token of role host, as on the engine's
// API. How a client's calls are gathered into agentledger sessions, and
// the record's SessionStart says which:
//   - client: a 2026-07-28 client's X-Agentledger-Session key (per tenant);
//   - mcp_session_id: a client of the session revisions (2025-11-25 and
//     before), one session per Mcp-Session-Id;
//   - principal: a stateless client without a key, one session per token
//     (a stateless client's requests share no connection or id the gateway
//     could tell apart; its HTTP connections come and go).
//
// Each agentledger session has its own connection to the upstream.
type Gateway struct {
	cfg Config
	// Upstream returns a fresh transport to the real server for each
	// session.
	upstream func() (mcp.Transport, error)
	tokens   *engine.Tokens
	server   *mcp.Server

	mu      sync.Mutex
	proxies map[string]*conn
	books   map[string]*pinBook // by tenant
	stop    chan struct{}
	once    sync.Once
}

// NewGateway probes the upstream once (for the capabilities it offers) and
// returns a Gateway. tokens authenticate the clients; nil refuses every
// request.
func NewGateway(ctx context.Context, cfg Config, upstream func() (mcp.Transport, error), tokens *engine.Tokens) (*Gateway, error) {
	probe, err := probeUpstream(ctx, cfg, upstream)
	if err != nil {
		return nil, err
	}
	init := probe.InitializeResult()
	probe.Close()
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	g := &Gateway{cfg: cfg, upstream: upstream, tokens: tokens, proxies: map[string]*conn{}, books: map[string]*pinBook{}, stop: make(chan struct{})}
	go g.sweep()
	g.server = mcp.NewServer(serverInfo(init, cfg.Server), serverOptions(init))
	g.server.AddReceivingMiddleware(g.mediate)
	return g, nil
}

// probeUpstream connects to the upstream once, trying again for up to
// cfg.UpstreamWait while it is not up yet (a server started beside the
// gateway), and saying so once through cfg.Notify.
func probeUpstream(ctx context.Context, cfg Config, upstream func() (mcp.Transport, error)) (*mcp.ClientSession, error) {
	deadline := time.Now().Add(cfg.UpstreamWait)
	for told := false; ; {
		t, err := upstream()
		if err != nil {
			return nil, err
		}
		probe, err := mcp.NewClient(&mcp.Implementation{Name: HostID, Version: engine.Version}, nil).Connect(ctx, t, nil)
		if err == nil {
			return probe, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("mcpproxy: connect to %s: %w", cfg.Server, err)
		}
		if !told && cfg.Notify != nil {
			cfg.Notify(fmt.Sprintf("%s is not up yet (%s); trying again for up to %s", cfg.Server, detect.Redact(err.Error()), cfg.UpstreamWait.Round(time.Second)))
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("mcpproxy: connect to %s: %w", cfg.Server, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Handler is the gateway's HTTP handler (the MCP endpoint).
func (g *Gateway) Handler() http.Handler {
	// The SDK serves the stateless revision (2026-07-28) only on a
	// stateless handler, and sessions (Mcp-Session-Id) only on a stateful
	// one: each request goes to the one of the revision it declares.
	server := func(*http.Request) *mcp.Server { return g.server }
	// The SDK binds each MCP session to the identity that opened it
	// (TokenInfo.UserID): another token cannot use or end it.
	bind := auth.RequireBearerToken(func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		p, ok := g.tokens.Lookup(token)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: identityOf(p)}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	sessions := bind(mcp.NewStreamableHTTPHandler(server, nil))
	stateless := bind(mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		p, ok := g.tokens.Lookup(strings.TrimSpace(token))
		if !ok {
			http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		if p.Role != engine.RoleHost {
			http.Error(w, "this token's role is "+p.Role+"; the MCP gateway needs a host token", http.StatusForbidden)
			return
		}
		if k := r.Header.Get(HeaderSession); k != "" && !validKey.MatchString(k) {
			http.Error(w, HeaderSession+": want 1 to 64 of A-Z a-z 0-9 . _ -", http.StatusBadRequest)
			return
		}
		h := sessions
		if r.Header.Get("Mcp-Protocol-Version") >= statelessRevision {
			h = stateless
		}
		var body []byte
		if r.Method == http.MethodPost {
			var ok bool
			if body, ok = g.screen(w, r, p); !ok {
				return
			}
		}
		// What the SDK itself refuses (an unknown or foreign session, a
		// stateless request without its headers) is on record too.
		rw := &refusals{ResponseWriter: w}
		h.ServeHTTP(rw, r)
		if rw.code >= 400 {
			session, _ := g.sessionOf(p, r.Header.Get(HeaderSession), r.Header.Get("Mcp-Session-Id"))
			g.cfg.Engine.RecordRejected(context.WithoutCancel(r.Context()), ledger.SessionKey{Tenant: p.Tenant, Session: session}, Via,
				r.Method+" "+methodOf(body), body[:min(len(body), MaxMessageBytes)], false,
				fmt.Sprintf("HTTP %d: %s", rw.code, strings.TrimSpace(string(rw.text))))
		}
		if sid := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && sid != "" {
			// The client ended its MCP session: so ends its agentledger
			// session, and its connection to the upstream.
			session, _ := g.sessionOf(p, r.Header.Get(HeaderSession), sid)
			g.end(context.WithoutCancel(r.Context()), p.Tenant+"/"+session, "client_closed", 0)
		}
	})
}

// statelessRevision is the first MCP revision without initialize and
// sessions.
const statelessRevision = "2026-07-28"

var validKey = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// screen reads a POST's message and checks it (see screen): a refused
// one is answered with its JSON-RPC error (HTTP 400; 200 for a request of
// an unknown method), recorded as Rejected in the session it would have
// joined, and goes no further. A message that passes is handed on.
func (g *Gateway) screen(w http.ResponseWriter, r *http.Request, principal *engine.Principal) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxMessageBytes+1))
	if err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	size := len(body)
	if size > MaxMessageBytes {
		n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
		size += int(n)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	begun := r.Header.Get("Mcp-Session-Id") != "" || r.Header.Get("Mcp-Protocol-Version") >= statelessRevision
	refused := screen(body, size, begun)
	if refused == nil {
		return body, true
	}
	session, _ := g.sessionOf(principal, r.Header.Get(HeaderSession), r.Header.Get("Mcp-Session-Id"))
	g.cfg.Engine.RecordRejected(r.Context(), ledger.SessionKey{Tenant: principal.Tenant, Session: session}, Via, refused.where(),
		body[:min(len(body), MaxMessageBytes)], size > MaxMessageBytes, refused.message)
	w.Header().Set("Content-Type", "application/json")
	if refused.code == codeMethodNotFound && !refused.notify {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusBadRequest)
	}
	w.Write(refused.answer())
	return nil, false
}

// refusals keeps the status and the first bytes of an error answer.
type refusals struct {
	http.ResponseWriter
	code int
	text []byte
}

func (w *refusals) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusals) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if w.code >= 400 && len(w.text) < 512 {
		w.text = append(w.text, b[:min(len(b), 512-len(w.text))]...)
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets the SDK stream (server-sent events) through the recorder.
func (w *refusals) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *refusals) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// methodOf is a message's method as far as it can be read, for the record.
func methodOf(body []byte) string {
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil || !clientMethods[m.Method] {
		return "jsonrpc"
	}
	return m.Method
}

// identityOf names a principal's whole identity (tenant and every
// authenticated field), for its sessions' keys and the SDK's binding.
func identityOf(p *engine.Principal) string {
	b, _ := json.Marshal(struct {
		Tenant   string
		Identity any
	}{p.Tenant, p.Identity})
	return digest(string(b))
}

// sessionOf is the agentledger session of a principal's request (see
// Gateway): by its session key, its Mcp-Session-Id, or its token alone;
// and how it was named.
func (g *Gateway) sessionOf(principal *engine.Principal, key, sid string) (session, named string) {
	switch {
	case key != "":
		named = "client"
	case sid != "":
		key, named = "sid-"+digest(sid), "mcp_session_id"
	default:
		key, named = "principal", "principal"
	}
	// Keys are the principal's own: two identities never share a session
	// by choosing the same key.
	return engine.GatewaySessionPrefix + g.cfg.Server + "-" + identityOf(principal) + "-" + key, named
}

// mediate finds each request's session and hands the request to its
// proxy.
func (g *Gateway) mediate(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if !relayed[method] {
			return next(ctx, method, req)
		}
		c, err := g.proxyFor(ctx, req)
		if err != nil {
			return nil, err
		}
		c.busy.Add(1)
		defer func() {
			c.last.Store(time.Now().UnixNano())
			c.busy.Add(-1)
		}()
		return c.p.handle(ctx, method, req, next)
	}
}

// relayed are the methods a session's proxy answers (the SDK answers the
// others: initialize, ping, discovery). notifications/initialized
// connects the session to the server with the client's capabilities
// (a stateless client's first request does).
var relayed = map[string]bool{
	"tools/list": true, "tools/call": true, "resources/list": true, "resources/templates/list": true, "resources/read": true,
	"prompts/list": true, "prompts/get": true, "completion/complete": true, "resources/subscribe": true, "resources/unsubscribe": true,
	"logging/setLevel": true, "subscriptions/listen": true, "notifications/initialized": true, "notifications/roots/list_changed": true,
}

// proxyFor is the proxy of a request's agentledger session, connected on
// its first request.
func (g *Gateway) proxyFor(ctx context.Context, req mcp.Request) (*conn, error) {
	extra := req.GetExtra()
	if extra == nil {
		return nil, errors.New("mcpproxy: a request without its HTTP context")
	}
	token, _ := strings.CutPrefix(extra.Header.Get("Authorization"), "Bearer ")
	principal, ok := g.tokens.Lookup(strings.TrimSpace(token))
	if !ok {
		return nil, errors.New("mcpproxy: not authenticated")
	}
	session, named := g.sessionOf(principal, extra.Header.Get(HeaderSession), req.GetSession().ID())
	id := principal.Tenant + "/" + session
	// One connection per session, made once; other sessions do not wait
	// for it (a slow upstream holds only its own session's requests).
	g.mu.Lock()
	c := g.proxies[id]
	if c != nil && isReady(c) && c.p != nil && c.p.upstreamGone() && c.busy.Load() == 0 {
		// The server went away: this session ends, and the request
		// connects it again.
		delete(g.proxies, id)
		go c.p.end(context.WithoutCancel(ctx), "upstream_closed")
		c = nil
	}
	if c == nil && g.held(principal) >= g.cfg.MaxSessions {
		g.mu.Unlock()
		err := fmt.Errorf("this identity holds %d sessions, the most it may: end one (an MCP client's close) or let one go idle", g.cfg.MaxSessions)
		g.cfg.Engine.RecordRejected(context.WithoutCancel(ctx), ledger.SessionKey{Tenant: principal.Tenant, Session: session}, Via, "session", nil, false, err.Error())
		return nil, fmt.Errorf("mcpproxy: %w", err)
	}
	if c == nil {
		c = &conn{ready: make(chan struct{})}
		c.last.Store(time.Now().UnixNano())
		g.proxies[id] = c
		g.mu.Unlock()
		c.p, c.err = g.connect(ctx, principal, session, named, req.GetSession())
		if c.err != nil {
			g.mu.Lock()
			delete(g.proxies, id) // the next request tries again
			g.mu.Unlock()
		}
		close(c.ready)
	} else {
		g.mu.Unlock()
	}
	select {
	case <-c.ready:
		if c.err != nil {
			return nil, c.err
		}
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// held counts the sessions of a principal's identity (g.mu held).
func (g *Gateway) held(principal *engine.Principal) int {
	prefix := principal.Tenant + "/" + engine.GatewaySessionPrefix + g.cfg.Server + "-" + identityOf(principal) + "-"
	n := 0
	for id := range g.proxies {
		if strings.HasPrefix(id, prefix) {
			n++
		}
	}
	return n
}

// conn is one session's proxy, once connected.
type conn struct {
	ready chan struct{}
	p     *Proxy
	err   error
	busy  atomic.Int32 // requests in hand
	last  atomic.Int64 // when the last one ended (unix ns)
}

// end ends session id (tenant/session) for reason, when it is connected,
// has no request in hand and was last used before idleSince (0: now).
func (g *Gateway) end(ctx context.Context, id, reason string, idleSince int64) {
	g.mu.Lock()
	c := g.proxies[id]
	if c == nil || !isReady(c) || c.p == nil || c.busy.Load() > 0 || (idleSince != 0 && c.last.Load() > idleSince) {
		g.mu.Unlock()
		return
	}
	delete(g.proxies, id)
	g.mu.Unlock()
	c.p.end(ctx, reason)
}

func isReady(c *conn) bool {
	select {
	case <-c.ready:
		return true
	default:
		return false
	}
}

// sweep ends the sessions idle for IdleTimeout, until Close.
func (g *Gateway) sweep() {
	tick := time.NewTicker(min(g.cfg.IdleTimeout/2, time.Minute))
	defer tick.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-tick.C:
		}
		since := time.Now().Add(-g.cfg.IdleTimeout).UnixNano()
		g.mu.Lock()
		ids := make([]string, 0, len(g.proxies))
		for id := range g.proxies {
			ids = append(ids, id)
		}
		g.mu.Unlock()
		for _, id := range ids {
			g.end(context.Background(), id, "idle", since)
		}
	}
}

// connect reaches the upstream for a new session and records it.
func (g *Gateway) connect(ctx context.Context, principal *engine.Principal, session, named string, client mcp.Session) (*Proxy, error) {
	t, err := g.upstream()
	if err != nil {
		return nil, err
	}
	book, err := g.book(ctx, principal.Tenant)
	if err != nil {
		return nil, err
	}
	cfg := g.cfg
	cfg.Tenant, cfg.Upstream, cfg.Auth, cfg.server = principal.Tenant, t, principal.Identity, g.server
	if ss, ok := client.(*mcp.ServerSession); ok {
		if init := ss.InitializeParams(); init != nil {
			cfg.ClientCapabilities = init.Capabilities
		}
	}
	return connect(context.WithoutCancel(ctx), cfg, session, named, book)
}

// book is a tenant's pins of the server, read from the record on the
// tenant's first session and shared by all its sessions.
func (g *Gateway) book(ctx context.Context, tenant string) (*pinBook, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if b := g.books[tenant]; b != nil {
		return b, nil
	}
	b, err := loadPins(ctx, g.cfg.Ledger, tenant, g.cfg.Server)
	if err != nil {
		return nil, err
	}
	g.books[tenant] = b
	return b, nil
}

// Close ends every session (SessionEnd, reason gateway_closed).
func (g *Gateway) Close(ctx context.Context) error {
	g.once.Do(func() { close(g.stop) })
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs []error
	for id, c := range g.proxies {
		if isReady(c) && c.p != nil {
			errs = append(errs, c.p.end(ctx, "gateway_closed"))
		}
		// (still connecting: its request ends with the server)
		delete(g.proxies, id)
	}
	return errors.Join(errs...)
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
