package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentledger/agentledger/internal/fsync"
)

// Group fsync. Under SyncAlways a single-node server opens its message
// blocks with O_SYNC: every message is its own synchronous write, so
// sessions deciding at once queue behind one another's disk flushes, and a
// decision (an event and its verdict) waits for two. When the embedded
// server serves no one but this process and this machine's agentledger
// programs (no Listen, or Listen with LocalClients), it instead writes each
// message to the OS before acknowledging it (as under SyncInterval), and
// the store fsyncs the stream's files itself before an append returns:
// every append waits for an fsync that began after its last message was
// acknowledged, and appends that arrive while one is in flight share the
// next. A lone append syncs at once; under load one fsync covers every
// session waiting. What an acknowledged append survives is unchanged: it is
// on disk before the caller hears of it. A server that serves other
// clients (ledger serve) keeps O_SYNC: a client that does not ask for the
// fsync must not get less.
//
// A failed fsync is not retried: the kernel may have dropped the pages it
// could not write and would report the next fsync clean. Every append
// after it fails (ErrNotDurable) until the store is opened again.
//
// One thing O_SYNC gave that this does not: between two fsyncs the kernel
// may write a new block back before the one before it, so a machine crash
// while the server moves to a new block can keep an unacknowledged verdict
// without the event before it. Nothing acknowledged is lost; the session's
// chain then has a gap that verify reports.

// ErrNotDurable means the store could not fsync what it had written: an
// append that returns it may or may not survive a crash of the machine.
var ErrNotDurable = errors.New("ledger store: fsync failed: writes are not durable")

// syncer fsyncs one stream's message blocks for the appends waiting on it.
type syncer struct {
	dir string // the stream's msgs directory

	mu      sync.Mutex
	cond    *sync.Cond
	want    uint64 // tickets handed out
	done    uint64 // tickets covered by a finished fsync
	ok      uint64 // tickets covered by a successful fsync
	running bool
	closing bool  // close waits to run the last fsync; no one else starts one
	err     error // sticky: the first fsync that failed
	syncs   uint64

	// The block being written and the highest block number synced.
	cur  *os.File
	curN int
	// beforeSync, set by tests, runs as each fsync begins.
	beforeSync func()
}

// newSyncer finds the stream's files under the embedded server's store
// directory and syncs them, and the directories above them, once.
func newSyncer(storeDir, stream string) (*syncer, error) {
	streamDir := filepath.Join(storeDir, "jetstream", globalAccount, "streams", stream)
	y := &syncer{dir: filepath.Join(streamDir, "msgs")}
	y.cond = sync.NewCond(&y.mu)
	if _, err := os.Stat(y.dir); err != nil {
		return nil, fmt.Errorf("group fsync: the message blocks of stream %s: %w", stream, err)
	}
	for d := y.dir; len(d) >= len(storeDir); d = filepath.Dir(d) {
		if err := fsync.Dir(d); err != nil {
			return nil, fmt.Errorf("group fsync: %w", err)
		}
	}
	// The stream's own files (meta.inf, meta.sum) and every block.
	for _, dir := range []string{streamDir, y.dir} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("group fsync: %w", err)
		}
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			if err := fsync.File(filepath.Join(dir, e.Name())); err != nil {
				return nil, fmt.Errorf("group fsync: %w", err)
			}
			if n, ok := blockNumber(e.Name()); ok && dir == y.dir {
				y.curN = max(y.curN, n)
			}
		}
	}
	return y, nil
}

// globalAccount is the account the embedded server keeps its streams in.
const globalAccount = "$G"

// wait returns once an fsync that began after the call has finished, or
// with the error of one that failed. It does not follow ctx: the caller's
// messages are written already, and it must learn whether they are
// durable.
func (y *syncer) wait(context.Context) error {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.want++
	ticket := y.want
	for y.done < ticket && y.err == nil {
		if y.running || y.closing {
			y.cond.Wait()
			continue
		}
		// No fsync in flight: this caller runs one for every ticket
		// handed out so far.
		y.running = true
		upTo := y.want
		y.mu.Unlock()
		err := y.syncBlocks()
		y.mu.Lock()
		y.running = false
		y.syncs++
		if err != nil && y.err == nil {
			y.err = fmt.Errorf("%w: %w", ErrNotDurable, err)
		}
		if y.err == nil {
			y.ok = upTo
		}
		y.done = upTo
		y.cond.Broadcast()
	}
	if ticket <= y.ok {
		return nil
	}
	return y.err
}

// count is how many fsyncs have run.
func (y *syncer) count() uint64 {
	y.mu.Lock()
	defer y.mu.Unlock()
	return y.syncs
}

