package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/engine"
)

// What is not a tool call passes through the proxy as the protocol
// defines it. The proxy's connection to the server declares what the
// client declared (sampling, elicitation, roots), so the server offers it
// what it would offer the client; and what the server sends on that
// connection reaches the client:
//   - its requests to the client (sampling, elicitation, roots) are relayed
//     on the client's session, sampling and elicitation judged and
//     recorded first (PreLLMRequest, PreUserInput), a sampling's answer
//     recorded after (PostLLMResponse);
//   - its notifications (progress, log messages, list changes, resource
//     updates, a URL elicitation's completion) are relayed, a changed tool
//     list first put through the pins;
//   - the client's completion requests, subscriptions and log level go on to
//     the server.

// clientLink is the client's side, as the proxy last saw it: its session
// and the requests of it in hand (whose contexts carry the stream a
// notification about them goes on).
type clientLink struct {
	send     sync.Mutex // held while a notification is sent: they go in order
	mu       sync.Mutex
	ss       *mcp.ServerSession
	ready    chan struct{}              // closed when ss is first known
	queued   []func(*mcp.ServerSession) // notifications that came before
	inflight map[*inflight]struct{}
}

// inflight is one request of the client in hand.
type inflight struct {
	ctx   context.Context
	ss    *mcp.ServerSession // the session it came on (a stateless client's is its own)
	token string             // its progress token, as JSON ("" without)
}

func newClientLink() *clientLink {
	return &clientLink{ready: make(chan struct{}), inflight: map[*inflight]struct{}{}}
}

// link makes ss the client's session; notifications held until then go
// to it, in order.
func (l *clientLink) link(ss *mcp.ServerSession) {
	if ss == nil {
		return
	}
	l.send.Lock()
	defer l.send.Unlock()
	l.mu.Lock()
	if l.ss == ss {
		l.mu.Unlock()
		return
	}
	if l.ss == nil {
		close(l.ready)
	}
	l.ss = ss
	queued := l.queued
	l.queued = nil
	l.mu.Unlock()
	for _, f := range queued {
		f(ss)
	}
}

// maxQueued bounds the notifications held for a client not linked yet.
const maxQueued = 256

// notify sends a notification to the client's session, or holds it
// until the session is known.
func (l *clientLink) notify(f func(*mcp.ServerSession)) {
	l.send.Lock()
	defer l.send.Unlock()
	l.mu.Lock()
	ss := l.ss
	if ss == nil {
		if len(l.queued) < maxQueued {
			l.queued = append(l.queued, f)
		}
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	f(ss)
}

// session waits for the client's session.
func (l *clientLink) session(ctx context.Context) (*mcp.ServerSession, error) {
	select {
	case <-l.ready:
	case <-ctx.Done():
		return nil, fmt.Errorf("no client to relay to: %w", ctx.Err())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ss, nil
}

// begin notes a request of the client in hand until done is called.
func (l *clientLink) begin(ctx context.Context, ss *mcp.ServerSession, params mcp.Params) (done func()) {
	f := &inflight{ctx: ctx, ss: ss}
	if params != nil && !reflect.ValueOf(params).IsNil() {
		if t, ok := params.GetMeta()["progressToken"]; ok {
			f.token = tokenKey(t)
		}
	}
	l.mu.Lock()
	l.inflight[f] = struct{}{}
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.inflight, f)
		l.mu.Unlock()
	}
}

// request is the client's request a notification or request of the
// server belongs to: the one whose progress token is token, or any in
// hand (a server asks its client during a call); nil when none is.
func (l *clientLink) request(token string) *inflight {
	l.mu.Lock()
	defer l.mu.Unlock()
	var latest *inflight
	for f := range l.inflight {
		if token != "" && f.token == token {
			return f
		}
		latest = f
	}
	if token != "" {
		return nil
	}
	return latest
}

func tokenKey(t any) string {
	b, _ := json.Marshal(t)
	return string(b)
}

