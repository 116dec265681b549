package engine

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/fleet"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/reducer"
	"github.com/agentledger/agentledger/seal"
	"github.com/agentledger/agentledger/toolchange"
)

// DefaultPendingTimeout is how long an ask, STEP_UP or DEFER waits for its
// resolution before it is recorded as a timeout (a deny).
const DefaultPendingTimeout = 5 * time.Minute

// Errors of resolutions.
var (
	// ErrNoPending means no open approval has that id (never issued,
	// already resolved, timed out, or another tenant's).
	ErrNoPending = errors.New("no such pending approval")
)

// pendings holds the open approvals of one engine process. Their ids are
// bearer capabilities (128 random bits) and never recorded; the ledger
// records the verdict that opened them and the Resolution that closed them.
type pendings struct {
	mu      sync.Mutex
	timeout time.Duration
	byID    map[string]*pendingItem
	// closed are resolved approvals, kept for reducer.ReleaseTTLMs so that
	// a caller waiting on one (GET /v1/pending/{id}) learns how it ended.
	closed map[string]*pendingItem
}

type pendingItem struct {
	id     string
	key    ledger.SessionKey
	forSeq uint64
	timer  *time.Timer
	info   PendingApproval
	// done is closed once the approval is resolved (res set).
	done chan struct{}
	// resolving is set while a resolution of it is being recorded.
	resolving bool
	res       *Resolution
	// failures counts the resolutions of it that could not be recorded
	// since it was due: each waits longer before the next try.
	failures int
}

// maxRetryWait bounds the wait before a due approval's timeout is tried
// again after it could not be recorded.
const maxRetryWait = time.Minute

// retryWait is how long an approval whose resolution could not be
// recorded waits before it is tried again: until its deadline, and past
// it a second, doubling with each failure up to maxRetryWait — never at
// once, which would spin as long as the record fails (a store gone, a
// ledger refusing writes). Called with mu held.
func (p *pendingItem) retryWait(now time.Time) time.Duration {
	if left := time.UnixMilli(p.info.ExpiresUnixMs).Sub(now); left > 0 {
		return left
	}
	wait := min(time.Second<<min(p.failures, 6), maxRetryWait)
	p.failures++
	return wait
}

// maxClosed bounds pendings.closed.
const maxClosed = 4096

// PendingStatus is how an approval stands (GET /v1/pending/{id}).
type PendingStatus struct {
	PendingID string `json:"pending_id"`
	Session   string `json:"session_id"`
	ForSeq    uint64 `json:"for_seq"`
	// Status is "open", or the resolution: approved, denied, timeout, ...
	Status string `json:"status"`
	// Seq is the Resolution's, once resolved.
	Seq uint64 `json:"seq,omitempty"`
	// ActionSHA256 names the asked action.
	ActionSHA256 string `json:"action_sha256"`
	// ReleasedUntilUnixMs, after an approval of a call the host did not
	// run, is until when the same call sent again is allowed once.
	ReleasedUntilUnixMs int64 `json:"released_until_unix_ms,omitempty"`
}

// WaitPending returns how the approval id of tenant stands, waiting up to
// wait for an open one to be resolved. An id never issued, of another
// tenant, or resolved longer ago than the release window is ErrNoPending.
//
// In a fleet, an approval another engine holds is waited for there.
func (e *Engine) WaitPending(ctx context.Context, tenant, id string, wait time.Duration) (PendingStatus, error) {
	st, err := e.waitHere(ctx, tenant, id, wait)
	if errors.Is(err, ErrNoPending) && e.fleet != nil {
		return e.waitInFleet(ctx, tenant, id, wait)
	}
	return st, err
}

// waitHere is WaitPending for an approval this engine holds.
func (e *Engine) waitHere(ctx context.Context, tenant, id string, wait time.Duration) (PendingStatus, error) {
	e.pending.mu.Lock()
	p := e.pending.byID[id]
	if p == nil {
		if p = e.pending.closed[id]; p != nil && e.now().UnixMilli()-p.res.AtMs > reducer.ReleaseTTLMs {
			p = nil
		}
	}
	e.pending.mu.Unlock()
	if p == nil || p.key.Tenant != tenant {
		return PendingStatus{}, ErrNoPending
	}
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	case <-ctx.Done():
		return PendingStatus{}, ctx.Err()
	}
	st := PendingStatus{PendingID: id, Session: p.key.Session, ForSeq: p.forSeq, Status: "open", ActionSHA256: p.info.ActionSHA256}
	select {
	case <-p.done:
		st.Status, st.Seq = p.res.Resolution, p.res.Seq
		if p.res.Resolution == "approved" && p.info.HookPoint == "PreToolUse" {
			st.ReleasedUntilUnixMs = p.res.AtMs + reducer.ReleaseTTLMs
		}
	default:
	}
	return st, nil
}

