package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/ledger"
)

// A stateless client (2026-07-28) has no connection on which the server's
// requests could reach it. When the server asks the client something
// while one of its calls runs (sampling, elicitation, roots), the call goes
// on at the server, and the client's request is answered input_required
// with the server's requests (multi-round-trip, SEP-2322); the client's
// retry names the call (its requestState) and brings the answers, which go
// to the server, and waits for what comes next: another request, or the
// call's result. The call is judged once (its PreToolUse before it first
// went on, its PostToolUse on its result).

// roundTrip is one call of a stateless client that its server may ask
// the client about while it runs.
type roundTrip struct {
	id     string
	asks   chan *input      // the server's requests, as they come
	result chan roundResult // the call's result (buffered)
	done   chan struct{}    // closed when the call has ended

	mu      sync.Mutex
	pending map[string]*input // asked of the client, by input id
	n       int
}

// input is one request of the server to the client, waiting for its
// answer.
type input struct {
	params mcp.InputRequest
	reply  chan inputReply // buffered
}

type inputReply struct {
	res mcp.InputResponse
	err error
}

type roundResult struct {
	res *mcp.CallToolResult
	err error
}

// callRoundTrip is a stateless client's tools/call: a new call is judged
// and runs on its own; a retry (requestState) brings the answers to what
// its call asked. Either waits for the call's next request to the client
// or its result.
func (p *Proxy) callRoundTrip(ctx context.Context, params *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	var t *roundTrip
	if params.RequestState != "" {
		p.mu.Lock()
		t = p.trips[params.RequestState]
		p.mu.Unlock()
		if t == nil {
			// Refused and on record: nothing is forwarded.
			raw, _ := json.Marshal(params)
			p.cfg.Engine.RecordRejected(context.WithoutCancel(ctx), ledger.SessionKey{Tenant: p.cfg.Tenant, Session: p.session}, Via, "tools/call",
				raw, false, "requestState names no call of this session that waits for input")
			return refused("agentledger: no call of this session waits for this requestState (it ended, or timed out)"), nil
		}
		t.answer(params.InputResponses)
	} else {
		t = p.startRoundTrip(ctx, params)
	}
	return p.wait(ctx, t)
}

// startRoundTrip runs a call, judged and recorded as any, on its own: its
// client's request may end (input_required) before it does. The server's
// requests made in the call's context (a 2026-07-28 server's input
// requests, which the proxy's client fulfils) are asked through it; an
// older server's come outside any, and go to the latest call.
func (p *Proxy) startRoundTrip(ctx context.Context, params *mcp.CallToolParamsRaw) *roundTrip {
	t := &roundTrip{id: newSessionID("call"), asks: make(chan *input), result: make(chan roundResult, 1), done: make(chan struct{}), pending: map[string]*input{}}
	p.mu.Lock()
	p.trips[t.id] = t
	p.current = t
	p.mu.Unlock()
	go func() {
		res, err := p.call(context.WithValue(context.WithoutCancel(ctx), tripKey{}, t), params)
		p.mu.Lock()
		if p.current == t {
			p.current = nil
		}
		p.mu.Unlock()
		t.result <- roundResult{res, err}
		close(t.done)
		// A result no retry came for is let go after as long as the
		// server's requests are waited for.
		time.AfterFunc(p.cfg.HoldFor, func() { p.endTrip(t) })
	}()
	return t
}

type tripKey struct{}

// endTrip forgets a call: its result was taken, or never will be.
func (p *Proxy) endTrip(t *roundTrip) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.trips, t.id)
}

// wait answers the client's request: the call's result, or its server's
// requests to the client (as many as are asked at once), input_required.
func (p *Proxy) wait(ctx context.Context, t *roundTrip) (*mcp.CallToolResult, error) {
	select {
	case r := <-t.result:
		p.endTrip(t)
		return r.res, r.err
	case in := <-t.asks:
		requests := mcp.InputRequestMap{}
		t.mu.Lock()
		for more := true; more; {
			t.n++
			id := fmt.Sprintf("input-%d", t.n)
			t.pending[id], requests[id] = in, in.params
			select {
			case in = <-t.asks:
			default:
				more = false
			}
		}
		t.mu.Unlock()
		return inputRequired(requests, t.id)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// answer hands the client's answers to the requests waiting for them.
func (t *roundTrip) answer(responses mcp.InputResponseMap) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, res := range responses {
		if in := t.pending[id]; in != nil {
			delete(t.pending, id)
			in.reply <- inputReply{res: res}
		}
	}
}

// inputRequired is a tools/call result that asks the client for input
// (the SDK sets the result type only as it decodes one).
func inputRequired(requests mcp.InputRequestMap, state string) (*mcp.CallToolResult, error) {
	raw, err := json.Marshal(map[string]any{"content": []any{}, "inputRequests": requests, "requestState": state, "resultType": "input_required"})
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: the server's requests to the client: %w", err)
	}
	res := &mcp.CallToolResult{}
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, fmt.Errorf("mcpproxy: the server's requests to the client: %w", err)
	}
	return res, nil
}

// askStateless asks a stateless client what the server asks it, through
// the call in hand (see roundTrip), waiting for the answer at most
// HoldFor.
func (p *Proxy) askStateless(ctx context.Context, params mcp.InputRequest) (mcp.InputResponse, error) {
	t, _ := ctx.Value(tripKey{}).(*roundTrip)
	if t == nil {
		p.mu.Lock()
		t = p.current
		p.mu.Unlock()
	}
	if t == nil {
		return nil, errors.New("a stateless client (MCP 2026-07-28) can be asked only during one of its calls")
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.HoldFor)
	defer cancel()
	in := &input{params: params, reply: make(chan inputReply, 1)}
	select {
	case t.asks <- in:
	case <-t.done:
		return nil, errors.New("the client's call ended")
	case <-ctx.Done():
		return nil, fmt.Errorf("the client did not come back for the server's request: %w", ctx.Err())
	}
	select {
	case r := <-in.reply:
		return r.res, r.err
	case <-t.done:
		return nil, errors.New("the client's call ended")
	case <-ctx.Done():
		return nil, fmt.Errorf("the client did not answer the server's request within %s: %w", p.cfg.HoldFor.Round(time.Second), ctx.Err())
	}
}
