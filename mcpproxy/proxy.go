// Package mcpproxy is agentledger's MCP gateway: it stands between an MCP
// client and an MCP server, on the wire, and puts every call through the
// same engine as the hosts' hooks. The client connects to the proxy as if
// it were the server (any revision the official Go SDK speaks: 2024-11-05
// to 2025-11-25 with initialize and sessions, 2026-07-28 stateless); the
// proxy connects to the real server as a client.
//
// What it records, as AARTS hook events judged by the engine:
//   - the connection: SessionStart (how the session was named) and
//     PreMCPConnect (the server's identity, transport and the tools it
//     declares), judged against the manifest's mcp section;
//   - every tools/call: PreToolUse with the tool as mcp__SERVER__TOOL and
//     its arguments, before anything reaches the server. A deny is
//     answered as a tool result with isError and the reason; an ask is
//     held while an approver may resolve it (the engine's pending API),
//     then forwarded or denied; then PostToolUse with the result, whose
//     verdict may withhold it (a secret is redacted for the client, and
//     sealed in the record when the manifest seals);
//   - the end: SessionEnd.
package mcpproxy

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/receipt"
)

// HostID names the proxy as the host of the events it reports.
const HostID = "agentledger-mcp-proxy"

// Config is one proxied server.
type Config struct {
	// Engine judges and records every event.
	Engine *engine.Engine
	// Tenant the sessions belong to (default "default").
	Tenant string
	// Server names the upstream server (mcp__SERVER__TOOL); it must be a
	// name the manifest's mcp.allowed_servers may list.
	Server string
	// Upstream reaches the real server; URI and Transport describe it for
	// the record (a command line or URL; "stdio" or "streamable_http").
	Upstream  mcp.Transport
	URI       string
	Transport string
	// Source is where the server's configuration came from, as the
	// manifest's mcp.trusted_sources names sources (default "user").
	Source string
	// Auth is who the client was authenticated as (the gateway's bearer
	// token): the identity the receipts of its calls attest.
	Auth receipt.Authenticated
	// Now is the clock of the events (default time.Now).
	Now func() time.Time
	// HoldFor bounds how long an ask is held for an approver (default:
	// until the engine's own pending timeout records it denied).
	HoldFor time.Duration
	// Ledger is the record the pins of earlier sessions are read from
	// (nil: each session pins the tools it first lists).
	Ledger Ledger
	// MaxSessions bounds the gateway sessions one identity may hold at
	// once (default DefaultMaxSessions): each is a connection to the
	// upstream, a server process when the upstream is a command.
	MaxSessions int
	// DecideTimeout bounds one decision (default DefaultDecideTimeout).
	DecideTimeout time.Duration
	// IdleTimeout ends a gateway session no request has used for this
	// long (SessionEnd, reason idle; default DefaultIdleTimeout). A client
	// that comes back with the same session key is connected again.
	IdleTimeout time.Duration
	// UpstreamTimeout bounds each request to the upstream server (connect,
	// list, call; default DefaultUpstreamTimeout): a hung server gives the
	// client an error result, on record, not a hang.
	UpstreamTimeout time.Duration
	// Monitor runs the proxy in monitor mode, the hooks' contract: every
	// request is judged and recorded (enforced false) and none is blocked.
	// A changed or unpinned tool is listed and called (its calls recorded
	// as what enforcing would deny), a tool the manifest does not declare
	// is listed, an ask waits for no one, a result is not withheld, and
	// an event the engine rejects is recorded answered none and forwarded. A
	// secret in a result is still redacted for the client (that is not a
	// block: the call ran), and `replay exact` over the sessions reports
	// what enforcing would have stopped.
	Monitor bool
	// UpstreamWait, for the gateway (NewGateway), is how long to keep
	// trying an upstream that is not up yet before giving up (0: once);
	// Notify, when set, is told once that it is being waited for.
	UpstreamWait time.Duration
	Notify       func(string)
	// ClientCapabilities are what the client declared: the proxy declares
	// them to the server in turn (nil: none), so that the server offers
	// what it would offer the client, and relays the server's requests to
	// the client (sampling, elicitation, roots). The gateway takes each
	// client's own.
	ClientCapabilities *mcp.ClientCapabilities

	// server, for the gateway's sessions, is the client-facing server
	// they share (nil: the proxy's own).
	server *mcp.Server
}

