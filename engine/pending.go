package engine

import (
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
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/reducer"
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
}

type pendingItem struct {
	id     string
	key    ledger.SessionKey
	forSeq uint64
	timer  *time.Timer
}

func newPendingID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
}

// open registers an approval for the event at forSeq and arms its timeout.
func (e *Engine) openPending(k ledger.SessionKey, forSeq uint64, wait time.Duration) string {
	p := &pendingItem{id: newPendingID(), key: k, forSeq: forSeq}
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
		_, _ = e.Resolve(ctx, k.Tenant, p.id, "timeout", "engine")
	})
	return p.id
}

// Resolution is what a resolution recorded.
type Resolution struct {
	ForSeq     uint64 `json:"for_seq"`
	Resolution string `json:"resolution"`
	Seq        uint64 `json:"seq"`
	Hash       string `json:"hash"`
}

// Resolve answers the open approval id of tenant with resolution (approved,
// denied, allow_always, allow_similar, deny_always, deny_similar, or the
// engine's timeout) and records it as a Resolution envelope in the
// approval's session. The session's snapshot folds it: *_always and
// *_similar remember the verdict's artifacts for the session.
func (e *Engine) Resolve(ctx context.Context, tenant, id, resolution, by string) (*Resolution, error) {
	if !aarts.IsResolution(resolution) {
		return nil, &aarts.ValidationError{Field: "resolution", Msg: fmt.Sprintf("%q is not a resolution", resolution)}
	}
	e.pending.mu.Lock()
	p := e.pending.byID[id]
	if p == nil || p.key.Tenant != tenant {
		e.pending.mu.Unlock()
		return nil, ErrNoPending
	}
	delete(e.pending.byID, id)
	e.pending.mu.Unlock()
	p.timer.Stop()
	r, err := e.recordResolution(ctx, p.key, p.forSeq, resolution, by)
	if err != nil {
		// Put it back: the approval is still open.
		e.pending.mu.Lock()
		e.pending.byID[id] = p
		e.pending.mu.Unlock()
		return nil, err
	}
	return r, nil
}

// recordResolution appends the Resolution of the approval at forSeq.
func (e *Engine) recordResolution(ctx context.Context, k ledger.SessionKey, forSeq uint64, resolution, by string) (*Resolution, error) {
	var res *Resolution
	err := e.inSession(ctx, k, func(en *entry) error {
		if !slices.ContainsFunc(en.state.Snapshot.Pending, func(p reducer.Pending) bool { return p.ForSeq == forSeq }) {
			return ErrNoPending // resolved by another engine meanwhile
		}
		rec, _ := json.Marshal(aarts.ResolutionRecord{ForSeq: forSeq, Resolution: resolution, By: by, Scope: "session"})
		env, err := e.appendOne(ctx, k, en, ledger.EventResolution, rec, e.stamp(en.state).UnixMilli())
		if err == nil {
			res = &Resolution{ForSeq: forSeq, Resolution: resolution, Seq: env.Seq(), Hash: env.Hash()}
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
func (e *Engine) armLoaded(k ledger.SessionKey, s *Session) {
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
		e.openPending(k, p.ForSeq, wait)
	}
}
