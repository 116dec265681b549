package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/fleet"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/receipt"
)

// WithFleet makes the engine a member of a fleet (package fleet): it
// decides the sessions of the partitions it owns, passes every other call
// to its partition's owner, and records only under its partitions' fences.
// Approvals resolve on whichever engine holds them, and the list of open
// approvals is the whole fleet's.
func WithFleet(m *fleet.Member) Option {
	return func(e *Engine) error {
		if m == nil {
			return errors.New("fleet: nil")
		}
		e.fleet = m
		return nil
	}
}

// Fleet is the engine's fleet membership (nil outside a fleet).
func (e *Engine) Fleet() *fleet.Member { return e.fleet }

// Broadcast kinds the engine answers in a fleet.
const (
	fleetResolve = "resolve"
	fleetPending = "pending"
	fleetWait    = "wait"
)

// StartFleet registers the engine's fleet handlers and starts taking
// partitions. The store must fence its appends with the fleet's Owner.
func (e *Engine) StartFleet(st *store.Store) error {
	if e.fleet == nil {
		return errors.New("engine: not in a fleet (WithFleet)")
	}
	if err := st.SetFencer(context.Background(), e.fleet.Fence); err != nil {
		return fmt.Errorf("engine: fleet: %w", err)
	}
	e.fleet.Handle(fleetResolve, e.serveResolve)
	e.fleet.Handle(fleetPending, e.servePending)
	e.fleet.Handle(fleetWait, e.serveWait)
	return e.fleet.Start(e.serveForwarded)
}

// forwarded is a call one engine passes to the owner of its session's
// partition, with everything it was decided under where it arrived.
type forwarded struct {
	Tenant  string                `json:"tenant"`
	Auth    receipt.Authenticated `json:"auth"`
	Payload []byte                `json:"payload"`
	Policy  string                `json:"policy"`
	Monitor bool                  `json:"monitor,omitempty"`
	// Records, instead of a call, are records the sender owes the
	// session Session (failures, rejections): the owner appends them.
	Session string    `json:"session,omitempty"`
	Records []spooled `json:"records,omitempty"`
	// Resolution, instead of a call, resolves the ask at ForSeq of
	// Session, which an engine that no longer owns it held.
	Resolution *remoteResolution `json:"resolution,omitempty"`
}

// remoteResolution is a resolution of an ask its holder passes to the
// session's owner.
type remoteResolution struct {
	ForSeq     uint64                `json:"for_seq"`
	Resolution string                `json:"resolution"`
	By         receipt.Authenticated `json:"by"`
}

// forwardedStep is the owner's answer: the recorded event and verdict.
type forwardedStep struct {
	Event      []byte `json:"event,omitempty"`
	Verdict    []byte `json:"verdict,omitempty"`
	PendingID  string `json:"pending_id,omitempty"`
	Engine     string `json:"engine"`
	InputError string `json:"input_error,omitempty"`
	// Recorded are the seqs of forwarded records.
	Recorded map[string]uint64 `json:"recorded,omitempty"`
	// Resolved is what a forwarded resolution recorded (NoPending: the
	// ask was resolved already).
	Resolved  *Resolution `json:"resolved,omitempty"`
	NoPending bool        `json:"no_pending,omitempty"`
}

// decideEvent records ev with its verdict, on this engine or, in a fleet,
// on the owner of the session's partition. An owner that finds its
// partition fenced by another engine (it lost the lease while paused)
// records nothing and passes the call on.
func (e *Engine) decideEvent(ctx context.Context, tenant string, auth receipt.Authenticated, ev *aarts.Event, payload []byte, d *decide.Decider, monitor bool) (*decide.Step, error) {
	if e.fleet == nil {
		return e.decideHere(ctx, tenant, auth, ev, payload, d, monitor)
	}
	if tenant == "" {
		tenant = ledger.DefaultTenant
	}
	key := ledger.SessionKey{Tenant: tenant, Session: ev.SessionID}
	id := newPendingID()
	for {
		if _, err := e.fleet.Owner(key); err != nil {
			st, err := e.forward(ctx, key, id, forwarded{Tenant: tenant, Auth: auth, Payload: payload, Policy: d.Policy.Digest(), Monitor: monitor}, ev)
			if !errors.Is(err, fleet.ErrLocal) {
				return st, err
			}
		}
		st, err := e.decideHere(ctx, tenant, auth, ev, payload, d, monitor)
		switch {
		case errors.Is(err, store.ErrFenced):
			e.fleet.Fenced(key, err)
			e.warn(fmt.Errorf("%s: not recorded here: %w", key, err))
			continue
		case errors.Is(err, store.ErrNotOwner) && ctx.Err() == nil:
			continue
		}
		if st != nil {
			st.Engine = e.fleet.ID()
		}
		return st, err
	}
}

