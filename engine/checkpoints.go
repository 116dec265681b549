package engine

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
// envelope in CheckpointSession. A ledger of several streams has a log in
// each, and a checkpoint of each (its origin names its stream).
type Checkpointer struct {
	st      *store.Store
	key     ed25519.PrivateKey
	records ledger.RecordSigner
	dir     string
	now     func() time.Time
	kick    chan struct{}
	mu      sync.Mutex
	// logs are each stream's log as far as read: each checkpoint reads
	// only what was added since.
	logs []*store.LogState
}

// NewCheckpointer returns a Checkpointer signing checkpoints with key and
// writing them into dir; the Checkpoint envelopes it records are signed by
// records (the engine's record key; nil: unsigned).
func NewCheckpointer(st *store.Store, key ed25519.PrivateKey, dir string, records ledger.RecordSigner) *Checkpointer {
	return &Checkpointer{st: st, key: key, records: records, dir: dir, now: time.Now, kick: make(chan struct{}, 1), logs: st.LogsOf(false)}
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
		if _, err := c.WriteAll(ctx); err != nil && report != nil {
			report(err)
		}
	}
}

// Write takes one checkpoint of a one-stream ledger now and returns the
// file it wrote (WriteAll takes one of each stream of a ledger of
// several).
func (c *Checkpointer) Write(ctx context.Context) (string, error) {
	paths, err := c.WriteAll(ctx)
	if err != nil {
		return "", err
	}
	if len(paths) != 1 {
		return "", fmt.Errorf("checkpoint: the ledger has %d streams, a checkpoint each (WriteAll): wrote %s", len(paths), strings.Join(paths, ", "))
	}
	return paths[0], nil
}

// WriteAll takes a checkpoint of each of the ledger's streams now, in
// stream order, and returns the files it wrote.
func (c *Checkpointer) WriteAll(ctx context.Context) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.logs {
		if err := c.st.CatchUp(ctx, l); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
	}
	// What is signed is durable first: an append can be read before its
	// fsync (ledger/store, group fsync).
	if err := c.st.Sync(ctx); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	at := c.now()
	var paths []string
	for _, l := range c.logs {
		path, err := c.write(ctx, l, at)
		if path != "" {
			paths = append(paths, path)
		}
		if err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// write signs the checkpoint of what l has read, writes it into the
// checkpoint directory and records it.
func (c *Checkpointer) write(ctx context.Context, l *store.LogState, at time.Time) (string, error) {
	cp, err := l.Checkpoint(c.st.StreamName())
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	heads := cp.Heads
	signed, err := cp.Sign(c.key)
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	name := fmt.Sprintf("checkpoint-%d.note", at.UnixMilli())
	if l.Stream != "" {
		name = fmt.Sprintf("checkpoint-%d-%s.note", at.UnixMilli(), l.Stream)
	}
	path := filepath.Join(c.dir, name)
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
