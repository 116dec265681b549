package engine

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// CheckpointSession is where the engine records the checkpoints it takes,
// so that they are chained and signed in the ledger as well as kept as
// files outside it.
var CheckpointSession = ledger.SessionKey{Tenant: "agentledger", Session: "checkpoints"}

// Checkpointer takes signed checkpoints of the whole ledger: every session's
// head, signed with the engine's key. Each is written as a file (the copy
// an auditor keeps outside the stream) and recorded as a Checkpoint
// envelope in CheckpointSession.
type Checkpointer struct {
	st      *store.Store
	key     ed25519.PrivateKey
	records ledger.RecordSigner
	dir     string
	now     func() time.Time
	kick    chan struct{}
	mu      sync.Mutex
	log     store.LogState // the stream's log as far as read: each checkpoint reads only what was added since
}

// NewCheckpointer returns a Checkpointer signing checkpoints with key and
// writing them into dir; the Checkpoint envelopes it records are signed by
// records (the engine's record key; nil: unsigned).
func NewCheckpointer(st *store.Store, key ed25519.PrivateKey, dir string, records ledger.RecordSigner) *Checkpointer {
	return &Checkpointer{st: st, key: key, records: records, dir: dir, now: time.Now, kick: make(chan struct{}, 1)}
}

// Trigger asks for a checkpoint soon (SessionEnd does); triggers that come
// while one is pending are one.
func (c *Checkpointer) Trigger() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run takes a checkpoint every interval (0: only when triggered) and on
// every trigger, until ctx ends. Failures are passed to report and retried
// at the next tick or trigger.
func (c *Checkpointer) Run(ctx context.Context, every time.Duration, report func(error)) {
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-c.kick:
		}
		if _, err := c.Write(ctx); err != nil && report != nil {
			report(err)
		}
	}
}

// Write takes one checkpoint now and returns the file it wrote.
func (c *Checkpointer) Write(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.st.CatchUp(ctx, &c.log); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	// What is signed is durable first: an append can be read before its
	// fsync (ledger/store, group fsync).
	if err := c.st.Sync(ctx); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	cp, err := c.log.Checkpoint(c.st.StreamName())
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	heads := cp.Heads
	signed, err := cp.Sign(c.key)
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	at := c.now()
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	path := filepath.Join(c.dir, fmt.Sprintf("checkpoint-%d.note", at.UnixMilli()))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, signed, 0o644); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	payload, err := json.Marshal(map[string]any{"note": string(signed), "sessions": len(heads), "size": cp.Size, "file": filepath.Base(path)})
	if err != nil {
		return "", err
	}
	if _, err := c.st.Append(ctx, ledger.Event{TenantID: CheckpointSession.Tenant, SessionID: CheckpointSession.Session,
		EventType: ledger.EventCheckpoint, TsUnixMs: at.UnixMilli(), Payload: payload, Signer: c.records}); err != nil {
		return path, fmt.Errorf("record checkpoint: %w", err)
	}
	return path, nil
}

// WithCheckpoints makes the engine trigger c after every recorded
// SessionEnd.
func WithCheckpoints(c *Checkpointer) Option {
	return func(e *Engine) error {
		if c == nil {
			return errors.New("checkpoints: nil checkpointer")
		}
		e.checkpoints = c
		return nil
	}
}
