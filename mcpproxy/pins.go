package mcpproxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/policy"
)

// Tool pinning. The first list of the server's tools (the first for the
// tenant, across sessions: see loadPins) pins each tool: the SHA-256 of
// the JCS form (RFC 8785) of its whole entry — name, description, input
// and output schemas, annotations — recorded in the connection's
// PreMCPConnect (tool_pins). Each later list, in this session or a later
// one, is compared with the pins: a tool whose entry changed, or one that appeared, is
// quarantined — left out of the list the client gets, and its calls denied
// (TOOL_CHANGED, from the PreToolUse's tool_pin) — and the server is
// declared again (PreMCPConnect with tool_changes), which the policy asks
// about. An approver's resolution of that ask re-pins the tools and lifts
// the quarantine. A tool that disappeared is recorded (removed).

// pin is a tool's digest.
func pin(t *mcp.Tool) string {
	raw, err := json.Marshal(t)
	if err != nil {
		return ""
	}
	canon, err := ledger.Canonicalize(raw, ledger.Limits{})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// quarantined is a tool held back: why ("changed" or "unpinned") and its
// current digest.
type quarantined struct {
	status, current string
}

// trustOnFirstUse pins every tool of a server's first list ever (for the
// tenant): nothing was pinned before.
func (p *Proxy) trustOnFirstUse(tools []*mcp.Tool) {
	if len(p.book.names()) > 0 {
		return
	}
	for _, t := range tools {
		p.book.set(t.Name, pin(t), readOnly(t), definition(t))
	}
}

// trustFirstList pins, in the server's first session ever, the tools of
// the first list the client gets that the connection's list did not have:
// a server may declare tools right after initialize (those the client's
// capabilities enable), and they are as new to the pins as the first
// ones. The declaration that pins them is recorded (without tool_changes:
// loadPins takes such declarations of the first session alone).
func (p *Proxy) trustFirstList(ctx context.Context, list []*mcp.Tool) {
	p.mu.Lock()
	tofu := p.tofu
	p.tofu = false
	p.mu.Unlock()
	if !tofu {
		return
	}
	current := map[string]string{}
	added := false
	for _, t := range list {
		current[t.Name] = pin(t)
		if _, known := p.book.get(t.Name); !known {
			p.book.set(t.Name, current[t.Name], readOnly(t), definition(t))
			added = true
		}
	}
	if added {
		p.declare(ctx, list, current, nil)
	}
}

// changes compares a list with the pins, quarantining what changed or
// appeared since. It returns what is new to record (nil: nothing), and
// the list the client may see.
func (p *Proxy) changes(tools []*mcp.Tool) (map[string]any, []*mcp.Tool, map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var changed, added, removed []any
	current := map[string]string{}
	var visible []*mcp.Tool
	for _, t := range tools {
		d := pin(t)
		current[t.Name] = d
		p.listed[t.Name] = listedTool{digest: d, readOnly: readOnly(t), def: definition(t)}
		pinned, known := p.book.get(t.Name)
		switch {
		case known && pinned == d:
			delete(p.quarantine, t.Name) // back as pinned
			visible = append(visible, t)
			continue
		case p.quarantine[t.Name].current == d:
			// already held and recorded
		case known:
			p.quarantine[t.Name] = quarantined{"changed", d}
			changed = append(changed, t.Name)
		default:
			p.quarantine[t.Name] = quarantined{"unpinned", d}
			added = append(added, t.Name)
		}
		if p.cfg.Monitor {
			// Held on record (its calls say how), listed all the same.
			visible = append(visible, t)
		}
	}
	for _, name := range p.book.names() {
		if _, ok := current[name]; !ok && !slices.Contains(p.gone, name) {
			p.gone = append(p.gone, name)
			removed = append(removed, name)
		}
	}
	if changed == nil && added == nil && removed == nil {
		return nil, visible, current
	}
	sortAny := func(xs []any) []any {
		slices.SortFunc(xs, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
		if xs == nil {
			return []any{}
		}
		return xs
	}
	return map[string]any{"changed": sortAny(changed), "added": sortAny(added), "removed": sortAny(removed)}, visible, current
}

// listedTool is what the proxy keeps of a tool as last listed.
type listedTool struct {
	digest   string
	readOnly bool
	def      json.RawMessage
}

// definition is a tool's entry as the server declared it (what its pin
// is the digest of).
func definition(t *mcp.Tool) json.RawMessage {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil
	}
	return raw
}

// readOnly says whether a server declares a tool read-only and
// closed-world (annotations readOnlyHint true, openWorldHint false): it
// neither changes its environment nor reaches outside it. The pin covers
// the annotations.
func readOnly(t *mcp.Tool) bool {
	a := t.Annotations
	return a != nil && a.ReadOnlyHint && a.OpenWorldHint != nil && !*a.OpenWorldHint
}

// toolPin is what a PreToolUse says of its tool's pin: its status, its
// pinned digest, and read_only for a pinned tool its pinned entry declares
// read-only and closed-world.
func (p *Proxy) toolPin(name string) map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	pinned, known := p.book.get(name)
	if q, ok := p.quarantine[name]; ok {
		return map[string]any{"status": q.status, "pinned": pinned, "current": q.current}
	}
	if !known {
		// A name no list ever pinned (a tool the server added since, or
		// none at all) is not called on trust.
		return map[string]any{"status": "unpinned", "pinned": ""}
	}
	out := map[string]any{"status": "pinned", "pinned": pinned}
	if l := p.listed[name]; l.digest == pinned && l.readOnly {
		out["read_only"] = true
	}
	return out
}

