package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// Failure is the payload of an EngineFailure envelope: a hook event the
// engine could not decide and record, what it answered instead, and why.
type Failure struct {
	Event    json.RawMessage `json:"event"`
	Answered string          `json:"answered"` // the decision the host got: allow (fail-open), deny, or unknown
	Error    string          `json:"error"`
	AtMs     int64           `json:"at_unix_ms"`
}

// NoteFailure remembers that an event of tenant could not be decided and
// recorded, and what the host was answered. The failure is recorded as an
// EngineFailure envelope in the session before its next decision (or by
// FlushFailures), once recording works again.
func (e *Engine) NoteFailure(tenant string, payload []byte, answered string, cause error) {
	var probe struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal(payload, &probe) != nil || probe.SessionID == "" {
		return // not an event of any session: nothing to attach it to
	}
	if tenant == "" {
		tenant = ledger.DefaultTenant
	}
	k := ledger.SessionKey{Tenant: tenant, Session: probe.SessionID}
	ev := json.RawMessage(payload)
	if c, err := ledger.Canonicalize(payload, e.decider.Limits); err == nil {
		ev = c
	} else {
		ev, _ = json.Marshal(string(payload)) // keep even an unparsable event, as a string
	}
	en := e.entry(k)
	en.failMu.Lock()
	en.failures = append(en.failures, Failure{Event: ev, Answered: answered, Error: cause.Error(), AtMs: e.now().UnixMilli()})
	en.failMu.Unlock()
}

// flushFailures records the noted failures of a session. The caller holds
// the session lock and a loaded state.
func (e *Engine) flushFailures(ctx context.Context, k ledger.SessionKey, en *entry) error {
	en.failMu.Lock()
	pending := en.failures
	en.failures = nil
	en.failMu.Unlock()
	for i, f := range pending {
		raw, _ := json.Marshal(f)
		env, err := ledger.Seal(en.state.Head, ledger.Event{TenantID: k.Tenant, SessionID: k.Session, EventType: ledger.EventEngineFailure,
			TsUnixMs: f.AtMs, Payload: raw}, e.decider.Limits)
		if err == nil {
			err = e.store.AppendSealed(ctx, []*ledger.Envelope{env})
		}
		if err != nil {
			en.failMu.Lock()
			en.failures = append(pending[i:], en.failures...)
			en.failMu.Unlock()
			if errors.Is(err, store.ErrConflict) {
				en.state = nil
			}
			return err
		}
		snap, err := e.decider.Reducer.Apply(en.state.Snapshot, env)
		if err != nil {
			return err
		}
		en.state.Head, en.state.Snapshot = env.Head(), snap
	}
	return nil
}
