package engine

import (
	"cmp"
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

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
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
type spooled struct {
	ID        string          `json:"id"`
	Tenant    string          `json:"tenant"`
	Session   string          `json:"session"`
	EventType string          `json:"event_type"`
	AtMs      int64           `json:"at_unix_ms"`
	Payload   json.RawMessage `json:"payload"`
}

func (r spooled) key() ledger.SessionKey {
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
		ev, _ = json.Marshal(string(payload)) // keep even an unparsable event, as a string
	}
	f := Failure{ID: newPendingID(), Event: ev, Answered: answered, Error: cause.Error(), AtMs: e.now().UnixMilli()}
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
		if err := writeSpool(e.spoolDir, r); err != nil {
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
func (e *Engine) Flush(ctx context.Context, k ledger.SessionKey) error {
	return e.inSession(ctx, k, func(en *entry) error { return e.flushFailures(ctx, k, en) })
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
		if en.state == nil {
			s, err := e.load(ctx, k)
			if err != nil {
				return err
			}
			en.state = s
		}
		err := fn(en)
		if !errors.Is(err, store.ErrConflict) || ctx.Err() != nil {
			return err
		}
		backoff(ctx, attempt)
	}
}

// Drain appends every record left in the spool directory (by this process
// or by one that crashed), session by session. Records already in the
// ledger (a crash between append and removal) are not appended twice.
func (e *Engine) Drain(ctx context.Context) error {
	if e.spoolDir == "" {
		return nil
	}
	recs, err := readSpool(e.spoolDir)
	if err != nil {
		return err
	}
	var keys []ledger.SessionKey
	for _, r := range recs {
		e.queueOnce(r.key(), r)
		if !slices.Contains(keys, r.key()) {
			keys = append(keys, r.key())
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

// flushFailures records the queued records of a session. The caller holds
// the session lock and a loaded state.
func (e *Engine) flushFailures(ctx context.Context, k ledger.SessionKey, en *entry) error {
	en.failMu.Lock()
	pending := en.failures
	en.failures = nil
	en.failMu.Unlock()
	for i, f := range pending {
		if en.state.Recorded[f.ID] {
			e.unspool(f.ID)
			continue
		}
		if _, err := e.appendOne(ctx, k, en, f.EventType, f.Payload, f.AtMs); err != nil {
			en.failMu.Lock()
			en.failures = append(pending[i:], en.failures...)
			en.failMu.Unlock()
			return err
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

// writeSpool writes r to dir as one file, synced, with the directory entry
// synced too.
func writeSpool(dir string, r spooled) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, r.ID+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err = f.Write(raw); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, r.ID+".json"))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readSpool reads every record in dir, oldest first (by name order within
// equal times, which is deterministic).
func readSpool(dir string) ([]spooled, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	var out []spooled
	for _, de := range ents {
		if !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		var r spooled
		if err := json.Unmarshal(raw, &r); err != nil || r.ID == "" || r.Session == "" {
			return nil, fmt.Errorf("spool: %s is not a spooled record", de.Name())
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b spooled) int { return cmp.Compare(a.AtMs, b.AtMs) })
	return out, nil
}

// Unanswered is a hook call no engine could decide: what the failure
// policy answered the host instead, and why. A hook writes it to the data
// directory's spool (SpoolUnanswered) before it answers, so the next engine
// on that directory records it as an EngineFailure: answered means
// recorded, even when no engine answered.
type Unanswered struct {
	Tenant string // "" is the default tenant
	Host   string // the adapter whose native input Input is
	Input  []byte // the input, or its first bytes
	// SHA256 and Size describe the whole input when Input is a prefix.
	SHA256   string
	Size     int64
	Answered string // deny, or none (fail-open)
	Cause    error
}

// SpoolUnanswered writes u to dataDir's spool, synced. The record names
// the call's session (read through the host's adapter; the rejected
// session when none can be read) and holds the input's digest, size and a
// redacted excerpt, never the input itself: the hook has no sealer.
func SpoolUnanswered(dataDir string, u Unanswered, now time.Time) error {
	tenant := cmp.Or(u.Tenant, ledger.DefaultTenant)
	session := RejectedSession
	if h := HostNamed(u.Host); h != nil {
		if m, err := h.Map(u.Input, now, false); err == nil {
			var ev struct {
				SessionID string `json:"session_id"`
			}
			if json.Unmarshal(m.Event, &ev) == nil && ev.SessionID != "" {
				session = ev.SessionID
			} else if m.Resolved != nil && m.Resolved.SessionID != "" {
				session = m.Resolved.SessionID
			}
		}
	}
	if sessionIDValid(tenant, session) != nil {
		session = RejectedSession
	}
	sum := u.SHA256
	if sum == "" {
		s := sha256.Sum256(u.Input)
		sum = hex.EncodeToString(s[:])
	}
	ev, err := json.Marshal(map[string]any{"host": u.Host, "sha256": sum, "length": max(u.Size, int64(len(u.Input))), "excerpt": excerpt(u.Input)})
	if err != nil {
		return err
	}
	f := Failure{ID: newPendingID(), Event: ev, Answered: u.Answered, Error: "no engine answered the hook: " + u.Cause.Error(), AtMs: now.UnixMilli()}
	raw, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return writeSpool(filepath.Join(dataDir, SpoolName), spooled{ID: f.ID, Tenant: tenant, Session: session,
		EventType: ledger.EventEngineFailure, AtMs: f.AtMs, Payload: raw})
}

// SpoolName is the spool directory in a data directory.
const SpoolName = "spool"
