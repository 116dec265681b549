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

	"github.com/nats-io/nats.go"
)

// Group fsync. Under SyncAlways a single-node server opens its message
// blocks with O_SYNC: every message is its own synchronous write, so
// sessions deciding at once queue behind one another's disk flushes, and a
// decision (an event and its verdict) waits for two. When this process is
// the only writer of its embedded server, the server instead writes each
// message to the OS before acknowledging it (as under SyncInterval), and
// the store fsyncs the stream's message blocks itself before an append
// returns: every append waits for an fsync that began after its last
// message was acknowledged, and appends that arrive while one is in flight
// share the next. A lone append syncs at once; under load one fsync covers
// every session waiting. What an acknowledged append survives is
// unchanged: it is on disk before the caller hears of it.
//
// A failed fsync is not retried: the kernel may have dropped the pages it
// could not write and would report the next fsync clean. Every append
// after it fails (ErrNotDurable) until the store is opened again.

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
	running bool
	err     error // sticky: the first fsync that failed
	syncs   uint64

	// The block being written and the highest block number synced.
	cur  *os.File
	curN int
	// beforeSync, set by tests, runs as each fsync begins.
	beforeSync func()
}

// newSyncer finds the stream's message blocks under the embedded server's
// store directory and syncs them, and the directories above them, once.
func newSyncer(storeDir, stream string) (*syncer, error) {
	dirs, err := filepath.Glob(filepath.Join(storeDir, "jetstream", "*", "streams", stream, "msgs"))
	if err != nil || len(dirs) != 1 {
		return nil, fmt.Errorf("group fsync: the message blocks of stream %s under %s: found %d directories (%v)", stream, storeDir, len(dirs), err)
	}
	y := &syncer{dir: dirs[0]}
	y.cond = sync.NewCond(&y.mu)
	for d := y.dir; len(d) >= len(storeDir); d = filepath.Dir(d) {
		if err := syncPath(d); err != nil {
			return nil, fmt.Errorf("group fsync: %w", err)
		}
	}
	ents, err := os.ReadDir(y.dir)
	if err != nil {
		return nil, fmt.Errorf("group fsync: %w", err)
	}
	for _, e := range ents {
		if n, ok := blockNumber(e.Name()); ok {
			if err := syncPath(filepath.Join(y.dir, e.Name())); err != nil {
				return nil, fmt.Errorf("group fsync: %w", err)
			}
			y.curN = max(y.curN, n)
		}
	}
	return y, nil
}

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
		if y.running {
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
		y.done = upTo
		y.cond.Broadcast()
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
		return syncPath(y.dir)
	}
	return nil
}

// close releases the open block.
func (y *syncer) close() {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.cur != nil {
		y.cur.Close()
		y.cur = nil
	}
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

// syncPath fsyncs a file or directory.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Other processes that record through this one's embedded server (its
// Listen) have their messages written the same way: after its publishes
// are acknowledged, such a writer asks the holder for an fsync on
// syncSubject and returns when it answers. A server with no one answering
// there (a cluster, or a server that syncs every write itself) says so at
// once, and the writer stops asking.

// syncSubject is where the process holding an embedded server in group
// fsync answers other writers' requests for an fsync.
func syncSubject(stream string) string { return "_agentledger.sync." + stream }

// serveSync answers other writers' fsync requests.
func (s *Store) serveSync() error {
	_, err := s.nc.Subscribe(syncSubject(s.cfg.Stream), func(m *nats.Msg) {
		go func() {
			answer := "ok"
			if err := s.syncer.wait(context.Background()); err != nil {
				answer = err.Error()
			}
			m.Respond([]byte(answer))
		}()
	})
	return err
}

// durable returns once what this process has written to the stream is on
// disk: at once when the server syncs every write itself, after a group
// fsync of its own or, recording through another process's embedded
// server, of that process.
func (s *Store) durable(ctx context.Context) error {
	if s.syncer != nil {
		return s.syncer.wait(ctx)
	}
	if s.srv != nil || s.noRemoteSync.Load() {
		return nil
	}
	// Not ctx: the messages are written; whether they are durable must
	// be learned.
	reply, err := s.nc.Request(syncSubject(s.cfg.Stream), nil, 2*s.cfg.Timeout)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		s.noRemoteSync.Store(true)
		return nil
	case err != nil:
		return fmt.Errorf("%w: asking the server's holder to sync: %w", ErrNotDurable, err)
	case string(reply.Data) != "ok":
		return fmt.Errorf("%w: the server's holder: %s", ErrNotDurable, reply.Data)
	}
	return nil
}
