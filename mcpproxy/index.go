package mcpproxy

import (
	"context"
	"sync"
	"time"
)

// PinIndex answers, for the engine that judges a host's hooks, how the
// gateway pins an MCP server's tool (engine.GatewayPins): from the
// gateway's sessions in the record, with the rules the gateway itself
// pins by (loadPins: trust on first use, re-pinned only by an approver).
// A pin is only ever the gateway's own record, so the most an agent that
// starts a gateway of its own can do is pin a server the tenant's gateway
// never served; a server the host starts behind the gateway is held to the
// pins its gateway serves by (a tool that differs is quarantined there).
type PinIndex struct {
	ledger Ledger
	now    func() time.Time

	mu    sync.Mutex
	books map[string]indexed // tenant NUL server → its pins as last read
}

// indexed is one server's pins as read at a time.
type indexed struct {
	book *pinBook
	at   time.Time
}

// How long a server's pins as read are used before the record is read
// again, and how soon a tool they lack sends the index back to it (a
// gateway that connected since).
const (
	pinIndexFresh = 2 * time.Second
	pinIndexMiss  = 250 * time.Millisecond
	pinIndexMax   = 1024 // servers kept
)

// NewPinIndex reads pins from l (a *store.Store).
func NewPinIndex(l Ledger) *PinIndex {
	return &PinIndex{ledger: l, now: time.Now, books: map[string]indexed{}}
}

// ToolPin implements engine.GatewayPins: the gateway's pin of server's
// tool for tenant, nil when there is none or the record cannot be read
// (then the call is judged without it, as before any gateway).
func (x *PinIndex) ToolPin(ctx context.Context, tenant, server, tool string) map[string]any {
	key := tenant + "\x00" + server
	now := x.now()
	x.mu.Lock()
	ix, ok := x.books[key]
	x.mu.Unlock()
	if ok {
		if p := ix.book.pinOf(tool); now.Sub(ix.at) < pinIndexFresh && (p != nil || now.Sub(ix.at) < pinIndexMiss) {
			return p
		}
	}
	book, err := loadPins(ctx, x.ledger, tenant, server)
	if err != nil {
		return nil
	}
	x.mu.Lock()
	if len(x.books) >= pinIndexMax {
		clear(x.books)
	}
	x.books[key] = indexed{book: book, at: now}
	x.mu.Unlock()
	return book.pinOf(tool)
}