// PendingApproval is one open ask, STEP_UP or DEFER with the context an
// approver needs to judge it (GET /v1/pending).
type PendingApproval struct {
	PendingID    string   `json:"pending_id"`
	Session      string   `json:"session_id"`
	ForSeq       uint64   `json:"for_seq"`
	HookPoint    string   `json:"hook_point"`
	AARMDecision string   `json:"aarm_decision"`
	ReasonCode   string   `json:"reason_code"`
	Reasons      []string `json:"reasons,omitempty"`
	Artifacts    []string `json:"artifacts,omitempty"`
	Tool         string   `json:"tool,omitempty"`
	ToolNative   string   `json:"tool_native,omitempty"`
	// ToolInput is the asked call's input, as the host sent it; Cwd the
	// directory it runs in.
	ToolInput any    `json:"tool_input,omitempty"`
	Cwd       string `json:"cwd,omitempty"`
	// ActionSHA256 names the action: a resolution must send it back.
	ActionSHA256 string `json:"action_sha256"`
	// ExpiresUnixMs is when the ask times out into a recorded deny.
	ExpiresUnixMs int64 `json:"expires_unix_ms"`
	// Host is the asking event's host (its host_id: an agent host, or
	// the MCP gateway's "agentledger-mcp-proxy"); AskedBy the identity that sent
	// it (VerdictRecord.AskedBy: token, principal, agent), which only an
	// approval for it can release.
	Host    string `json:"host,omitempty"`
	AskedBy string `json:"asked_by,omitempty"`
	// Server and ToolChanges, for the MCP gateway's re-declaration of a
	// server (PreMCPConnect): the server, and each tool that changed,
	// appeared or went since it was pinned — both definitions, their diff
	// and the scan's flags with the words that raised them, as recorded
	// (sealed values sealed, secrets redacted).
	Server      string              `json:"server,omitempty"`
	ToolChanges []toolchange.Change `json:"tool_changes,omitempty"`
}

func newPendingID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
}

// ErrWrongAction means a resolution names another action than the one
// asked about.
var ErrWrongAction = errors.New("the resolution names another action than the one asked about")

// openPending registers an approval for the event at info.ForSeq and arms
// its timeout.
func (e *Engine) openPending(k ledger.SessionKey, info PendingApproval, wait time.Duration) string {
	p := &pendingItem{id: newPendingID(), key: k, forSeq: info.ForSeq, info: info, done: make(chan struct{})}
	p.info.PendingID, p.info.Session = p.id, k.Session
	p.info.ExpiresUnixMs = e.now().Add(max(wait, 0)).UnixMilli()
	// Register and arm under the lock: the timer's Resolve takes the same
	// lock, so it sees the item and its timer even when it fires at once.
	e.pending.mu.Lock()
	defer e.pending.mu.Unlock()
	e.pending.byID[p.id] = p
	p.timer = time.AfterFunc(max(wait, 0), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// A failure to record here is retried when the session is next
		// loaded: rebuild times out what is overdue.
		_, _ = e.resolveHere(ctx, k.Tenant, p.id, "timeout", p.info.ActionSHA256, receipt.Authenticated{Principal: "engine", By: "engine"})
	})
	return p.id
}

// Pending lists tenant's open approvals, oldest first: in a fleet, those
// every engine holds.
func (e *Engine) Pending(ctx context.Context, tenant string) []PendingApproval {
	out := e.pendingHere(tenant)
	if e.fleet == nil {
		return out
	}
	answers, err := e.fleet.Gather(ctx, fleetPending, []byte(tenant), time.Second)
	if err != nil {
		e.warn(fmt.Errorf("open approvals of the other engines: %w", err))
	}
	for _, a := range answers {
		var more []PendingApproval
		if json.Unmarshal(a, &more) == nil {
			out = append(out, more...)
		}
	}
	sortPending(out)
	// One ask may be held twice: by the engine that asked and, re-armed
	// from the ledger, by its partition's new owner. Either id resolves
	// it; the list names it once.
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(p PendingApproval) bool {
		k := fmt.Sprintf("%s\x00%d", p.Session, p.ForSeq)
		dup := seen[k]
		seen[k] = true
		return dup
	})
}

func sortPending(out []PendingApproval) {
	slices.SortFunc(out, func(a, b PendingApproval) int {
		return cmp.Or(cmp.Compare(a.ExpiresUnixMs, b.ExpiresUnixMs), cmp.Compare(a.Session, b.Session), cmp.Compare(a.ForSeq, b.ForSeq))
	})
}