// syncBlocks fsyncs the block being written, and every block the server
// began since the last fsync with the directory that names them. Only one
// runs at a time.
func (y *syncer) syncBlocks() error {
	if y.beforeSync != nil {
		y.beforeSync()
	}
	if y.cur != nil {
		if err := y.cur.Sync(); err != nil {
			return err
		}
	}
	// Blocks are numbered upward: the server went on to a new one when
	// the next number exists.
	grew := false
	for {
		next := filepath.Join(y.dir, strconv.Itoa(y.curN+1)+".blk")
		f, err := os.Open(next)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		if y.cur != nil {
			y.cur.Close()
		}
		y.cur, y.curN, grew = f, y.curN+1, true
	}
	if y.cur == nil && y.curN > 0 {
		f, err := os.Open(filepath.Join(y.dir, strconv.Itoa(y.curN)+".blk"))
		if err != nil {
			return err
		}
		y.cur = f
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if grew {
		return fsync.Dir(y.dir)
	}
	return nil
}

// close syncs once more (what other writers wrote since) and releases
// the open block, once no fsync is running.
func (y *syncer) close() {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.closing = true
	for y.running {
		y.cond.Wait()
	}
	if y.err == nil {
		upTo := y.want
		if y.syncBlocks() == nil {
			y.ok = upTo
		}
		y.done = upTo
	}
	if y.cur != nil {
		y.cur.Close()
		y.cur = nil
	}
	y.err = fmt.Errorf("%w: the store is closed", ErrUnavailable)
	y.cond.Broadcast()
}

// blockNumber reads N of a message block's name, N.blk.
func blockNumber(name string) (int, bool) {
	base, ok := strings.CutSuffix(name, ".blk")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(base)
	return n, err == nil && n > 0
}

// Other processes that record through this one's embedded server (its
// Listen, for this machine's agentledger programs) have their messages
// written the same way: after its publishes are acknowledged, such a
// writer asks the holder for an fsync of its stream on syncSubject and
// returns when it answers. The holder always answers (at once when its
// server syncs every write itself, or syncs on an interval). A writer on
// an agentledger embedded server keeps asking until the holder answers or
// RetryFor has passed (a holder starting or stopping); on any other server
// (a cluster) it does not ask.

// syncSubject is where the process holding an embedded server answers
// other writers' requests for an fsync of a stream.
func syncSubject(stream string) string { return "_agentledger.sync." + stream }

// embeddedServerName is the name of agentledger's embedded server.
const embeddedServerName = "agentledger"

// serveSync answers other writers' fsync requests, for any stream.
func (s *Store) serveSync() error {
	if _, err := s.nc.Subscribe(syncSubject("*"), func(m *nats.Msg) {
		go func() {
			answer := "ok"
			if err := s.syncStream(strings.TrimPrefix(m.Subject, syncSubject(""))); err != nil {
				answer = err.Error()
			}
			m.Respond([]byte(answer))
		}()
	}); err != nil {
		return err
	}
	// The subscription is on the server before anyone can learn where the
	// server is (the lock file names it after Open).
	return s.nc.Flush()
}

// syncStream fsyncs a stream of the embedded server for a writer that
// recorded through it.
func (s *Store) syncStream(stream string) error {
	if s.syncer == nil {
		return nil // the server syncs every write itself, or on its interval
	}
	if stream == s.cfg.Stream {
		return s.syncer.wait(context.Background())
	}
	if !streamName.MatchString(stream) {
		return fmt.Errorf("stream name %q", stream)
	}
	s.mu.Lock()
	y, ok := s.others[stream]
	if !ok {
		var err error
		if y, err = newSyncer(s.storeDir, stream); err != nil {
			s.mu.Unlock()
			return err
		}
		s.others[stream] = y
	}
	s.mu.Unlock()
	return y.wait(context.Background())
}

// Sync returns once everything this store has written or read is on disk:
// what a caller signs or counts from a read (another writer's append may be
// visible before its fsync) is durable first.
func (s *Store) Sync(ctx context.Context) error { return s.durable(ctx) }

// durable returns once what this process has written to the stream is on
// disk: at once when the server syncs every write itself, after a group
// fsync of its own or, recording through another process's embedded
// server, of that process.
func (s *Store) durable(ctx context.Context) error {
	if s.syncer != nil {
		return s.syncer.wait(ctx)
	}
	if s.srv != nil || s.nc.ConnectedServerName() != embeddedServerName {
		return nil
	}
	// Not ctx: the messages are written; whether they are durable must
	// be learned.
	start := time.Now()
	for wait := 0; ; wait++ {
		reply, err := s.nc.Request(syncSubject(s.cfg.Stream), nil, 2*s.cfg.Timeout)
		switch {
		case err == nil && string(reply.Data) == "ok":
			return nil
		case err == nil:
			return fmt.Errorf("%w: the server's holder: %s", ErrNotDurable, reply.Data)
		case !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) || time.Since(start) > s.cfg.RetryFor:
			return fmt.Errorf("%w: asking the server's holder to sync: %w", ErrNotDurable, err)
		}
		time.Sleep(min(10*time.Millisecond<<min(wait, 5), 500*time.Millisecond))
	}
}
