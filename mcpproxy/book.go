package mcpproxy

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
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
// session the proxy opens: tool name → digest of its pinned entry.
type pinBook struct {
	mu   sync.Mutex
	pins map[string]string
}

func newPinBook() *pinBook { return &pinBook{pins: map[string]string{}} }

func (b *pinBook) get(name string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.pins[name]
	return d, ok
}

func (b *pinBook) set(name, digest string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pins[name] = digest
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
	for _, info := range infos {
		redeclared := map[uint64]map[string]string{} // seq of a re-declaration → the digests it asks to pin
		err := l.ReadSession(ctx, info.Key(), func(m store.Msg) error {
			e, err := ledger.Decode(m.Data, ledger.Limits{})
			if err != nil {
				return err
			}
			switch e.EventType() {
			case "PreMCPConnect":
				var ev struct {
					ServerID string            `json:"server_id"`
					Pins     map[string]string `json:"tool_pins"`
					Changes  *struct {
						Changed []string `json:"changed"`
						Added   []string `json:"added"`
					} `json:"tool_changes"`
				}
				if json.Unmarshal(e.Payload(), &ev) != nil || ev.ServerID != server {
					return nil
				}
				if ev.Changes == nil {
					// Trust on first use: only the first declaration ever
					// pins without an approver (the live proxy declares
					// any later new tool as added).
					if len(book.pins) == 0 {
						maps.Copy(book.pins, ev.Pins)
					}
					return nil
				}
				asked := map[string]string{}
				for _, name := range append(ev.Changes.Changed, ev.Changes.Added...) {
					asked[name] = ev.Pins[name]
				}
				redeclared[e.Seq()] = asked
			case ledger.EventResolution:
				var r struct {
					ForSeq     uint64 `json:"for_seq"`
					Resolution string `json:"resolution"`
				}
				if json.Unmarshal(e.Payload(), &r) == nil && slices.Contains(approvedResolutions, r.Resolution) {
					for name, d := range redeclared[r.ForSeq] {
						book.pins[name] = d
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