// onStream is ctx (the server's request to the proxy: its deadline and
// cancel) carrying the values of the client's request it belongs to, so
// that the SDK sends it on that request's stream.
type onStream struct {
	context.Context
	values context.Context
}

func (c onStream) Value(k any) any { return c.values.Value(k) }

// streamOf is where something of the server's goes to the client: on
// the stream of the client's request it belongs to (its session, with
// ctx carrying that request's values, so that the SDK sends it there), or
// on ss.
func (p *Proxy) streamOf(ctx context.Context, ss *mcp.ServerSession, token string) (context.Context, *mcp.ServerSession) {
	if f := p.link.request(token); f != nil {
		if f.ss != nil {
			ss = f.ss
		}
		return onStream{ctx, f.ctx}, ss
	}
	return ctx, ss
}

// upstreamClient is the proxy's client of the server: it declares what
// the client declared (caps; nil: nothing) and relays what the server
// sends.
func (p *Proxy) upstreamClient(caps *mcp.ClientCapabilities) *mcp.Client {
	mirrored := &mcp.ClientCapabilities{}
	if caps != nil {
		c := *caps
		mirrored = &c
	}
	opts := &mcp.ClientOptions{
		Capabilities: mirrored,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			go p.toolsChanged()
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			p.featureChanged("prompt")
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			p.featureChanged("resource")
		},
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if p.serving.Load() {
				p.server.ResourceUpdated(context.WithoutCancel(ctx), req.Params)
			}
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			ctx = context.WithoutCancel(ctx)
			p.link.notify(func(ss *mcp.ServerSession) {
				ctx, ss := p.streamOf(ctx, ss, "")
				ss.Log(ctx, req.Params)
			})
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			ctx = context.WithoutCancel(ctx)
			token := tokenKey(req.Params.ProgressToken)
			p.link.notify(func(ss *mcp.ServerSession) {
				ctx, ss := p.streamOf(ctx, ss, token)
				ss.NotifyProgress(ctx, req.Params)
			})
		},
		ElicitationCompleteHandler: func(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			ctx = context.WithoutCancel(ctx)
			p.link.notify(func(ss *mcp.ServerSession) { ss.NotifyElicitationComplete(ctx, req.Params) })
		},
	}
	if mirrored.Sampling != nil {
		opts.CreateMessageWithToolsHandler = p.sample
	}
	if mirrored.Elicitation != nil {
		opts.ElicitationHandler = p.elicit
	}
	c := mcp.NewClient(&mcp.Implementation{Name: HostID, Version: engine.Version}, opts)
	// The server's roots/list is the client's: asked of it each time.
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "roots/list" {
				return next(ctx, method, req)
			}
			return askClient(ctx, p, "roots/list", &mcp.ListRootsParams{}, func(ctx context.Context, ss *mcp.ServerSession) (*mcp.ListRootsResult, error) {
				return ss.ListRoots(ctx, &mcp.ListRootsParams{})
			})
		}
	})
	return c
}

// rootsChanged tells the server the client's roots changed. The SDK's
// client says so when its own roots change, and has no other way: a
// placeholder root is added or taken away (the server's roots/list is
// answered by the client, so it never sees it).
func (p *Proxy) rootsChanged() {
	const placeholder = "agentledger:roots-changed"
	p.mu.Lock()
	p.rootsToggle = !p.rootsToggle
	add := p.rootsToggle
	p.mu.Unlock()
	if add {
		p.client.AddRoots(&mcp.Root{URI: placeholder})
	} else {
		p.client.RemoveRoots(placeholder)
	}
}

