package engine

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/fleet"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/otlp"
	"github.com/agentledger/agentledger/receipt"
)

// Engine is the recorded decision pipeline: every hook event is folded into
// its session's server-side snapshot, judged, and stored together with its
// verdict before the verdict is answered. One decision runs at a time per
// session; sessions run in parallel. A session's state is rebuilt from the
// ledger the first time this process touches it, and again whenever another
// writer (another engine process) moved the session on. It is safe for
// concurrent use.
type Engine struct {
	decider *decide.Decider
	store   Ledger
	now     func() time.Time
	pending pendings
	tel     *Telemetry
	// checkpoints, when set, is triggered after every SessionEnd.
	checkpoints *Checkpointer
	// failOpen answers allow when an event cannot be decided and recorded.
	failOpen bool
	// monitor judges and records every event without enforcing it
	// (WithMonitor).
	monitor bool
	// otlp, when set, exports a span and metrics per decision.
	otlp *otlp.Exporter
	// shaper folds decisions into traces for tel and otlp.
	shaper *otlp.Shaper
	// fleet, when set, is this engine's place in a fleet (fleet.go).
	fleet *fleet.Member
	// fleetPolicies are the other policies forwarded calls came with.
	fleetPolicies sync.Map
	// spoolDir, when set, holds failure and rejection records until they
	// are in the ledger.
	spoolDir string
	warn     func(error)
	spawners spawners
	// pins, when set, is the MCP gateway's record of the tools it pins
	// (WithGatewayPins).
	pins GatewayPins

	recent recent // the last answers, for Status
	// findings are the last results that answer no call the host was let
	// run, for Status and the inbox.
	findings recent

	mu       sync.Mutex
	sessions map[ledger.SessionKey]*entry
	lru      *list.List // of *entry, most recently used first
	maxLive  int
	evicted  uint64
}

// Ledger is what the engine needs of its store (*store.Store is one): to
// append sealed envelopes atomically at their expected place, and to read
// a session's messages from a stream sequence on.
type Ledger interface {
	AppendSealed(ctx context.Context, envs []*ledger.Envelope) (uint64, error)
	ReadSessionFrom(ctx context.Context, k ledger.SessionKey, from uint64, fn func(store.Msg) error) error
}

// Option configures an Engine.
type Option func(*Engine) error

// WithPendingTimeout sets how long an ask, STEP_UP or DEFER waits for its
// resolution before it is recorded as a timeout, which is a deny.
func WithPendingTimeout(d time.Duration) Option {
	return func(e *Engine) error {
		if d <= 0 {
			return fmt.Errorf("pending timeout %s: want more than 0", d)
		}
		e.pending.timeout = d
		return nil
	}
}

// WithFailOpen makes the failure policy answer allow, instead of deny, when
// a valid event cannot be decided and recorded (the engine's store is
// unavailable, a decision times out). It never applies to input the engine
// rejects: that is always denied at a blocking hook point. Either way the
// failure is recorded.
func WithFailOpen(failOpen bool) Option {
	return func(e *Engine) error { e.failOpen = failOpen; return nil }
}

// WithSpool keeps every EngineFailure and Rejected record in dir, written
// and synced before the answer it records is returned, until it is in the
// ledger; Drain appends what a crashed process left there.
func WithSpool(dir string) Option {
	return func(e *Engine) error {
		if dir == "" {
			return errors.New("spool directory: empty")
		}
		e.spoolDir = dir
		return nil
	}
}

// WithWarnings reports problems that do not change an answer (a record that
// could not be spooled or appended yet) to warn.
func WithWarnings(warn func(error)) Option {
	return func(e *Engine) error {
		if warn == nil {
			return errors.New("warnings: nil func")
		}
		e.warn = warn
		return nil
	}
}

// WithMonitor runs the engine in monitor mode: every event is judged and
// recorded as in enforce mode, each verdict recorded with enforced false,
// and every host answered as if agentledger were not there (no permission
// decision, nothing rewritten or withheld, no one waiting for an
// approver). Bad input and engine failures get no decision either. It is
// how a team watches what a policy would do before it enforces it.
func WithMonitor(monitor bool) Option {
	return func(e *Engine) error { e.monitor = monitor; return nil }
}

// WithTelemetry writes the engine's traces (otlp.Shaper's: a trace per
// session, a span per turn and per tool call), redacted, to t.
func WithTelemetry(t *Telemetry) Option {
	return func(e *Engine) error {
		e.tel = t
		if e.shaper == nil {
			e.shaper = otlp.NewShaper()
		}
		return nil
	}
}

// WithClock sets the engine's clock, which stamps every envelope it
// records (hook events, verdicts, resolutions, failures).
func WithClock(now func() time.Time) Option {
	return func(e *Engine) error {
		if now == nil {
			return errors.New("clock: nil")
		}
		e.now = now
		return nil
	}
}

