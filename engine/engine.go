package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// Engine is the recorded decision pipeline: every hook event is folded into
// its session's server-side snapshot, judged, and stored together with its
// verdict before the verdict is answered. One decision runs at a time per
// session; sessions run in parallel. A session's state is rebuilt from the
// ledger the first time this process touches it, and again whenever another
// writer (another engine process) moved the session on. It is safe for
// concurrent use.
type Engine struct {
	decider *Decider
	store   *store.Store
	now     func() time.Time
	pending pendings
	tel     *Telemetry
	// checkpoints, when set, is triggered after every SessionEnd.
	checkpoints *Checkpointer

	mu       sync.Mutex
	sessions map[ledger.SessionKey]*entry
}

// Option configures an Engine.
type Option func(*Engine)

// WithPendingTimeout sets how long an ask, STEP_UP or DEFER waits for its
// resolution before it is recorded as a timeout, which is a deny.
func WithPendingTimeout(d time.Duration) Option {
	return func(e *Engine) {
		if d > 0 {
			e.pending.timeout = d
		}
	}
}

// WithTelemetry emits a redacted span per decision to t.
func WithTelemetry(t *Telemetry) Option { return func(e *Engine) { e.tel = t } }

// WithClock sets the clock Resolution records are stamped with.
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.now = now } }

type entry struct {
	mu    sync.Mutex // one decision at a time
	state *Session   // nil until loaded from the ledger
	owned bool       // no other tenant holds this session id

	failMu   sync.Mutex
	failures []Failure // noted, not yet recorded
}

// ErrForbidden means a session id belongs to another tenant.
var ErrForbidden = errors.New("session belongs to another tenant")

// maxRebuilds bounds how often one decision re-reads a session that other
// writers keep moving.
const maxRebuilds = 16

// New returns an Engine deciding with d and recording in st.
func New(d *Decider, st *store.Store, opts ...Option) *Engine {
	e := &Engine{decider: d, store: st, now: time.Now, sessions: map[ledger.SessionKey]*entry{},
		pending: pendings{timeout: DefaultPendingTimeout, byID: map[string]*pendingItem{}}}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Decider returns the engine's decider.
func (e *Engine) Decider() *Decider { return e.decider }

// Decide judges one hook event of tenant and records it with its verdict.
// The Step returned is what was recorded. A bad event is an input error
// (IsInputError) and records nothing.
func (e *Engine) Decide(ctx context.Context, tenant string, payload []byte) (*Step, error) {
	start := time.Now()
	step, err := e.decide(ctx, tenant, payload)
	if tenant == "" {
		tenant = ledger.DefaultTenant
	}
	e.tel.Decision(tenant, payload, step, start, time.Now(), err)
	return step, err
}

func (e *Engine) decide(ctx context.Context, tenant string, payload []byte) (*Step, error) {
	ev, err := aarts.ParseEvent(payload)
	if err != nil {
		return nil, err
	}
	if tenant == "" {
		tenant = ledger.DefaultTenant
	}
	key := ledger.SessionKey{Tenant: tenant, Session: ev.SessionID}
	en := e.entry(key)
	en.mu.Lock()
	defer en.mu.Unlock()
	if err := e.checkOwner(ctx, key, en); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if en.state == nil {
			if en.state, err = e.load(ctx, key); err != nil {
				return nil, err
			}
		}
		if err := e.flushFailures(ctx, key, en); err != nil {
			if errors.Is(err, store.ErrConflict) && attempt < maxRebuilds {
				continue
			}
			return nil, fmt.Errorf("record earlier failures of %s: %w", key, err)
		}
		next := *en.state
		step, err := e.decider.DecideEvent(ctx, &next, ev, payload)
		if err != nil {
			return nil, err
		}
		err = e.store.AppendSealed(ctx, []*ledger.Envelope{step.Envelope, step.Verdict})
		if err == nil {
			*en.state = next
			if step.Record.Verdict.Decision == aarts.Ask {
				step.PendingID = e.openPending(key, step.Envelope.Seq(), e.pending.timeout)
			}
			if ev.HookPoint == "SessionEnd" && e.checkpoints != nil {
				e.checkpoints.Trigger()
			}
			return step, nil
		}
		en.state = nil // whatever happened, the ledger is the truth
		if !errors.Is(err, store.ErrConflict) || attempt >= maxRebuilds {
			return nil, fmt.Errorf("record %s: %w", key, err)
		}
	}
}

// checkOwner refuses a session id another tenant already holds: one tenant
// can neither write into nor read another's session.
func (e *Engine) checkOwner(ctx context.Context, k ledger.SessionKey, en *entry) error {
	if en.owned {
		return nil
	}
	tenants, err := e.store.Tenants(ctx, k.Session)
	if err != nil {
		return err
	}
	for _, t := range tenants {
		if t != k.Tenant {
			return fmt.Errorf("%w: %q", ErrForbidden, k.Session)
		}
	}
	en.owned = true
	return nil
}

func (e *Engine) entry(k ledger.SessionKey) *entry {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.sessions[k]
	if en == nil {
		en = &entry{}
		e.sessions[k] = en
	}
	return en
}

// load rebuilds a session's state by folding its recorded envelopes.
func (e *Engine) load(ctx context.Context, k ledger.SessionKey) (*Session, error) {
	s := NewSession(k.Tenant, k.Session)
	var last *ledger.Envelope
	err := e.store.ReadSession(ctx, k, func(m store.Msg) error {
		env, err := ledger.Decode(m.Data, e.decider.Limits)
		if err != nil {
			return fmt.Errorf("stream seq %d: %w", m.StreamSeq, err)
		}
		snap, err := e.decider.Reducer.Apply(s.Snapshot, env)
		if err != nil {
			return err
		}
		s.Snapshot, s.Head = snap, env.Head()
		if aarts.IsHookPoint(env.EventType()) {
			s.Events++
		}
		last = env
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rebuild %s: %w", k, err)
	}
	// A hook event with nothing after it lost its verdict (a crash between
	// the two publishes, or a stream that cannot batch them atomically):
	// record that before the session goes on.
	if last != nil && aarts.IsHookPoint(last.EventType()) {
		en := e.entry(k)
		en.failMu.Lock()
		noted := len(en.failures) > 0
		en.failMu.Unlock()
		if !noted {
			e.NoteFailure(k.Tenant, last.Payload(), "unknown", errors.New("the verdict of this event was not recorded (found on rebuild)"))
		}
	}
	e.armLoaded(k, s)
	return s, nil
}

// Snapshot returns a session's current snapshot, rebuilding it from the
// ledger if this process has not touched the session yet.
func (e *Engine) Snapshot(ctx context.Context, k ledger.SessionKey) (Session, error) {
	en := e.entry(k)
	en.mu.Lock()
	defer en.mu.Unlock()
	if err := e.checkOwner(ctx, k, en); err != nil {
		return Session{}, err
	}
	if en.state == nil {
		s, err := e.load(ctx, k)
		if err != nil {
			return Session{}, err
		}
		en.state = s
	}
	return *en.state, nil
}