// toolsChanged puts the server's changed tool list through the pins (a
// changed or new tool is quarantined and asked about) and tells the
// client its list changed.
func (p *Proxy) toolsChanged() {
	if !p.serving.Load() {
		// Still connecting (a server declares tools right after
		// initialize): the client is told once it is there.
		p.link.notify(func(*mcp.ServerSession) { go p.toolsChanged() })
		return
	}
	ctx, cancel := toUpstream(context.Background(), p.cfg.UpstreamTimeout)
	defer cancel()
	if _, err := p.tools(ctx); err != nil {
		return
	}
	p.listChanged()
}

// featureChanged tells connected clients the server's prompts or
// resources changed, as listChanged does for tools.
func (p *Proxy) featureChanged(kind string) {
	if !p.serving.Load() {
		p.link.notify(func(*mcp.ServerSession) { go p.featureChanged(kind) })
		return
	}
	s := p.server
	const placeholder = "agentledger:list-changed"
	switch kind {
	case "prompt":
		s.AddPrompt(&mcp.Prompt{Name: placeholder}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return nil, fmt.Errorf("not a prompt")
		})
		s.RemovePrompts(placeholder)
	case "resource":
		s.AddResource(&mcp.Resource{Name: placeholder, URI: placeholder}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, fmt.Errorf("not a resource")
		})
		s.RemoveResources(placeholder)
	}
}

// sample relays the server's sampling request to the client, judged
// first as a request to the client's model (PreLLMRequest: the prompt is
// the server's) and its answer recorded (PostLLMResponse). A deny is the
// server's error.
func (p *Proxy) sample(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
	prompt, _ := json.Marshal(req.Params)
	turn := p.nextTurn()
	if err := p.judgeAsk(ctx, "PreLLMRequest", "sampling/createMessage", map[string]any{"turn_id": turn, "full_prompt": string(prompt)}); err != nil {
		return nil, err
	}
	res, err := askClient(ctx, p, "sampling/createMessage", req.Params, func(ctx context.Context, ss *mcp.ServerSession) (*mcp.CreateMessageWithToolsResult, error) {
		return ss.CreateMessageWithTools(ctx, req.Params)
	})
	text := ""
	if err != nil {
		text = "error: " + err.Error()
	} else if raw, mErr := json.Marshal(res); mErr == nil {
		text = string(raw)
	}
	p.decide(context.WithoutCancel(ctx), p.event("PostLLMResponse", map[string]any{"turn_id": turn, "response_text": detect.Redact(text)}))
	return res, err
}

// elicit relays the server's elicitation to the client, judged first as
// input the server asks of the user (PreUserInput: the server's message
// and what it asks for). A deny is the server's error.
func (p *Proxy) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	asked, _ := json.Marshal(req.Params)
	if err := p.judgeAsk(ctx, "PreUserInput", "elicitation/create", map[string]any{"turn_id": p.nextTurn(), "raw_input": string(asked)}); err != nil {
		return nil, err
	}
	return askClient(ctx, p, "elicitation/create", req.Params, func(ctx context.Context, ss *mcp.ServerSession) (*mcp.ElicitResult, error) {
		return ss.Elicit(ctx, req.Params)
	})
}

// judgeAsk judges a request of the server to the client as the hook event
// point (its members, and which request it is), recorded; a deny is
// refused, but in monitor mode.
func (p *Proxy) judgeAsk(ctx context.Context, point, request string, members map[string]any) error {
	members["environment"] = map[string]any{"mcp_proxy": map[string]any{"server": p.cfg.Server, "request": request}}
	st := p.decide(context.WithoutCancel(ctx), p.event(point, members))
	if st.Decision == aarts.Deny && !p.cfg.Monitor {
		return fmt.Errorf("%s", reason(st))
	}
	return nil
}