// tools lists the upstream's tools for the client: changes since the
// pins are recorded and judged, and what is quarantined is left out.
func (p *Proxy) tools(ctx context.Context) ([]*mcp.Tool, error) {
	// One list at a time: a client's list waits for a relist the server's
	// list change started, so what it is answered is already quarantined
	// and declared.
	p.listing.Lock()
	defer p.listing.Unlock()
	list, err := p.listUpstream(ctx)
	if err != nil {
		return nil, err
	}
	p.trustFirstList(ctx, list)
	changes, visible, current := p.changes(list)
	visible = p.permitted(visible)
	if changes == nil {
		return visible, nil
	}
	st := p.declare(ctx, list, current, changes)
	if st.Decision == aarts.Ask && st.PendingID != "" {
		go p.repinWhenApproved(st.PendingID, current)
	}
	return visible, nil
}

// declare records and judges the server's declaration (PreMCPConnect):
// its identity, its tools with their digests as now listed (tool_pins)
// and their flags, and what changed since the pins (tool_changes; none on
// a list that matches them).
func (p *Proxy) declare(ctx context.Context, list []*mcp.Tool, current map[string]string, changes map[string]any) engine.HookResponse {
	pins := map[string]any{}
	for k, v := range current {
		pins[k] = v
	}
	defs := map[string]any{}
	for _, t := range list {
		if d := definition(t); d != nil {
			defs[t.Name] = d
		}
	}
	members := map[string]any{"server_id": p.cfg.Server, "transport": p.cfg.Transport, "server_uri": p.cfg.URI, "source": p.cfg.Source,
		"declared_tools": names(list), "tool_pins": pins, "read_only_tools": readOnlyNames(list), "tool_definitions": defs}
	if changes != nil {
		members["tool_changes"] = changes
		// What each changed or removed tool was pinned as, for whoever
		// approves the change (where the pin's entry is known).
		before := map[string]any{}
		for _, key := range []string{"changed", "removed"} {
			for _, name := range changes[key].([]any) {
				if d := p.book.definition(name.(string)); d != nil {
					before[name.(string)] = d
				}
			}
		}
		members["pinned_definitions"] = before
	}
	return p.decide(ctx, p.event("PreMCPConnect", withFlags(members, list)))
}

// repinWhenApproved waits for an approver to answer the re-declaration;
// approved, the quarantined tools are pinned as they now are, and the
// client is told the list changed.
func (p *Proxy) repinWhenApproved(id string, current map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.HoldFor)
	defer cancel()
	for ctx.Err() == nil {
		status, err := p.cfg.Engine.WaitPending(ctx, p.cfg.Tenant, id, 30*time.Second)
		if err != nil {
			return
		}
		switch status.Status {
		case "open":
			continue
		case "approved", "allow_always", "allow_similar":
			p.mu.Lock()
			for name, q := range p.quarantine {
				if current[name] == q.current {
					l := p.listed[name]
					if l.digest != q.current {
						l = listedTool{}
					}
					p.book.set(name, q.current, l.readOnly, l.def)
					delete(p.quarantine, name)
				}
			}
			p.mu.Unlock()
			p.listChanged()
		}
		return
	}
}

// listChanged tells connected clients that the tool list changed. The
// SDK sends notifications/tools/list_changed when a server's own tools
// change, and has no other way to send it: a placeholder tool is added
// and removed (the proxy answers tools/list itself, so no client ever sees
// it), which the SDK reports as one change.
func (p *Proxy) listChanged() {
	if p.server == nil {
		return
	}
	const placeholder = "agentledger.tools-changed"
	p.server.AddTool(&mcp.Tool{Name: placeholder, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return refused("not a tool"), nil
		})
	p.server.RemoveTools(placeholder)
}

// permitted keeps the tools the manifest declares (its tools: mcp_call
// for every MCP tool, or mcp__SERVER__… names and globs): least privilege,
// as the policy judges their calls (PERMISSION_UNDECLARED otherwise).
func (p *Proxy) permitted(tools []*mcp.Tool) []*mcp.Tool {
	if p.cfg.Monitor {
		return tools // their calls are recorded as what enforcing would deny
	}
	m := p.cfg.Engine.Decider().Policy.Manifest()
	return slices.DeleteFunc(tools, func(t *mcp.Tool) bool {
		return !policy.ToolListed(m.Tools, aarts.ToolMCPCall, "mcp__"+p.cfg.Server+"__"+t.Name)
	})
}

// readOnlyNames are the names of the tools the server declares read-only
// and closed-world, sorted.
func readOnlyNames(tools []*mcp.Tool) []any {
	out := []any{}
	for _, t := range tools {
		if readOnly(t) {
			out = append(out, t.Name)
		}
	}
	slices.SortFunc(out, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	return out
}

func names(tools []*mcp.Tool) []any {
	out := make([]any, 0, len(tools))
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}