// DefaultUpstreamTimeout is how long the proxy waits for the upstream
// server to answer one request.
const DefaultUpstreamTimeout = 5 * time.Minute

// DefaultMaxSessions is how many gateway sessions one identity may hold.
const DefaultMaxSessions = 32

// DefaultIdleTimeout is how long a gateway session may go unused.
const DefaultIdleTimeout = 30 * time.Minute

// Proxy relays one client connection to the upstream server.
type Proxy struct {
	cfg      Config
	session  string
	upstream *mcp.ClientSession
	server   *mcp.Server

	book *pinBook      // the server's pins, shared by the tenant's sessions
	down chan struct{} // closed when the upstream connection is gone

	client  *mcp.Client // the proxy's client of the server
	link    *clientLink // the client's session, for what the server sends it
	serving atomic.Bool // connected: what the server sends may be relayed

	listing   sync.Mutex  // held by tools: one list of the server's tools at a time
	stateless atomic.Bool // the client speaks 2026-07-28: see roundTrip

	mu          sync.Mutex
	trips       map[string]*roundTrip // a stateless client's calls, by requestState
	current     *roundTrip            // the latest of them
	rootsToggle bool                  // see rootsChanged
	tofu        bool                  // the server's first session: its first list to the client is trusted too
	turn        int
	quarantine  map[string]quarantined
	listed      map[string]listedTool // the tools as last listed
	gone        []string              // pinned tools that disappeared (recorded once)
}

// Connect reaches the upstream server and returns a Proxy whose session
// is named session (a fresh one when empty), with its connection recorded
// and judged. A server the manifest does not allow is refused here.
func Connect(ctx context.Context, cfg Config, session string) (*Proxy, error) {
	named := "client"
	if session == "" {
		session, named = newSessionID(cfg.Server), "connection"
	}
	book, err := loadPins(ctx, cfg.Ledger, cmp.Or(cfg.Tenant, "default"), cfg.Server)
	if err != nil {
		return nil, err
	}
	return connect(ctx, cfg, session, named, book)
}

// connect is Connect with the session's name and how it was named.
func connect(ctx context.Context, cfg Config, session, named string, book *pinBook) (*Proxy, error) {
	if cfg.Engine == nil || cfg.Upstream == nil || cfg.Server == "" {
		return nil, errors.New("mcpproxy: an engine, an upstream and a server name are required")
	}
	if cfg.Tenant == "" {
		cfg.Tenant = "default"
	}
	if cfg.Source == "" {
		cfg.Source = "user"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HoldFor <= 0 {
		cfg.HoldFor = cfg.Engine.PendingTimeout() + 5*time.Second
	}
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if cfg.DecideTimeout <= 0 {
		cfg.DecideTimeout = DefaultDecideTimeout
	}
	p := &Proxy{cfg: cfg, session: session, book: book, quarantine: map[string]quarantined{}, listed: map[string]listedTool{}, link: newClientLink(), trips: map[string]*roundTrip{}}
	p.client = p.upstreamClient(cfg.ClientCapabilities)
	cctx, cancel := toUpstream(ctx, cfg.UpstreamTimeout)
	up, err := p.client.Connect(cctx, cfg.Upstream, nil)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: connect to %s: %w", cfg.Server, err)
	}
	p.upstream = up
	p.down = make(chan struct{})
	go func() {
		up.Wait()
		close(p.down)
	}()
	p.decide(ctx, p.event("SessionStart", map[string]any{"source": "startup",
		"environment": map[string]any{"mcp_proxy": map[string]any{"server": cfg.Server, "session_named_by": named}}}))
	tools, err := p.listUpstream(ctx)
	if err != nil {
		up.Close()
		return nil, err
	}
	p.tofu = len(book.names()) == 0
	// The first list is declared against the pins: a tool changed or added
	// since an earlier session is quarantined, and the declaration asks
	// about it, but the server's other tools serve meanwhile.
	p.trustOnFirstUse(tools)
	changes, _, current := p.changes(tools)
	st := p.declare(ctx, tools, current, changes)
	repin := ""
	switch {
	case st.Decision == aarts.Allow:
	case st.Decision == aarts.Ask && changes != nil && st.PendingID != "" && (st.ReasonCode == "TOOL_CHANGED" || st.ReasonCode == "TOOL_ADDED"):
		repin = st.PendingID
	default:
		up.Close()
		return nil, fmt.Errorf("mcpproxy: the connection to %s is refused: %s (%s)", cfg.Server, st.ReasonCode, strings.Join(st.Reasons, "; "))
	}
	p.server = cfg.server
	if p.server == nil {
		p.server = p.newServer(up.InitializeResult())
	}
	p.serving.Store(true)
	if repin != "" {
		go p.repinWhenApproved(repin, current)
	}
	return p, nil
}