// askClient asks the client what its server asks it (method, params): a
// stateless client through the call in hand (see roundTrip), any other
// with direct, on the stream of the client's request in hand.
func askClient[R mcp.InputResponse](ctx context.Context, p *Proxy, method string, params mcp.InputRequest, direct func(context.Context, *mcp.ServerSession) (R, error)) (R, error) {
	var none R
	if p.stateless.Load() {
		res, err := p.askStateless(ctx, params)
		if err != nil {
			return none, err
		}
		r, ok := res.(R)
		if !ok {
			return none, fmt.Errorf("the client answered %s with %T", method, res)
		}
		return r, nil
	}
	ss, err := p.link.session(ctx)
	if err != nil {
		return none, err
	}
	ctx, ss = p.streamOf(ctx, ss, "")
	return direct(ctx, ss)
}

// pass relays a request of the client that takes no action (nothing to
// judge): a completion, a subscription and the log level go on to the
// server, and the SDK keeps its own account of them; the client's
// initialized and its roots' change are noted.
func (p *Proxy) pass(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	uctx, cancel := toUpstream(ctx, p.cfg.UpstreamTimeout)
	defer cancel()
	var err error
	switch method {
	case "completion/complete":
		params := paramsOf[*mcp.CompleteParams](req)
		if params == nil {
			return nil, errors.New("completion/complete: no params")
		}
		fwd := *params
		fwd.Meta = forwardedMeta(params.Meta)
		res, err := p.upstream.Complete(uctx, &fwd)
		if err != nil {
			return nil, p.relayedError(uctx, err)
		}
		return res, nil
	case "resources/subscribe":
		if params := paramsOf[*mcp.SubscribeParams](req); params != nil {
			err = p.upstream.Subscribe(uctx, &mcp.SubscribeParams{URI: params.URI})
		}
	case "resources/unsubscribe":
		if params := paramsOf[*mcp.UnsubscribeParams](req); params != nil {
			err = p.upstream.Unsubscribe(uctx, &mcp.UnsubscribeParams{URI: params.URI})
		}
	case "logging/setLevel":
		if params := paramsOf[*mcp.SetLoggingLevelParams](req); params != nil {
			err = p.upstream.SetLoggingLevel(uctx, &mcp.SetLoggingLevelParams{Level: params.Level})
		}
	case "subscriptions/listen":
		// A stateless client's subscriptions (2026-07-28) last as long as
		// its listen request: the server's are made for as long.
		params := paramsOf[*mcp.SubscriptionsListenParams](req)
		var uris []string
		if params != nil && params.Notifications != nil {
			uris = params.Notifications.ResourceSubscriptions
		}
		for _, uri := range uris {
			if err := p.upstream.Subscribe(uctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				return nil, p.relayedError(uctx, err)
			}
		}
		defer func() {
			ctx, cancel := toUpstream(context.WithoutCancel(ctx), p.cfg.UpstreamTimeout)
			defer cancel()
			for _, uri := range uris {
				p.upstream.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
			}
		}()
	case "notifications/roots/list_changed":
		go p.rootsChanged()
	case "notifications/initialized":
		res, err := next(ctx, method, req)
		// The server filters its log messages by the level the client
		// set (the proxy forwards it), and sends them all before one is
		// set: so the proxy's session relays them all until then.
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if init := p.upstream.InitializeResult(); ok && init != nil && init.Capabilities != nil && init.Capabilities.Logging != nil {
			next(ctx, "logging/setLevel", &mcp.ServerRequest[*mcp.SetLoggingLevelParams]{Session: ss, Params: &mcp.SetLoggingLevelParams{Level: "debug"}})
		}
		return res, err
	}
	if err != nil {
		return nil, p.relayedError(uctx, err)
	}
	return next(ctx, method, req)
}

// relayedError is the client's error for a relayed request that failed:
// the server's own JSON-RPC error as it gave it (redacted), or the
// proxy's for a server that failed or did not answer.
func (p *Proxy) relayedError(ctx context.Context, err error) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return &jsonrpc.Error{Code: rpc.Code, Message: detect.Redact(rpc.Message), Data: rpc.Data}
	}
	return &jsonrpc.Error{Code: codeUpstream, Message: "agentledger: " + detect.Redact(p.upstreamError(ctx, err).Error())}
}
