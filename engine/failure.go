package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/seal"
)

// Failure is the payload of an EngineFailure envelope: a hook event the
// engine could not decide and record, what it answered instead, and why.
type Failure struct {
	// ID makes recording the failure idempotent (it is spooled first).
	ID       string          `json:"id"`
	Event    json.RawMessage `json:"event"`
	Answered string          `json:"answered"` // the decision the host got: deny, none (fail-open: no decision), allow (a notification), or unknown
	Error    string          `json:"error"`
	AtMs     int64           `json:"at_unix_ms"`
}

// spooled is a record the engine owes the ledger: an EngineFailure or a
// Rejected envelope not yet appended. With a spool directory it is on disk
// (written and synced) before the answer it records is returned, so that a
// crash cannot erase an answer the host already acted on.
type spooled = hookwire.SpoolRecord

func spoolKey(r spooled) ledger.SessionKey {
	return ledger.SessionKey{Tenant: r.Tenant, Session: r.Session}
}

// noteFailure records that an event of session k could not be decided and
// recorded, and what the host was answered: spooled now, appended as an
// EngineFailure envelope before the session's next event, by Flush, or by
// Drain at the engine's next start.
func (e *Engine) noteFailure(k ledger.SessionKey, payload []byte, answered string, cause error) {
	ev := json.RawMessage(payload)
	if c, err := ledger.Canonicalize(payload, e.decider.Limits); err == nil {
		ev = c
		// Recorded (and spooled) as any event is: sealed.
		if sealed, err := e.decider.Stored(k.Tenant, k.Session, c); err == nil {
			ev = sealed
		} else {
			ev, _ = json.Marshal("‹not recorded: the event could not be sealed: " + err.Error() + "›")
		}
	} else {
		// Keep even an unparsable event, as a string, redacted: no sealer
		// can read it.
		ev, _ = json.Marshal(detect.RedactJSONText(strings.ToValidUTF8(string(payload), "\uFFFD")))
	}
	f := Failure{ID: newPendingID(), Event: ev, Answered: answered, Error: detect.RedactJSONText(cause.Error()), AtMs: e.now().UnixMilli()}
	raw, err := json.Marshal(f)
	if err != nil {
		return
	}
	e.queue(k, spooled{ID: f.ID, Tenant: k.Tenant, Session: k.Session, EventType: ledger.EventEngineFailure, AtMs: f.AtMs, Payload: raw})
}

// queue spools r (durably, when the engine has a spool directory) and
// queues it for its session.
func (e *Engine) queue(k ledger.SessionKey, r spooled) {
	if e.spoolDir != "" {
		if err := hookwire.WriteSpool(e.spoolDir, r); err != nil {
			e.warn(fmt.Errorf("spool %s record for %s: %w", r.EventType, k, err))
		}
	}
	en := e.acquire(k)
	defer e.release(en)
	en.failMu.Lock()
	en.failures = append(en.failures, r)
	en.failMu.Unlock()
}

// queueOnce queues r for its session unless a record with its id is
// already queued. It does not spool r: r is in the spool already, or it is
// derived from the ledger and found again on every rebuild until recorded.
func (e *Engine) queueOnce(k ledger.SessionKey, r spooled) {
	en := e.acquire(k)
	defer e.release(en)
	en.failMu.Lock()
	defer en.failMu.Unlock()
	if !slices.ContainsFunc(en.failures, func(x spooled) bool { return x.ID == r.ID }) {
		en.failures = append(en.failures, r)
	}
}

// Flush appends the records a session owes the ledger.
// In a fleet, the records of a session another engine owns are appended
// by that engine.
func (e *Engine) Flush(ctx context.Context, k ledger.SessionKey) error {
	err := e.inSession(ctx, k, func(en *entry) error { return e.flushFailures(ctx, k, en, nil) })
	if e.fleet != nil && errors.Is(err, store.ErrNotOwner) {
		return e.flushRemote(ctx, k, nil)
	}
	return err
}

