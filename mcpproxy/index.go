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
	load  sync.Mutex         // one reading of the record at a time
}

// indexed is one server's pins as read at a time.
type indexed struct {
	book *pinBook
	at   time.Time
}

// How long a server's pins as read are used before the record is read
// again: reading them lists the tenant's sessions, so it is done at most
// this often per server, never per call. A server no gateway pinned (a
// host's server not behind the gateway, the common case) is read again
// only after pinIndexNone; a call judged meanwhile without a pin is judged
// as it was before any gateway, and the gateway itself quarantines what
// its pins do not cover.
const (
	pinIndexFresh = 2 * time.Second
	pinIndexNone  = 30 * time.Second
	pinIndexMax   = 1024 // servers kept
)

// NewPinIndex reads pins from l (a *store.Store).
func NewPinIndex(l Ledger) *PinIndex {
	return &PinIndex{ledger: l, now: time.Now, books: map[string]indexed{}}
}

// ToolPin implements engine.GatewayPins: the gateway's pin of server's
// tool for tenant, nil when there is none or the record cannot be read
// (then the call is judged without it, as before any gateway). Calls that
// find the pins stale at once wait for one reading of the record.
func (x *PinIndex) ToolPin(ctx context.Context, tenant, server, tool string) map[string]any {
	key := tenant + "\x00" + server
	if book := x.fresh(key); book != nil {
		return book.pinOf(tool)
	}
	x.load.Lock()
	defer x.load.Unlock()
	if book := x.fresh(key); book != nil {
		return book.pinOf(tool) // read meanwhile
	}
	book, err := loadPins(ctx, x.ledger, tenant, server)
	if err != nil {
		return nil
	}
	x.mu.Lock()
	if len(x.books) >= pinIndexMax {
		clear(x.books)
	}
	x.books[key] = indexed{book: book, at: x.now()}
	x.mu.Unlock()
	return book.pinOf(tool)
}

// fresh is the server's pins as last read, nil when they are stale.
func (x *PinIndex) fresh(key string) *pinBook {
	x.mu.Lock()
	ix, ok := x.books[key]
	x.mu.Unlock()
	if !ok {
		return nil
	}
	life := pinIndexFresh
	if len(ix.book.names()) == 0 {
		life = pinIndexNone
	}
	if x.now().Sub(ix.at) >= life {
		return nil
	}
	return ix.book
}