type entry struct {
	key   ledger.SessionKey
	elem  *list.Element // in Engine.lru
	users int           // requests using the entry (guarded by Engine.mu)
	// inherited is set once the session has inherited from a known
	// parent: its events' parent_session_id need not be read again.
	inherited atomic.Bool

	mu    sync.Mutex      // one decision at a time
	state *decide.Session // nil until loaded from the ledger
	// fence is the stream sequence of the partition fence the state was
	// loaded under (in a fleet): another fence means the partition moved
	// away and back, and the state is read again.
	fence uint64

	failMu   sync.Mutex
	failures []spooled // owed to the ledger, not yet recorded
}

// New returns an Engine deciding with d and recording in st.
// New returns an engine deciding with d and recording in st. An option with
// a value it cannot take is an error naming it.
func New(d *decide.Decider, st Ledger, opts ...Option) (*Engine, error) {
	if d == nil || st == nil {
		return nil, errors.New("engine: a decider and a ledger are required")
	}
	e := &Engine{decider: d, store: st, now: time.Now, warn: func(error) {},
		pending: pendings{timeout: DefaultPendingTimeout, byID: map[string]*pendingItem{}, closed: map[string]*pendingItem{}}}
	e.newSessionTable()
	for _, o := range opts {
		if err := o(e); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	return e, nil
}

// Decider returns the engine's decider.
func (e *Engine) Decider() *decide.Decider { return e.decider }

// Decide judges one hook event of tenant and records it with its verdict.
// The Step returned is what was recorded. A bad event is an input error
// (IsInputError) and records nothing.
func (e *Engine) Decide(ctx context.Context, tenant string, payload []byte) (*decide.Step, error) {
	start := time.Now()
	step, err := e.decide(ctx, tenant, payload)
	if tenant == "" {
		tenant = ledger.DefaultTenant
	}
	e.report(tenant, payload, step, start, time.Now(), err)
	return step, err
}

func (e *Engine) decide(ctx context.Context, tenant string, payload []byte) (*decide.Step, error) {
	ev, err := aarts.ParseEvent(payload)
	if err != nil {
		return nil, err
	}
	return e.decideEvent(ctx, tenant, receipt.Authenticated{}, ev, payload, e.decider, e.monitor)
}

// decideHere records ev with its verdict on this engine. A conflict with
// another writer of the session (another engine process) is not a
// failure: the session is re-read and the decision retried, with backoff,
// until ctx ends.
func (e *Engine) decideHere(ctx context.Context, tenant string, auth receipt.Authenticated, ev *aarts.Event, payload []byte, d *decide.Decider, monitor bool) (*decide.Step, error) {
	if tenant == "" {
		tenant = ledger.DefaultTenant
	}
	key := ledger.SessionKey{Tenant: tenant, Session: ev.SessionID}
	// A sub-agent's parent is read before the child's lock is taken (never
	// one session's lock inside another's: two sessions naming each other
	// as parent must not deadlock), and only until the child has inherited.
	// A nested sub-agent's spawn session (spawn_session_id) is read the
	// same way.
	known := map[string]*decide.Session{}
	parentErr := error(nil)
	if ev.ParentSessionID != "" && ev.ParentSessionID != ev.SessionID && !e.hasInherited(key) {
		for _, p := range []string{ev.ParentSessionID, ev.SpawnSessionID} {
			if p == "" || p == ev.SessionID || known[p] != nil || sessionIDValid(tenant, p) != nil {
				continue
			}
			ps, err := e.Snapshot(ctx, ledger.SessionKey{Tenant: tenant, Session: p})
			switch {
			case err != nil:
				parentErr = errors.Join(parentErr, fmt.Errorf("read parent session %s: %w", p, err))
			case ps.Snapshot.Seq >= 0:
				known[p] = &ps
			}
		}
	}
	var step *decide.Step
	err := e.inSession(ctx, key, func(en *entry) error {
		if err := e.flushFailures(ctx, key, en, nil); err != nil {
			return fmt.Errorf("record earlier failures of %s: %w", key, err)
		}
		if err := e.closeHostAsk(ctx, key, en, ev, decide.AskerIn(auth, en.state.Snapshot)); err != nil {
			return fmt.Errorf("record the host's resolution in %s: %w", key, err)
		}
		next := *en.state
		next.Auth, next.Monitor = auth, monitor
		next.Inherit = decide.InheritanceFor(ev.ParentSessionID, ev.SpawnSessionID, &next, func(id string) *decide.Session { return known[id] })
		if next.Inherit != nil && parentErr != nil {
			return parentErr
		}
		st, err := d.DecideEvent(ctx, &next, ev, payload, e.stamp(en.state))
		if err != nil {
			return err
		}
		seq, err := e.store.AppendSealed(ctx, []*ledger.Envelope{st.Envelope, st.Verdict})
		if err != nil {
			e.afterFailedAppend(ctx, key, en, err)
			return fmt.Errorf("record %s: %w", key, err)
		}
		next.StreamSeq = seq
		*en.state = next
		en.inherited.Store(next.Snapshot.Inherited != nil && !next.Snapshot.NeedsInheritance())
		if st.Record.AskOwner == aarts.AskOwnerApprover {
			// Nothing prompts for it in the host: an approver may release it.
			st.PendingID = e.openPending(key, e.approvalOf(st), e.pending.timeout)
		}
		if ev.HookPoint == "SessionEnd" && e.checkpoints != nil {
			e.checkpoints.Trigger()
		}
		step = st
		return nil
	})
	if err != nil {
		return nil, err
	}
	return step, nil
}

// closeHostAsk records how the host resolved an ask it prompted for itself
// (an ask of the host's own prompt, asked by asker, the identity that
// sends ev), when ev is the host's report of the asked call: a
// PostToolUse that is the outcome of the asked call (same turn and input)
// means the user approved it (it ran), one the host refused
// (host_refused) that they did not; the end of the agent's turn
// (PreOutputDeliver) means every call still asked about was refused. The
// Resolution is recorded before ev, with source "host". An ask that waits
// for an approver is never closed by a host event: a result for its call
// is a finding (RESULT_WITHOUT_ALLOW), and the approver still decides.
func (e *Engine) closeHostAsk(ctx context.Context, k ledger.SessionKey, en *entry, ev *aarts.Event, asker string) error {
	ended := ev.HookPoint == "PreOutputDeliver"
	if len(en.state.Snapshot.HostAsks) == 0 || !ended && (ev.HookPoint != "PostToolUse" || ev.TurnID == "") {
		return nil // nothing the host prompted for is open
	}
	refused := ev.Field("host_refused") == true
	call, ran, _ := en.state.Snapshot.BindResult(ev)
	for _, a := range slices.Clone(en.state.Snapshot.HostAsks) {
		var resolution string
		switch {
		case a.AskedBy != asker:
			continue // another identity's ask: only its own host closes it
		case ended:
			// The agent's turn ended: a call the host asked its user about
			// that has not run by now was refused in the host's prompt (the
			// host reports no refusal of its own).
			resolution = "denied"
		case refused && a.TurnID == ev.TurnID:
			resolution = "denied" // the host refused it: it never ran
		case ran && call.EventSeq == a.ForSeq:
			resolution = "approved" // the asked call ran: the user approved it
		default:
			continue
		}
		rec, err := json.Marshal(aarts.ResolutionRecord{ForSeq: a.ForSeq, Resolution: resolution, By: "host", Scope: "session", Source: "host", ActionSHA256: a.Action})
		if err != nil {
			return err
		}
		if _, err := e.appendOne(ctx, k, en, ledger.EventResolution, rec, e.stamp(en.state).UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}

// appendOne seals one engine record onto a session's chain, appends it and
// folds it into the session's state. When the append fails the state is
// dropped, to be re-read from the ledger (store.ErrConflict: another writer
// moved the session). The caller holds the
// session lock and a loaded state.
func (e *Engine) appendOne(ctx context.Context, k ledger.SessionKey, en *entry, eventType string, payload []byte, atMs int64) (*ledger.Envelope, error) {
	env, err := ledger.Seal(en.state.Head, ledger.Event{TenantID: k.Tenant, SessionID: k.Session, EventType: eventType,
		TsUnixMs: max(atMs, en.state.Snapshot.LastMs), Payload: payload, Signer: e.decider.RecordSigner()}, e.decider.Limits)
	if err != nil {
		return nil, err
	}
	snap, err := e.decider.Reducer.Apply(en.state.Snapshot, env)
	if err != nil {
		return nil, err
	}
	seq, err := e.store.AppendSealed(ctx, []*ledger.Envelope{env})
	if err != nil {
		e.afterFailedAppend(ctx, k, en, err)
		return nil, err
	}
	en.state.Head, en.state.Snapshot, en.state.StreamSeq = env.Head(), snap, seq
	return env, nil
}

// afterFailedAppend brings a session's state in line with the ledger after
// an append failed: after a conflict (another writer moved the session on)
// it reads only what was appended since; otherwise, or when that fails, it
// drops the state, to be rebuilt from the ledger.
func (e *Engine) afterFailedAppend(ctx context.Context, k ledger.SessionKey, en *entry, err error) {
	if errors.Is(err, store.ErrStale) || errors.Is(err, store.ErrNotOwner) {
		return // refused before anything was sent: the state stands
	}
	if errors.Is(err, store.ErrConflict) && en.state != nil && ctx.Err() == nil {
		if e.catchUp(ctx, k, en.state) == nil {
			return
		}
	}
	en.state = nil // the ledger is the truth
}

// stamp is the envelope time of the next envelope of a session: the
// engine's clock, never earlier than the session's last envelope, so that a
// session's times never run backwards whatever its clients or the machine's
// clock do.
func (e *Engine) stamp(s *decide.Session) time.Time {
	now := e.now()
	if s != nil && s.Snapshot.LastMs > now.UnixMilli() {
		return time.UnixMilli(s.Snapshot.LastMs)
	}
	return now
}

// backoff waits before the next attempt at a contended session: a short
// randomized pause (at most 4 ms) so that writers racing for one session's
// head spread out instead of colliding again, without handing the head to
// the winner for long.
func backoff(ctx context.Context, attempt int) {
	d := time.Duration(rand.IntN(1000*(1<<min(attempt, 2)))) * time.Microsecond
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// load rebuilds a session's state by folding its recorded envelopes.
func (e *Engine) load(ctx context.Context, k ledger.SessionKey) (*decide.Session, error) {
	s := decide.NewSession(k.Tenant, k.Session)
	if err := e.catchUp(ctx, k, s); err != nil {
		return nil, fmt.Errorf("rebuild %s: %w", k, err)
	}
	return s, nil
}

// catchUp folds into s what the ledger holds of the session after the
// last message s has seen. Messages that are not envelopes extending the
// chain are foreign: they are put on record, and the chain goes on after
// them.
func (e *Engine) catchUp(ctx context.Context, k ledger.SessionKey, s *decide.Session) error {
	var last *ledger.Envelope
	var foreign []Rejection
	err := e.store.ReadSessionFrom(ctx, k, s.StreamSeq+1, func(m store.Msg) error {
		env, err := ledger.Decode(m.Data, e.decider.Limits)
		if err == nil && !store.Extends(s.Head, env, k) {
			err = fmt.Errorf("an envelope of %s seq %d that does not extend the chain at seq %d", env.Key(), env.Seq(), s.Head.Seq)
		}
		if err != nil {
			// Someone with rights to the stream wrote here. Nothing is
			// rewritten: the chain goes on from its last envelope (as the
			// store appends), and the foreign message is put on record.
			sum := sha256.Sum256(m.Data)
			foreign = append(foreign, Rejection{ID: fmt.Sprintf("foreign-%d", m.StreamSeq),
				Defect: fmt.Sprintf("foreign message at %s on this session's subject (%v): not part of the chain, which goes on after it", m.Where(), err),
				SHA256: hex.EncodeToString(sum[:]), Length: int64(len(m.Data)), Excerpt: excerpt(m.Data), Answered: aarts.HostAnswerNone})
			s.StreamSeq = m.StreamSeq
			return nil
		}
		snap, err := e.decider.ApplyRecorded(s.Snapshot, env)
		if err != nil {
			return err
		}
		s.Snapshot, s.Head, s.StreamSeq = snap, env.Head(), m.StreamSeq
		if aarts.IsHookPoint(env.EventType()) {
			s.Events++
		}
		s.MarkRecorded(recordID(env))
		last = env
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range foreign {
		if !s.Recorded[f.ID] {
			raw, _ := json.Marshal(f)
			e.queueOnce(k, spooled{ID: f.ID, Tenant: k.Tenant, Session: k.Session, EventType: ledger.EventRejected, AtMs: e.now().UnixMilli(), Payload: raw})
		}
	}
	// A hook event with nothing after it lost its verdict (a crash between
	// the two publishes, or a stream that cannot batch them atomically):
	// record that before the session goes on.
	if last != nil && aarts.IsHookPoint(last.EventType()) {
		en := e.acquire(k)
		defer e.release(en)
		en.failMu.Lock()
		noted := len(en.failures) > 0
		en.failMu.Unlock()
		if !noted {
			e.noteFailure(k, last.Payload(), "unknown", errors.New("the verdict of this event was not recorded (found on rebuild)"))
		}
	}
	e.armLoaded(k, s)
	return nil
}

// Snapshot returns a session's current snapshot, rebuilding it from the
// ledger if this process has not touched the session yet.
func (e *Engine) Snapshot(ctx context.Context, k ledger.SessionKey) (decide.Session, error) {
	en := e.acquire(k)
	defer e.release(en)
	en.mu.Lock()
	defer en.mu.Unlock()
	e.dropShredded(k, en)
	if en.state == nil {
		s, err := e.load(ctx, k)
		if err != nil {
			return decide.Session{}, err
		}
		en.state = s
	}
	return *en.state, nil
}