// pendingHere lists the open approvals this engine holds.
func (e *Engine) pendingHere(tenant string) []PendingApproval {
	e.pending.mu.Lock()
	defer e.pending.mu.Unlock()
	var out []PendingApproval
	for _, p := range e.pending.byID {
		if p.key.Tenant == tenant {
			out = append(out, p.info)
		}
	}
	sortPending(out)
	return out
}

// Resolution is what a resolution recorded.
type Resolution struct {
	ForSeq     uint64 `json:"for_seq"`
	Resolution string `json:"resolution"`
	Seq        uint64 `json:"seq"`
	Hash       string `json:"hash"`
	AtMs       int64  `json:"at_unix_ms"`
}

// Resolve answers the open approval id of tenant with resolution (approved,
// denied, allow_always, allow_similar, deny_always, deny_similar, or the
// engine's timeout) and records it as a signed Resolution envelope in the
// approval's session, naming who resolved it as by was authenticated. The
// resolution must name the asked action (action, its ActionSHA256): one
// for another action is ErrWrongAction. The session's snapshot folds it:
// *_always and *_similar remember the verdict's artifacts for the session.
//
// In a fleet, an approval another engine holds is resolved there.
func (e *Engine) Resolve(ctx context.Context, tenant, id, resolution, action string, by receipt.Authenticated) (*Resolution, error) {
	r, err := e.resolveHere(ctx, tenant, id, resolution, action, by)
	if errors.Is(err, ErrNoPending) && e.fleet != nil {
		return e.resolveInFleet(ctx, fleetResolution{Tenant: tenant, ID: id, Resolution: resolution, Action: action, By: by})
	}
	return r, err
}

// resolveHere resolves an approval this engine holds.
func (e *Engine) resolveHere(ctx context.Context, tenant, id, resolution, action string, by receipt.Authenticated) (*Resolution, error) {
	if !aarts.IsResolution(resolution) {
		return nil, &aarts.ValidationError{Field: "resolution", Msg: fmt.Sprintf("%q is not a resolution", resolution)}
	}
	e.pending.mu.Lock()
	p := e.pending.byID[id]
	if p == nil || p.key.Tenant != tenant || p.resolving {
		e.pending.mu.Unlock()
		return nil, ErrNoPending
	}
	if action != p.info.ActionSHA256 {
		e.pending.mu.Unlock()
		return nil, fmt.Errorf("%w: the ask at seq %d is about action %s", ErrWrongAction, p.forSeq, p.info.ActionSHA256)
	}
	// Still findable while it is recorded (a long poll arriving now waits
	// for it), but no one else resolves it.
	p.resolving = true
	e.pending.mu.Unlock()
	p.timer.Stop()
	r, err := e.recordResolution(ctx, p.key, p.forSeq, resolution, by)
	if e.fleet != nil && (errors.Is(err, store.ErrNotOwner) || errors.Is(err, store.ErrFenced)) {
		// The session's partition moved since the ask: its owner records
		// the resolution, and the id stays good.
		r, err = e.resolveRemote(ctx, p.key, p.forSeq, resolution, by)
		if errors.Is(err, fleet.ErrLocal) {
			// This engine took the partition back meanwhile.
			r, err = e.recordResolution(ctx, p.key, p.forSeq, resolution, by)
		}
	}
	e.pending.mu.Lock()
	defer e.pending.mu.Unlock()
	p.resolving = false
	if err != nil && !errors.Is(err, ErrNoPending) {
		// The approval is still open: it times out as it would have, or,
		// already due, is tried again later.
		p.timer.Reset(p.retryWait(e.now()))
		return nil, err
	}
	delete(e.pending.byID, id)
	if r != nil {
		p.res = r
		if len(e.pending.closed) >= maxClosed {
			e.pending.sweep(e.now())
		}
		e.pending.closed[id] = p
		close(p.done)
	}
	return r, err
}

// sweep lets go of closed approvals past their release window, and of
// the oldest half when all are within it. Called with mu held.
func (ps *pendings) sweep(now time.Time) {
	var ids []string
	for id, p := range ps.closed {
		if now.UnixMilli()-p.res.AtMs > reducer.ReleaseTTLMs {
			delete(ps.closed, id)
		} else {
			ids = append(ids, id)
		}
	}
	if len(ids) >= maxClosed/2 {
		slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(ps.closed[a].res.AtMs, ps.closed[b].res.AtMs) })
		for _, id := range ids[:len(ids)/2] {
			delete(ps.closed, id)
		}
	}
}

