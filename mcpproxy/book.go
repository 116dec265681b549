package mcpproxy

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// Ledger is what the proxy reads of the record to carry pins across
// sessions (*store.Store is one).
type Ledger interface {
	Sessions(ctx context.Context, f store.Filter) ([]store.SessionInfo, error)
	ReadSession(ctx context.Context, k ledger.SessionKey, fn func(store.Msg) error) error
}

// pinBook is the pins of one server for one tenant, shared by every
// session the proxy opens: tool name → digest of its pinned entry, and
// whether that entry declares the tool read-only and closed-world.
type pinBook struct {
	mu       sync.Mutex
	pins     map[string]string
	readOnly map[string]bool
	// defs are the pinned entries themselves, as declared (and recorded:
	// tool_definitions), where known: what an approver of a change
	// compares the new entry with.
	defs map[string]json.RawMessage
}

func newPinBook() *pinBook {
	return &pinBook{pins: map[string]string{}, readOnly: map[string]bool{}, defs: map[string]json.RawMessage{}}
}

// definition is a pinned tool's entry, nil where it is not known.
func (b *pinBook) definition(name string) json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.defs[name]
}

func (b *pinBook) get(name string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.pins[name]
	return d, ok
}

// set pins a tool's entry (digest, and the entry itself where known),
// read-only where the entry declares it.
func (b *pinBook) set(name, digest string, readOnly bool, def json.RawMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pins[name] = digest
	b.readOnly[name] = readOnly
	if def != nil {
		b.defs[name] = def
	} else {
		delete(b.defs, name)
	}
}

// pinOf is a pinned tool as a PreToolUse's tool_pin says it (nil: none).
func (b *pinBook) pinOf(name string) map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.pins[name]
	if !ok {
		return nil
	}
	out := map[string]any{"status": "pinned", "pinned": d}
	if b.readOnly[name] {
		out["read_only"] = true
	}
	return out
}

func (b *pinBook) names() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.pins))
	for n := range b.pins {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// pinned is a tool's entry as a declaration asks to pin it.
type pinned struct {
	digest   string
	readOnly bool
	def      json.RawMessage
}

// approvedResolutions are the resolutions that let what was asked stand.
var approvedResolutions = []string{"approved", "allow_always", "allow_similar"}

// loadPins reads a server's pins from the record of a tenant: its proxied
// sessions (mcp-SERVER-…) in the order they began. A tool's pin is the
// digest the first declaration ever recorded for it (trust on first use),
// replaced or added only where an approver's resolution approved a
// re-declaration that changed or added it. A later session can therefore
// never move or add a pin by declaring other digests. Only the gateway
// writes these sessions and their declarations (engine.GatewayMembers).
func loadPins(ctx context.Context, l Ledger, tenant, server string) (*pinBook, error) {
	book := newPinBook()
	if l == nil {
		return book, nil
	}
	infos, err := l.Sessions(ctx, store.Filter{Tenant: tenant})
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: the pins of %s: %w", server, err)
	}
	infos = slices.DeleteFunc(infos, func(i store.SessionInfo) bool {
		return !strings.HasPrefix(i.Session, engine.GatewaySessionPrefix+server+"-")
	})
	slices.SortFunc(infos, func(a, b store.SessionInfo) int {
		return cmp.Or(cmp.Compare(a.FirstTs, b.FirstTs), strings.Compare(a.Session, b.Session))
	})
	for i, info := range infos {
		redeclared := map[uint64]map[string]pinned{} // seq of a re-declaration → the entries it asks to pin
		err := l.ReadSession(ctx, info.Key(), func(m store.Msg) error {
			e, err := ledger.Decode(m.Data, ledger.Limits{})
			if err != nil {
				return err
			}
			switch e.EventType() {
			case "PreMCPConnect":
				var ev struct {
					ServerID string                     `json:"server_id"`
					Pins     map[string]string          `json:"tool_pins"`
					ReadOnly []string                   `json:"read_only_tools"`
					Defs     map[string]json.RawMessage `json:"tool_definitions"`
					Changes  *struct {
						Changed []string `json:"changed"`
						Added   []string `json:"added"`
					} `json:"tool_changes"`
				}
				if json.Unmarshal(e.Payload(), &ev) != nil || ev.ServerID != server {
					return nil
				}
				if ev.Changes == nil {
					// Trust on first use: only the first session's
					// declarations pin without an approver, and only
					// names not pinned yet (its connection's, then the
					// first list its client got: see trustFirstList).
					// The live proxy declares any later new tool as added.
					if len(book.pins) == 0 || i == 0 {
						for name, d := range ev.Pins {
							if _, known := book.pins[name]; known {
								continue
							}
							book.pins[name], book.readOnly[name] = d, slices.Contains(ev.ReadOnly, name)
							if def := ev.Defs[name]; def != nil {
								book.defs[name] = def
							}
						}
					}
					return nil
				}
				asked := map[string]pinned{}
				for _, name := range append(ev.Changes.Changed, ev.Changes.Added...) {
					asked[name] = pinned{ev.Pins[name], slices.Contains(ev.ReadOnly, name), ev.Defs[name]}
				}
				redeclared[e.Seq()] = asked
			case ledger.EventResolution:
				var r struct {
					ForSeq     uint64 `json:"for_seq"`
					Resolution string `json:"resolution"`
				}
				if json.Unmarshal(e.Payload(), &r) == nil && slices.Contains(approvedResolutions, r.Resolution) {
					for name, p := range redeclared[r.ForSeq] {
						book.pins[name], book.readOnly[name] = p.digest, p.readOnly
						if p.def != nil {
							book.defs[name] = p.def
						} else {
							delete(book.defs, name)
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("mcpproxy: the pins of %s in %s: %w", server, info.Session, err)
		}
	}
	return book, nil
}