// upstreamGone says whether the connection to the server has ended (the
// server exited or its transport failed).
func (p *Proxy) upstreamGone() bool {
	select {
	case <-p.down:
		return true
	default:
		return false
	}
}

// Session is the agentledger session the proxy records into.
func (p *Proxy) Session() string { return p.session }

// Server is the MCP server the client talks to.
func (p *Proxy) Server() *mcp.Server { return p.server }

// Close records the session's end and closes the upstream connection.
func (p *Proxy) Close(ctx context.Context) error { return p.end(ctx, "client_closed") }

// end records the session's end, for reason, and closes the upstream
// connection.
func (p *Proxy) end(ctx context.Context, reason string) error {
	p.decide(ctx, p.event("SessionEnd", map[string]any{"reason": reason}))
	return p.upstream.Close()
}

// newServer is the client-facing server: the upstream's capabilities, and
// every request through the mediation.
func (p *Proxy) newServer(init *mcp.InitializeResult) *mcp.Server {
	s := mcp.NewServer(serverInfo(init, p.cfg.Server), serverOptions(init))
	s.AddReceivingMiddleware(p.mediate)
	return s
}

// serverInfo is the server's own name and version, as it declared them.
func serverInfo(init *mcp.InitializeResult, server string) *mcp.Implementation {
	if init != nil && init.ServerInfo != nil {
		impl := *init.ServerInfo
		return &impl
	}
	return &mcp.Implementation{Name: HostID + ":" + server, Version: engine.Version}
}

// serverOptions offer the client what the upstream offers (the proxy
// relays each of it; see relay.go).
func serverOptions(init *mcp.InitializeResult) *mcp.ServerOptions {
	opts := &mcp.ServerOptions{HasTools: true}
	if init != nil && init.Capabilities != nil {
		caps := *init.Capabilities
		opts.Capabilities = &caps
		opts.Instructions = init.Instructions
		if caps.Resources != nil && caps.Resources.Subscribe {
			// The subscription is the server's (the mediation forwards it);
			// the SDK keeps which client asked, for the updates.
			opts.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
			opts.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
		}
	}
	return opts
}

// mediate puts each request from the client through the engine.
func (p *Proxy) mediate(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		return p.handle(ctx, method, req, next)
	}
}

// handle answers one request of the client: tools through the mediation,
// resources and prompts from the upstream, anything else by next (the
// SDK's own: discovery, initialize, ping).
func (p *Proxy) handle(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss != nil {
		p.link.link(ss)
		if init := ss.InitializeParams(); init != nil && init.ProtocolVersion >= statelessRevision {
			p.stateless.Store(true)
		}
	}
	defer p.link.begin(ctx, ss, req.GetParams())()
	res, err := p.answer(ctx, method, req, next)
	if err == nil {
		perSession(res)
	}
	return res, err
}

// perSession marks a result the proxy answers as its session's own
// (cacheScope private, stale at once: what a client sees depends on the
// session's pins, quarantine, manifest and redactions). The SDK fills an
// unset cacheScope only in its own handlers, and clients refuse a result
// whose cacheScope is empty (Claude Code 2.1.331 does).
func perSession(res mcp.Result) {
	var c *mcp.Cacheable
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		c = &r.Cacheable
	case *mcp.ListResourcesResult:
		c = &r.Cacheable
	case *mcp.ListResourceTemplatesResult:
		c = &r.Cacheable
	case *mcp.ListPromptsResult:
		c = &r.Cacheable
	case *mcp.ReadResourceResult:
		c = &r.Cacheable
	default:
		return
	}
	c.CacheScope, c.TTLMs = "private", 0
}