// recordResolution appends the Resolution of the approval at forSeq.
func (e *Engine) recordResolution(ctx context.Context, k ledger.SessionKey, forSeq uint64, resolution string, by receipt.Authenticated) (*Resolution, error) {
	var res *Resolution
	err := e.inSession(ctx, k, func(en *entry) error {
		i := slices.IndexFunc(en.state.Snapshot.Pending, func(p reducer.Pending) bool { return p.ForSeq == forSeq })
		if i < 0 {
			return ErrNoPending // resolved by another engine meanwhile
		}
		rec, _ := json.Marshal(aarts.ResolutionRecord{ForSeq: forSeq, Resolution: resolution, By: cmp.Or(by.Principal, by.By),
			AuthenticatedBy: by.By, Scope: "session", ActionSHA256: en.state.Snapshot.Pending[i].Action})
		env, err := e.appendOne(ctx, k, en, ledger.EventResolution, rec, e.stamp(en.state).UnixMilli())
		if err == nil {
			res = &Resolution{ForSeq: forSeq, Resolution: resolution, Seq: env.Seq(), Hash: env.Hash(), AtMs: env.TsUnixMs()}
		}
		return err
	})
	if err != nil && !errors.Is(err, ErrNoPending) {
		return nil, fmt.Errorf("record resolution %s: %w", k, err)
	}
	return res, err
}

// armLoaded re-arms the approvals a rebuilt session still has open: their
// ids were lost with the process that issued them, so they can only time
// out, at their original deadline (or now, if that has passed).
func (e *Engine) armLoaded(k ledger.SessionKey, s *decide.Session) {
	for _, p := range s.Snapshot.Pending {
		e.pending.mu.Lock()
		known := false
		for _, it := range e.pending.byID {
			known = known || it.key == k && it.forSeq == p.ForSeq
		}
		e.pending.mu.Unlock()
		if known {
			continue
		}
		wait := e.pending.timeout - e.now().Sub(time.UnixMilli(s.Snapshot.LastMs))
		e.openPending(k, PendingApproval{ForSeq: p.ForSeq, HookPoint: p.HookPoint, AARMDecision: p.AARMDecision,
			ReasonCode: p.ReasonCode, Artifacts: p.Artifacts, ActionSHA256: p.Action, AskedBy: p.AskedBy, ToolNative: p.Tool, Cwd: p.Cwd}, wait)
	}
}

// approvalOf is the approval context of a step that asks.
func (e *Engine) approvalOf(st *decide.Step) PendingApproval {
	p := PendingApproval{ForSeq: st.Envelope.Seq(), HookPoint: st.Event.HookPoint, AARMDecision: st.Record.AARMDecision,
		ReasonCode: st.Record.ReasonCode, Reasons: st.Record.Verdict.Reasons, Artifacts: st.Record.Verdict.Artifacts,
		ToolNative: st.Event.NativeTool(), ToolInput: e.shown(recordedToolInput(st)), Cwd: st.Event.Cwd, ActionSHA256: st.Record.ActionSHA256,
		Host: st.Event.HostID, AskedBy: st.Record.AskedBy}
	if a := action.Of(st.Event); a != nil {
		p.Tool = a.Tool
	}
	if st.Event.HookPoint == "PreMCPConnect" {
		p.Server, p.ToolChanges = e.declaredChanges(st)
	}
	return p
}

// declaredChanges is the server and the tool changes a recorded
// PreMCPConnect declares, as an approver is shown them.
func (e *Engine) declaredChanges(st *decide.Step) (string, []toolchange.Change) {
	var ev map[string]any
	d := json.NewDecoder(bytes.NewReader(seal.Render(st.Envelope.Payload())))
	d.UseNumber()
	if d.Decode(&ev) != nil {
		return "", nil
	}
	shown, err := json.Marshal(e.shown(ev))
	if err != nil {
		return "", nil
	}
	server, _ := e.shown(ev["server_id"]).(string)
	return server, toolchange.Of(shown)
}

// recordedToolInput is the asked call's input as recorded: what the
// ledger keeps sealed is shown to approvers as sealed (‹sealed:kind›).
func recordedToolInput(st *decide.Step) any {
	var ev struct {
		ToolInput any `json:"tool_input"`
	}
	if json.Unmarshal(seal.Render(st.Envelope.Payload()), &ev) != nil {
		return nil
	}
	return ev.ToolInput
}

// PendingTimeout is how long an ask the engine holds for an approver
// waits before it times out into a recorded deny.
func (e *Engine) PendingTimeout() time.Duration { return e.pending.timeout }