// forward has the owner of key's partition decide the call, and rebuilds
// the step it recorded from the envelopes it answers with.
func (e *Engine) forward(ctx context.Context, key ledger.SessionKey, id string, req forwarded, ev *aarts.Event) (*decide.Step, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	out, err := e.fleet.Forward(ctx, key, id, body)
	if err != nil {
		return nil, err
	}
	var a forwardedStep
	if err := json.Unmarshal(out, &a); err != nil {
		return nil, fmt.Errorf("fleet: answer of the owner of %s: %w", key, err)
	}
	if a.InputError != "" {
		return nil, &aarts.ValidationError{Field: "event", Msg: a.InputError}
	}
	st := &decide.Step{Event: ev, PendingID: a.PendingID, Engine: a.Engine}
	if st.Envelope, err = ledger.Decode(a.Event, e.decider.Limits); err == nil {
		st.Verdict, err = ledger.Decode(a.Verdict, e.decider.Limits)
	}
	if err == nil {
		err = json.Unmarshal(st.Verdict.Payload(), &st.Record)
	}
	if err == nil && (st.Envelope.Key() != key || st.Envelope.EventType() != ev.HookPoint || st.Verdict.Key() != key ||
		st.Verdict.EventType() != ledger.EventVerdict || st.Verdict.PrevHash() != st.Envelope.Hash()) {
		err = errors.New("not this call's event and verdict")
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: the record engine %s answered for %s: %w", a.Engine, key, err)
	}
	r := st.Record
	st.SnapshotHash = r.SnapshotHash
	st.Decision = &policy.Decision{Decision: r.Verdict.Decision, AARMDecision: r.AARMDecision, ReasonCode: r.ReasonCode,
		MatchedRuleID: r.Verdict.MatchedRuleID, Reasons: r.Verdict.Reasons, PolicyDigest: r.PolicyDigest}
	return st, nil
}

// serveForwarded decides a call another engine passed to this one, the
// owner of its partition.
func (e *Engine) serveForwarded(ctx context.Context, data []byte) ([]byte, error) {
	var req forwarded
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("a forwarded call that is not one: %w", err)
	}
	if len(req.Records) > 0 {
		return e.recordForwarded(ctx, req)
	}
	if req.Resolution != nil {
		return e.resolveForwarded(ctx, req)
	}
	if req.Policy != e.decider.Policy.Digest() {
		// The owner decides under its own policy, which the verdict
		// names; a fleet whose engines differ (a roll-out in progress, a
		// data directory at another path, which the manifest protects) is
		// said once per policy.
		if _, seen := e.fleetPolicies.LoadOrStore(req.Policy, true); !seen {
			e.warn(fmt.Errorf("fleet: calls arrive from an engine with policy %.12s; this engine decides them under its own, %.12s", req.Policy, e.decider.Policy.Digest()))
		}
	}
	ev, err := aarts.ParseEvent(req.Payload)
	if err != nil {
		return json.Marshal(forwardedStep{Engine: e.fleet.ID(), InputError: err.Error()})
	}
	st, err := e.decideHere(ctx, req.Tenant, req.Auth, ev, req.Payload, e.decider, req.Monitor)
	switch {
	case errors.Is(err, store.ErrFenced):
		e.fleet.Fenced(ledger.SessionKey{Tenant: req.Tenant, Session: ev.SessionID}, err)
		e.warn(fmt.Errorf("%s/%s: not recorded here: %w", req.Tenant, ev.SessionID, err))
		return nil, fleet.ErrMoved
	case errors.Is(err, store.ErrNotOwner):
		return nil, fleet.ErrMoved
	case decide.IsInputError(err):
		return json.Marshal(forwardedStep{Engine: e.fleet.ID(), InputError: err.Error()})
	case err != nil:
		return nil, err
	}
	return json.Marshal(forwardedStep{Event: st.Envelope.Bytes(), Verdict: st.Verdict.Bytes(), PendingID: st.PendingID, Engine: e.fleet.ID()})
}