// answer is handle's result before perSession.
func (p *Proxy) answer(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	switch method {
	case "tools/list":
		tools, err := p.tools(ctx)
		if err != nil {
			return nil, err
		}
		return &mcp.ListToolsResult{Tools: tools}, nil
	case "tools/call":
		params, _ := req.GetParams().(*mcp.CallToolParamsRaw)
		if params == nil {
			return nil, errors.New("tools/call: no params")
		}
		if p.stateless.Load() {
			return p.callRoundTrip(ctx, params)
		}
		return p.call(ctx, params)
	case "resources/read":
		params := paramsOf[*mcp.ReadResourceParams](req)
		if params == nil {
			return nil, errors.New("resources/read: no params")
		}
		fwd := &mcp.ReadResourceParams{Meta: forwardedMeta(params.Meta), URI: params.URI}
		return p.read(ctx, method, resourceInput(params.URI), func() mcp.Result { return &mcp.ReadResourceResult{} },
			func(ctx context.Context) (mcp.Result, error) { return p.upstream.ReadResource(ctx, fwd) })
	case "prompts/get":
		params := paramsOf[*mcp.GetPromptParams](req)
		if params == nil {
			return nil, errors.New("prompts/get: no params")
		}
		fwd := &mcp.GetPromptParams{Meta: forwardedMeta(params.Meta), Name: params.Name, Arguments: params.Arguments}
		return p.read(ctx, method, map[string]any{"name": params.Name, "arguments": params.Arguments}, func() mcp.Result { return &mcp.GetPromptResult{} },
			func(ctx context.Context) (mcp.Result, error) { return p.upstream.GetPrompt(ctx, fwd) })
	case "completion/complete", "resources/subscribe", "resources/unsubscribe", "subscriptions/listen", "logging/setLevel", "notifications/initialized", "notifications/roots/list_changed":
		return p.pass(ctx, method, req, next)
	case "resources/list", "resources/templates/list", "prompts/list":
		// Lists name what can be read; reading is judged.
		ctx, cancel := toUpstream(ctx, p.cfg.UpstreamTimeout)
		defer cancel()
		var res mcp.Result
		var err error
		// Only the page cursor goes on (no client _meta).
		switch method {
		case "resources/list":
			res, err = p.upstream.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursorOf(paramsOf[*mcp.ListResourcesParams](req))})
		case "resources/templates/list":
			res, err = p.upstream.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursorOf(paramsOf[*mcp.ListResourceTemplatesParams](req))})
		default:
			res, err = p.upstream.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursorOf(paramsOf[*mcp.ListPromptsParams](req))})
		}
		if err != nil {
			return nil, &jsonrpc.Error{Code: codeUpstream, Message: "agentledger: " + detect.Redact(p.upstreamError(ctx, err).Error())}
		}
		return res, nil
	}
	return next(ctx, method, req)
}

// cursorOf is a list request's page cursor.
func cursorOf[P *mcp.ListResourcesParams | *mcp.ListResourceTemplatesParams | *mcp.ListPromptsParams](p P) string {
	switch x := any(p).(type) {
	case *mcp.ListResourcesParams:
		if x != nil {
			return x.Cursor
		}
	case *mcp.ListResourceTemplatesParams:
		if x != nil {
			return x.Cursor
		}
	case *mcp.ListPromptsParams:
		if x != nil {
			return x.Cursor
		}
	}
	return ""
}

// resourceInput is how a resources/read is judged: its URI, and for a
// file: URI the path it names (percent-decoded, host dropped, cleaned),
// which the engine checks as it checks a file tool's path (secrets,
// protected files).
func resourceInput(uri string) map[string]any {
	in := map[string]any{"uri": uri}
	if u, err := url.Parse(uri); err == nil && strings.EqualFold(u.Scheme, "file") {
		p := u.Path
		if p == "" {
			p = u.Opaque
		}
		in["path"] = path.Clean("/" + p)
	}
	return in
}

func paramsOf[P any](req mcp.Request) P {
	p, _ := req.GetParams().(P)
	return p
}