// FlushOwed appends what every session in memory owes the ledger (in a
// fleet, through the sessions' owners): what a process that decides
// nothing itself, or whose calls failed, runs from time to time.
func (e *Engine) FlushOwed(ctx context.Context) error {
	e.mu.Lock()
	var keys []ledger.SessionKey
	for k, en := range e.sessions {
		en.failMu.Lock()
		if len(en.failures) > 0 {
			keys = append(keys, k)
		}
		en.failMu.Unlock()
	}
	e.mu.Unlock()
	var errs []error
	for _, k := range keys {
		if err := e.Flush(ctx, k); err != nil {
			errs = append(errs, fmt.Errorf("records owed by %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// flushFinding is Flush that also says at which seq the record with id
// is in the session (found false: not recorded yet, it stays queued).
func (e *Engine) flushFinding(ctx context.Context, k ledger.SessionKey, id string) (seq uint64, found bool, err error) {
	note := func(got string, at uint64) {
		if got == id {
			seq, found = at, true
		}
	}
	err = e.inSession(ctx, k, func(en *entry) error { return e.flushFailures(ctx, k, en, note) })
	if e.fleet != nil && errors.Is(err, store.ErrNotOwner) {
		err = e.flushRemote(ctx, k, note)
	}
	return seq, found, err
}

// inSession runs fn on a session's loaded state, holding its lock; when fn
// loses a race for the session's head (store.ErrConflict) it runs again,
// after a short backoff, until ctx ends.
func (e *Engine) inSession(ctx context.Context, k ledger.SessionKey, fn func(en *entry) error) error {
	en := e.acquire(k)
	defer e.release(en)
	en.mu.Lock()
	defer en.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if e.fleet != nil {
			f, err := e.fleet.Owner(k)
			if err != nil {
				return err
			}
			if en.fence != f.Seq {
				en.state, en.fence = nil, f.Seq // taken (again): read the ledger
			}
		}
		e.dropShredded(k, en)
		if en.state == nil {
			s, err := e.load(ctx, k)
			if err != nil {
				return err
			}
			en.state = s
		}
		err := fn(en)
		if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrStale) || ctx.Err() != nil {
			return err
		}
		if errors.Is(err, store.ErrStale) {
			// The lease is being renewed: wait for it (or its loss).
			sleepFor(ctx, 50*time.Millisecond)
		}
		backoff(ctx, attempt)
	}
}

// sleepFor waits d or until ctx ends.
func sleepFor(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// dropShredded forgets a session's state when a key of the session was
// shredded since it was built (ledger shred, in any process): the state
// holds what the sealed values said in the clear, and is rebuilt from the
// ledger, where they are now shredded. The caller holds en's lock.
func (e *Engine) dropShredded(k ledger.SessionKey, en *entry) {
	if en.state == nil || e.decider.Sealer == nil {
		return
	}
	w, ok := e.decider.Sealer.Keys.(interface{ ShreddedSince(seal.Scope) bool })
	if !ok {
		return
	}
	if w.ShreddedSince(seal.Scope{Tenant: k.Tenant, Session: k.Session}) {
		en.state = nil
	}
}

// Drain appends every record left in the spool directory (by this process
// or by one that crashed), session by session. Records already in the
// ledger (a crash between append and removal) are not appended twice.
func (e *Engine) Drain(ctx context.Context) error {
	if e.spoolDir == "" {
		return nil
	}
	all, bad, err := hookwire.ReadSpool(e.spoolDir)
	if err != nil {
		return err
	}
	var recs []spooled
	for _, r := range all {
		if err := spoolValid(r); err != nil {
			bad = append(bad, hookwire.BadSpool{Name: r.ID + ".json", Err: err})
			continue
		}
		recs = append(recs, r)
	}
	for _, b := range bad {
		r, err := e.setAside(b)
		if err != nil {
			e.warn(err)
			continue
		}
		recs = append(recs, r) // the rejection that puts it on record
	}
	var keys []ledger.SessionKey
	for _, r := range recs {
		if sessionIDValid(r.Tenant, r.Session) != nil {
			// A hook spooled a call whose session or tenant the ledger
			// cannot take: it is kept in the tenant's rejected session.
			if sessionIDValid(r.Tenant, RejectedSession) != nil {
				r.Tenant = ledger.DefaultTenant
			}
			r.Session = RejectedSession
		}
		e.queueOnce(spoolKey(r), r)
		if !slices.Contains(keys, spoolKey(r)) {
			keys = append(keys, spoolKey(r))
		}
	}
	var errs []error
	for _, k := range keys {
		if err := e.Flush(ctx, k); err != nil {
			errs = append(errs, fmt.Errorf("drain spool of %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// spoolValid checks that a spooled record is one agentledger writes: an
// EngineFailure or a Rejected record, its payload exactly one. Anything
// else in the spool (a Resolution, a hook event) was put there by someone
// else, and is never appended as the engine's own record: the spool is in
// reach of every process of the user, the agent's included.
func spoolValid(r spooled) error {
	switch r.EventType {
	case ledger.EventEngineFailure:
		var f Failure
		if err := ledger.DecodeExact(r.Payload, &f); err != nil {
			return fmt.Errorf("spool %s: not an EngineFailure: %w", r.ID, err)
		}
		if f.ID != r.ID || !slices.Contains([]string{aarts.Deny, aarts.Allow, aarts.Ask, aarts.HostAnswerNone, "unknown"}, f.Answered) {
			return fmt.Errorf("spool %s: not an EngineFailure agentledger writes", r.ID)
		}
	case ledger.EventRejected:
		var rej Rejection
		if err := ledger.DecodeExact(r.Payload, &rej); err != nil || rej.ID != r.ID {
			return fmt.Errorf("spool %s: not a Rejected record agentledger writes (%v)", r.ID, err)
		}
	default:
		return fmt.Errorf("spool %s: a %q record: only EngineFailure and Rejected records are spooled", r.ID, r.EventType)
	}
	return nil
}

// setAside moves a spool file that is not a record agentledger writes out
// of the way (name.bad) and returns the rejection that puts it on record,
// in the default tenant's rejected session: its name, digest and length.
func (e *Engine) setAside(b hookwire.BadSpool) (spooled, error) {
	path := filepath.Join(e.spoolDir, b.Name)
	raw := b.Raw
	if raw == nil {
		raw, _ = os.ReadFile(path)
	}
	if err := os.Rename(path, path+".bad"); err != nil {
		return spooled{}, fmt.Errorf("set aside %s: %w", path, err)
	}
	sum := sha256.Sum256(raw)
	id := "spool-" + hex.EncodeToString(sum[:16])
	rej, _ := json.Marshal(Rejection{ID: id, Defect: b.Err.Error() + "; set aside as " + b.Name + ".bad, not appended",
		SHA256: hex.EncodeToString(sum[:]), Length: int64(len(raw)), Excerpt: excerpt(raw), Answered: aarts.HostAnswerNone})
	e.warn(fmt.Errorf("%s: %w (set aside)", path, b.Err))
	return spooled{ID: id, Tenant: ledger.DefaultTenant, Session: RejectedSession, EventType: ledger.EventRejected, AtMs: e.now().UnixMilli(), Payload: rej}, nil
}

// flushFailures records the queued records of a session. The caller holds
// the session lock and a loaded state.
func (e *Engine) flushFailures(ctx context.Context, k ledger.SessionKey, en *entry, recorded func(id string, seq uint64)) error {
	en.failMu.Lock()
	pending := en.failures
	en.failures = nil
	en.failMu.Unlock()
	for i, f := range pending {
		if en.state.Recorded[f.ID] {
			e.unspool(f.ID)
			continue
		}
		env, err := e.appendOne(ctx, k, en, f.EventType, f.Payload, f.AtMs)
		if err != nil {
			en.failMu.Lock()
			en.failures = append(pending[i:], en.failures...)
			en.failMu.Unlock()
			return err
		}
		if recorded != nil {
			recorded(f.ID, env.Seq())
		}
		en.state.MarkRecorded(f.ID)
		e.unspool(f.ID)
	}
	return nil
}

// recordID reads the id of an EngineFailure or Rejected payload.
func recordID(env *ledger.Envelope) string {
	if t := env.EventType(); t != ledger.EventEngineFailure && t != ledger.EventRejected {
		return ""
	}
	var p map[string]json.RawMessage // exact keys: only "id" is the id
	_ = json.Unmarshal(env.Payload(), &p)
	var id string
	_ = json.Unmarshal(p["id"], &id)
	return id
}

func (e *Engine) unspool(id string) {
	if e.spoolDir != "" {
		_ = os.Remove(filepath.Join(e.spoolDir, id+".json"))
	}
}

// SpoolName is the spool directory in a data directory.
const SpoolName = hookwire.SpoolName