// fleetResolution is a resolution asked of the fleet.
type fleetResolution struct {
	Tenant     string                `json:"tenant"`
	ID         string                `json:"id"`
	Resolution string                `json:"resolution"`
	Action     string                `json:"action"`
	By         receipt.Authenticated `json:"by"`
}

// resolveInFleet asks the engine holding approval id to resolve it.
func (e *Engine) resolveInFleet(ctx context.Context, r fleetResolution) (*Resolution, error) {
	body, _ := json.Marshal(r)
	out, err := e.fleet.Ask(ctx, fleetResolve, body, 2*time.Second)
	if errors.Is(err, fleet.ErrSilent) {
		return nil, ErrNoPending
	}
	var remote *fleet.RemoteError
	if errors.As(err, &remote) && remote.Msg == ErrWrongAction.Error() {
		return nil, ErrWrongAction
	}
	if err != nil {
		return nil, err
	}
	var res Resolution
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("fleet: resolution answer: %w", err)
	}
	return &res, nil
}

func (e *Engine) serveResolve(ctx context.Context, data []byte) ([]byte, error) {
	var r fleetResolution
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fleet.ErrSilent
	}
	res, err := e.resolveHere(ctx, r.Tenant, r.ID, r.Resolution, r.Action, r.By)
	switch {
	case errors.Is(err, ErrNoPending):
		return nil, fleet.ErrSilent
	case errors.Is(err, ErrWrongAction):
		return nil, ErrWrongAction
	case err != nil:
		return nil, err
	}
	return json.Marshal(res)
}

// servePending answers every list request, empty or not, so that the
// asker stops waiting once every engine answered.
func (e *Engine) servePending(_ context.Context, data []byte) ([]byte, error) {
	list := e.pendingHere(string(data))
	if list == nil {
		list = []PendingApproval{}
	}
	return json.Marshal(list)
}

// flushRemote has the owner of k's partition append the records this
// engine owes session k; each is let go of (and unspooled) once the owner
// recorded it.
func (e *Engine) flushRemote(ctx context.Context, k ledger.SessionKey, recorded func(id string, seq uint64)) error {
	en := e.acquire(k)
	defer e.release(en)
	en.failMu.Lock()
	owed := en.failures
	en.failures = nil
	en.failMu.Unlock()
	if len(owed) == 0 {
		return nil
	}
	putBack := func() {
		en.failMu.Lock()
		en.failures = append(owed, en.failures...)
		en.failMu.Unlock()
	}
	body, err := json.Marshal(forwarded{Tenant: k.Tenant, Session: k.Session, Records: owed})
	if err != nil {
		putBack()
		return err
	}
	out, err := e.fleet.Forward(ctx, k, newPendingID(), body)
	if err != nil {
		putBack()
		if errors.Is(err, fleet.ErrLocal) {
			return fmt.Errorf("%s: this engine took the session's partition meanwhile; the records stay queued: %w", k, store.ErrConflict)
		}
		return err
	}
	var a forwardedStep
	if err := json.Unmarshal(out, &a); err != nil {
		putBack()
		return fmt.Errorf("fleet: answer of the owner of %s: %w", k, err)
	}
	for _, r := range owed {
		if recorded != nil {
			if seq, ok := a.Recorded[r.ID]; ok {
				recorded(r.ID, seq)
			}
		}
		e.unspool(r.ID)
	}
	return nil
}

// recordForwarded appends records another engine owed a session of a
// partition this engine owns.
func (e *Engine) recordForwarded(ctx context.Context, req forwarded) ([]byte, error) {
	k := ledger.SessionKey{Tenant: req.Tenant, Session: req.Session}
	for _, r := range req.Records {
		if err := spoolValid(r); err != nil || spoolKey(r) != k {
			return nil, fmt.Errorf("a forwarded record that is not one agentledger writes for %s: %v", k, err)
		}
		if r.AtMs > e.now().Add(time.Minute).UnixMilli() {
			return nil, fmt.Errorf("a forwarded record of %s dated %s, in the future", k, time.UnixMilli(r.AtMs).UTC().Format(time.RFC3339))
		}
	}
	seqs := map[string]uint64{}
	err := e.inSession(ctx, k, func(en *entry) error {
		for _, r := range req.Records {
			en.failMu.Lock()
			if !en.state.Recorded[r.ID] && !slices.ContainsFunc(en.failures, func(x spooled) bool { return x.ID == r.ID }) {
				en.failures = append(en.failures, r)
			}
			en.failMu.Unlock()
		}
		return e.flushFailures(ctx, k, en, func(id string, seq uint64) { seqs[id] = seq })
	})
	switch {
	case errors.Is(err, store.ErrNotOwner) || errors.Is(err, store.ErrFenced):
		return nil, fleet.ErrMoved
	case err != nil:
		return nil, err
	}
	return json.Marshal(forwardedStep{Engine: e.fleet.ID(), Recorded: seqs})
}