// listUpstream reads every page of the upstream's tools.
func (p *Proxy) listUpstream(ctx context.Context) ([]*mcp.Tool, error) {
	ctx, cancel := toUpstream(ctx, p.cfg.UpstreamTimeout)
	defer cancel()
	var out []*mcp.Tool
	for t, err := range p.upstream.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcpproxy: list the tools of %s: %w", p.cfg.Server, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// use is one request of the client judged as a tool use: PreToolUse
// before it is forwarded, PostToolUse with what the server answered.
type use struct {
	tool, native string
	input        any
	pin          map[string]any // a tools/call's tool pin
	// forward sends the request to the server (bounded by UpstreamTimeout).
	forward func(context.Context) (mcp.Result, error)
	// result is a new value of the answer's type (to carry it redacted).
	result func() mcp.Result
}

// Where a use stopped, when it did.
const (
	refusedBefore  = "before"   // the call was not forwarded
	failedUpstream = "upstream" // the server failed or did not answer
	withheldAfter  = "after"    // the server's answer is withheld
)

// judge runs a use through the engine: the result the client may see (a
// secret in it redacted), or where it stopped, the verdict that stopped
// it, and for a failed server its error.
func (p *Proxy) judge(ctx context.Context, u use) (mcp.Result, string, engine.HookResponse, error) {
	turn := p.nextTurn()
	members := map[string]any{"turn_id": turn, "tool_name": u.tool, "tool_name_native": u.native, "tool_input": u.input, "artifacts": []any{}}
	if u.pin != nil {
		members["tool_pin"] = u.pin
	}
	// What is decided is recorded even when the client goes meanwhile (a
	// cancelled request): the decisions do not follow its cancel.
	dctx := context.WithoutCancel(ctx)
	pre := p.event("PreToolUse", members)
	st := p.decide(dctx, pre)
	if st.Decision == aarts.Ask && st.PendingID != "" {
		var err error
		if st, err = p.hold(ctx, dctx, pre, st); err != nil {
			st.Decision, st.ReasonCode, st.Reasons = aarts.Deny, "ASK_NOT_FOLLOWED", []string{detect.Redact(err.Error())}
		}
	}
	if st.Decision != aarts.Allow {
		return nil, refusedBefore, st, nil
	}
	res, err := u.forward(ctx)
	var resultValue any
	if err != nil {
		// The failure is the result on record (sealed like any result); the
		// client reads it redacted.
		resultValue = map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": err.Error()}}}
		err = errors.New(detect.Redact(err.Error()))
	} else {
		raw, _ := json.Marshal(res)
		resultValue, _ = decodeExact(raw)
	}
	// A secret in the result never reaches the client: it gets the result
	// redacted, and the record says so (the result itself is recorded as
	// received, sealed where the manifest seals).
	shown, redacted := redactStrings(resultValue)
	recorded, _ := redactHidden(resultValue)
	delete(members, "tool_pin")
	members["tool_result"] = recorded
	if redacted {
		members["result_delivered"] = "redacted"
	}
	// A result the engine could not judge and record is denied (and the
	// failure recorded): it is not handed on.
	post := p.decide(dctx, p.event("PostToolUse", members))
	switch {
	case err != nil:
		return nil, failedUpstream, post, err
	case post.Decision != aarts.Allow:
		return nil, withheldAfter, post, nil
	case redacted:
		raw, _ := json.Marshal(shown)
		out := u.result()
		if json.Unmarshal(raw, out) != nil {
			return nil, withheldAfter, post, nil
		}
		return out, "", post, nil
	}
	return res, "", post, nil
}

// call judges a tools/call, forwards it when allowed, and judges its
// result. A refusal is a tool result with isError and the reason.
func (p *Proxy) call(ctx context.Context, params *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	var args any = map[string]any{}
	raw := params.Arguments
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	args, err := decodeExact(raw)
	if err != nil {
		// Refused and on record: the call was not made (arguments that are
		// not one JSON value, which the SDK does not pass on: in monitor
		// mode too, there is nothing exact to forward).
		p.cfg.Engine.RecordRejected(context.WithoutCancel(ctx), ledger.SessionKey{Tenant: p.cfg.Tenant, Session: p.session}, Via, "tools/call",
			raw, false, "the arguments of "+params.Name+" cannot be read exactly: "+err.Error())
		return refused("agentledger: the arguments are not JSON the proxy can pass on exactly: " + detect.Redact(err.Error())), nil
	}
	res, stopped, st, err := p.judge(ctx, use{tool: aarts.ToolMCPCall, native: "mcp__" + p.cfg.Server + "__" + params.Name, input: args,
		pin: p.toolPin(params.Name), result: func() mcp.Result { return &mcp.CallToolResult{} },
		forward: func(ctx context.Context) (mcp.Result, error) {
			// What was judged is what is sent: the arguments as received.
			return p.callUpstream(ctx, &mcp.CallToolParams{Meta: forwardedMeta(params.Meta), Name: params.Name, Arguments: raw})
		}})
	switch stopped {
	case refusedBefore:
		return refused(reason(st)), nil
	case failedUpstream:
		return refused("agentledger: " + err.Error()), nil // redacted by judge
	case withheldAfter:
		return withheldResult(st), nil
	}
	return res.(*mcp.CallToolResult), nil
}

// read judges a resources/read or prompts/get as a use of the server's
// content (tool mcp_resource, mcp__SERVER__METHOD): its answer taints the
// session like a tool's. A refusal is a JSON-RPC error with the reason.
func (p *Proxy) read(ctx context.Context, method string, input map[string]any, result func() mcp.Result, forward func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	input["server"] = p.cfg.Server
	res, stopped, st, err := p.judge(ctx, use{tool: aarts.ToolMCPResource, native: "mcp__" + p.cfg.Server + "__" + method, input: input, result: result,
		forward: func(ctx context.Context) (mcp.Result, error) {
			ctx, cancel := toUpstream(ctx, p.cfg.UpstreamTimeout)
			defer cancel()
			res, err := forward(ctx)
			if err != nil {
				return nil, p.upstreamError(ctx, err)
			}
			return res, nil
		}})
	switch stopped {
	case refusedBefore, withheldAfter:
		return nil, &jsonrpc.Error{Code: codeRefused, Message: reason(st)}
	case failedUpstream:
		return nil, &jsonrpc.Error{Code: codeUpstream, Message: "agentledger: " + err.Error()}
	}
	return res, nil
}

// JSON-RPC error codes (server-defined range) of a read the proxy refused
// and of a server that failed.
const (
	codeRefused  = -32001
	codeUpstream = -32002
)

// callUpstream forwards a call, bounded by UpstreamTimeout.
func (p *Proxy) callUpstream(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	ctx, cancel := toUpstream(ctx, p.cfg.UpstreamTimeout)
	defer cancel()
	res, err := p.upstream.CallTool(ctx, params)
	if err != nil {
		return nil, p.upstreamError(ctx, err)
	}
	return res, nil
}

// forwardedMeta is what of a client request's _meta goes on to the
// server: its progress token alone. Anything else a client puts in _meta
// would reach the server without being judged or recorded; and the
// protocol's own keys (a stateless client's revision, identity and
// capabilities) belong to the client's connection to the proxy, not to the
// proxy's to the server.
func forwardedMeta(m mcp.Meta) mcp.Meta {
	if t, ok := m["progressToken"]; ok {
		return mcp.Meta{"progressToken": t}
	}
	return nil
}

// decodeExact decodes JSON keeping numbers as written (json.Number: an
// integer beyond 2^53 stays exact in the record and in what is shown).
func decodeExact(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// toUpstream is the context of a request to the server: bounded by
// timeout, cancelled with the client's request, and without its values
// (the SDK keeps the incoming request's protocol revision in its context;
// the proxy's own requests to the server speak their own).
func toUpstream(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(valueless{ctx}, timeout)
}

type valueless struct{ context.Context }

func (valueless) Value(any) any { return nil }

// upstreamError says how a request to the server failed.
func (p *Proxy) upstreamError(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return fmt.Errorf("the server %s did not answer within %s", p.cfg.Server, p.cfg.UpstreamTimeout)
	}
	return fmt.Errorf("the server %s failed: %w", p.cfg.Server, err)
}

// redactStrings is v with every secret in it redacted — in its strings,
// its object keys, and the text a base64 "blob" holds — and whether there
// was one: what a client may see.
func redactStrings(v any) (any, bool) { return redact(v, true) }

// redactHidden is v with the secrets the engine's sealing cannot see
// redacted — in object keys and in base64 blobs — and whether there was
// one: what is recorded (the engine seals the values).
func redactHidden(v any) (any, bool) { return redact(v, false) }

func redact(v any, values bool) (any, bool) {
	switch x := v.(type) {
	case string:
		if !values {
			return x, false
		}
		r := detect.Redact(x)
		return r, r != x
	case []any:
		out, changed := make([]any, len(x)), false
		for i := range x {
			var c bool
			out[i], c = redact(x[i], values)
			changed = changed || c
		}
		return out, changed
	case map[string]any:
		out, changed := make(map[string]any, len(x)), false
		for k, e := range x {
			var c bool
			if b, ok := e.(string); ok && k == "blob" {
				out[k], c = redactBlob(b)
			} else {
				out[k], c = redact(e, values)
			}
			rk := detect.Redact(k)
			if rk != k {
				out[rk], c = out[k], true
				delete(out, k)
			}
			changed = changed || c
		}
		return out, changed
	}
	return v, false
}

// redactBlob is a base64 blob with the secrets in the text it holds
// redacted (re-encoded), and whether there was one.
func redactBlob(b string) (string, bool) {
	raw, err := base64.StdEncoding.DecodeString(b)
	if err != nil {
		return b, false
	}
	r := detect.Redact(string(raw))
	if r == string(raw) {
		return b, false
	}
	return base64.StdEncoding.EncodeToString([]byte(r)), true
}

// hold waits for an approver to resolve an ask, up to HoldFor: approved,
// the call is judged again (the engine releases it once); otherwise the
// answer stands as recorded (a deny or a timeout).
func (p *Proxy) hold(ctx, dctx context.Context, pre []byte, st engine.HookResponse) (engine.HookResponse, error) {
	deadline := time.Now().Add(p.cfg.HoldFor)
	for time.Now().Before(deadline) {
		status, err := p.cfg.Engine.WaitPending(ctx, p.cfg.Tenant, st.PendingID, min(time.Until(deadline), 30*time.Second))
		if err != nil {
			return st, fmt.Errorf("the ask could not be followed: %w", err)
		}
		switch status.Status {
		case "open":
			continue
		case "approved", "allow_always", "allow_similar":
			return p.decide(dctx, pre), nil
		default:
			st.Decision, st.ReasonCode = aarts.Deny, "ASK_"+strings.ToUpper(status.Status)
			return st, nil
		}
	}
	st.Decision, st.ReasonCode = aarts.Deny, "ASK_NOT_ANSWERED"
	return st, nil
}

// decide sends one event through the engine as every transport does
// (Engine.Answer): judged and recorded with the sender's identity; input
// the engine refuses is recorded as Rejected, and a failure to decide as an
// EngineFailure, both answered deny (or, in monitor mode, no decision).
//
// A decision is bounded (Config.DecideTimeout): an engine whose store went away
// (a local engine that stopped) answers, through its failure path, rather
// than holding the client and the proxy for good.
func (p *Proxy) decide(ctx context.Context, ev []byte) engine.HookResponse {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.DecideTimeout)
	defer cancel()
	return p.cfg.Engine.Answer(ctx, engine.Request{Tenant: p.cfg.Tenant, Body: ev, Auth: p.cfg.Auth, Gateway: true, Monitor: p.cfg.Monitor})
}