// fleetWaitRequest is a long poll on an approval asked of the fleet.
type fleetWaitRequest struct {
	Tenant string        `json:"tenant"`
	ID     string        `json:"id"`
	Wait   time.Duration `json:"wait"`
}

// waitInFleet waits for approval id on the engine that holds it.
func (e *Engine) waitInFleet(ctx context.Context, tenant, id string, wait time.Duration) (PendingStatus, error) {
	body, _ := json.Marshal(fleetWaitRequest{Tenant: tenant, ID: id, Wait: wait})
	out, err := e.fleet.Ask(ctx, fleetWait, body, wait+2*time.Second)
	if errors.Is(err, fleet.ErrSilent) {
		return PendingStatus{}, ErrNoPending
	}
	if err != nil {
		return PendingStatus{}, err
	}
	var st PendingStatus
	if err := json.Unmarshal(out, &st); err != nil {
		return PendingStatus{}, fmt.Errorf("fleet: approval status: %w", err)
	}
	return st, nil
}

func (e *Engine) serveWait(_ context.Context, data []byte) ([]byte, error) {
	var r fleetWaitRequest
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fleet.ErrSilent
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.Wait+time.Second)
	defer cancel()
	st, err := e.waitHere(ctx, r.Tenant, r.ID, r.Wait)
	if err != nil {
		return nil, fleet.ErrSilent
	}
	return json.Marshal(st)
}

// resolveRemote has the owner of k's partition record the resolution of
// the ask at forSeq, which this engine holds but no longer owns.
func (e *Engine) resolveRemote(ctx context.Context, k ledger.SessionKey, forSeq uint64, resolution string, by receipt.Authenticated) (*Resolution, error) {
	body, err := json.Marshal(forwarded{Tenant: k.Tenant, Session: k.Session, Resolution: &remoteResolution{ForSeq: forSeq, Resolution: resolution, By: by}})
	if err != nil {
		return nil, err
	}
	out, err := e.fleet.Forward(ctx, k, newPendingID(), body)
	if err != nil {
		return nil, fmt.Errorf("resolve the ask at %s seq %d on its owner: %w", k, forSeq, err)
	}
	var a forwardedStep
	if err := json.Unmarshal(out, &a); err != nil {
		return nil, fmt.Errorf("fleet: answer of the owner of %s: %w", k, err)
	}
	if a.NoPending || a.Resolved == nil {
		return nil, ErrNoPending
	}
	return a.Resolved, nil
}

// resolveForwarded records a resolution another engine passed on.
func (e *Engine) resolveForwarded(ctx context.Context, req forwarded) ([]byte, error) {
	k := ledger.SessionKey{Tenant: req.Tenant, Session: req.Session}
	r := req.Resolution
	if !aarts.IsResolution(r.Resolution) {
		return nil, fmt.Errorf("a forwarded resolution %q", r.Resolution)
	}
	res, err := e.recordResolution(ctx, k, r.ForSeq, r.Resolution, r.By)
	switch {
	case errors.Is(err, store.ErrNotOwner) || errors.Is(err, store.ErrFenced):
		return nil, fleet.ErrMoved
	case errors.Is(err, ErrNoPending):
		return json.Marshal(forwardedStep{Engine: e.fleet.ID(), NoPending: true})
	case err != nil:
		return nil, err
	}
	e.closeLoadedAsk(k, r.ForSeq, res)
	return json.Marshal(forwardedStep{Engine: e.fleet.ID(), Resolved: res})
}

// closeLoadedAsk closes an approval this engine re-armed for the ask at
// forSeq of k (from the ledger) once another engine's holder resolved it
// here.
func (e *Engine) closeLoadedAsk(k ledger.SessionKey, forSeq uint64, res *Resolution) {
	e.pending.mu.Lock()
	defer e.pending.mu.Unlock()
	for id, p := range e.pending.byID {
		if p.key == k && p.forSeq == forSeq && !p.resolving {
			p.timer.Stop()
			delete(e.pending.byID, id)
			p.res = res
			e.pending.closed[id] = p
			close(p.done)
		}
	}
}