// DefaultDecideTimeout bounds one decision of the proxy's engine (judging
// and recording one event).
const DefaultDecideTimeout = 30 * time.Second

// event builds a hook event of the session.
func (p *Proxy) event(hook string, members map[string]any) []byte {
	ev := map[string]any{"hook_point": hook, "session_id": p.session, "timestamp": p.cfg.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		"host_id": HostID, "host_version": engine.Version, "aarts_version": "0.1"}
	for k, v := range members {
		ev[k] = v
	}
	b, _ := json.Marshal(ev)
	return b
}

func (p *Proxy) nextTurn() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.turn++
	return fmt.Sprintf("mcp-%d", p.turn)
}

// refused is a tool result that says why the call was not made.
func refused(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// reason is a verdict as the client reads it.
func reason(st engine.HookResponse) string {
	msg := fmt.Sprintf("agentledger: %s (%s)", st.Decision, st.ReasonCode)
	if len(st.Reasons) > 0 {
		msg += ": " + strings.Join(st.Reasons, "; ")
	}
	if st.PendingID != "" && st.Decision == aarts.Ask {
		msg += " (held for an approver as pending " + st.PendingID + ")"
	}
	return msg
}

// withheldResult is the result a denied PostToolUse leaves the client:
// the engine's withheld form (a secret redacted, anything else replaced by
// a notice), isError set.
func withheldResult(st engine.HookResponse) *mcp.CallToolResult {
	raw := st.Withheld
	var res mcp.CallToolResult
	if raw == nil || json.Unmarshal(raw, &res) != nil {
		return refused(reason(st))
	}
	res.IsError = true
	return &res
}

func newSessionID(server string) string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return engine.GatewaySessionPrefix + server + "-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}
