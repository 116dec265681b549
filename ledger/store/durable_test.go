package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/ledger"
)

func openAlways(t *testing.T, cfg Config) *Store {
	t.Helper()
	cfg.DataDir, cfg.Sync = t.TempDir(), SyncAlways
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if s.syncer == nil {
		t.Fatal("sync always on the embedded server: no group fsync")
	}
	return s
}

// holdNextFsync holds the next fsync of s's syncer as it begins: held is
// closed then, and the fsync goes on once release is closed.
func holdNextFsync(s *Store) (held, release chan struct{}) {
	held, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.syncer.beforeSync = func() {
		once.Do(func() {
			close(held)
			<-release
		})
	}
	return held, release
}

// untilSyncer waits until cond holds of s's syncer (read under its lock).
func untilSyncer(s *Store, cond func(*syncer) bool) {
	for {
		s.syncer.mu.Lock()
		ok := cond(s.syncer)
		s.syncer.mu.Unlock()
		if ok {
			return
		}
		runtime.Gosched()
	}
}

// blockBytes is the size of the stream's message blocks on disk.
func blockBytes(t *testing.T, s *Store) int64 {
	t.Helper()
	blks, err := filepath.Glob(filepath.Join(s.syncer.dir, "*.blk"))
	if err != nil || len(blks) == 0 {
		t.Fatalf("no message blocks in %s: %v", s.syncer.dir, err)
	}
	var n int64
	for _, b := range blks {
		st, err := os.Stat(b)
		if err != nil {
			t.Fatal(err)
		}
		n += st.Size()
	}
	return n
}

// TestAcknowledgedIsWrittenAndSynced checks what group fsync rests on: the
// server has written a message to its block file when it acknowledges it
// (so an fsync of the block after the acknowledgement covers it), and an
// append returns only after an fsync.
func TestAcknowledgedIsWrittenAndSynced(t *testing.T) {
	s := openAlways(t, Config{})
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		before, syncs := blockBytes(t, s), s.syncer.count()
		env, err := s.Append(ctx, event("acme", "durable", i))
		if err != nil {
			t.Fatal(err)
		}
		if got := blockBytes(t, s); got < before+int64(len(env.Bytes())) {
			t.Fatalf("append %d returned with the blocks at %d bytes, %d before: the %d-byte envelope is not in them", i, got, before, len(env.Bytes()))
		}
		if s.syncer.count() <= syncs {
			t.Fatalf("append %d returned without an fsync", i)
		}
	}
}

// TestAppendsWaitingShareOneFsync holds an fsync in flight while sixteen
// sessions append: each waits, none is answered by the fsync that began
// before its write, and one more fsync answers them all.
func TestAppendsWaitingShareOneFsync(t *testing.T) {
	s := openAlways(t, Config{})
	ctx := context.Background()
	if _, err := s.Append(ctx, event("acme", "first", 0)); err != nil {
		t.Fatal(err)
	}
	held, release := holdNextFsync(s)
	first := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, event("acme", "first", 1))
		first <- err
	}()
	<-held
	start := s.syncer.count()
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Append(ctx, event("acme", "s"+string(rune('a'+i)), 0))
			errs <- err
		}()
	}
	// Every one of them has written and is waiting (sixteen tickets beyond
	// the one in flight) before the held fsync finishes.
	untilSyncer(s, func(y *syncer) bool {
		select {
		case err := <-errs:
			t.Fatalf("an append returned while the only fsync after its write had not run: %v", err)
		default:
		}
		return y.want-y.done == n+1
	})
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := s.syncer.count() - start; got != 2 {
		t.Fatalf("%d fsyncs for the held one and sixteen appends waiting behind it, want 2", got)
	}
}

// TestWritersThroughTheHolderAreSynced records through another process's
// embedded server: the holder fsyncs for it, also on another stream; a
// holder whose server serves other clients (ledger serve) keeps O_SYNC and
// answers at once.
func TestWritersThroughTheHolderAreSynced(t *testing.T) {
	ctx := context.Background()
	holder := openAlways(t, Config{Listen: "127.0.0.1:0", LocalClients: true})
	writer := openURL(t, holder.ClientURL())
	before := holder.syncer.count()
	if _, err := writer.Append(ctx, event("acme", "remote", 0)); err != nil {
		t.Fatal(err)
	}
	if holder.syncer.count() == before {
		t.Fatalf("a writer through the holder's server appended without the holder's fsync")
	}
	other, err := Open(ctx, Config{URL: holder.ClientURL(), Stream: "OTHER"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Append(ctx, event("acme", "o", 0)); err != nil {
		t.Fatal(err)
	}
	holder.mu.Lock()
	y := holder.others["OTHER"]
	holder.mu.Unlock()
	if y == nil || y.count() == 0 {
		t.Fatal("a writer on another stream through the holder's server appended without an fsync of that stream")
	}

	served, err := Open(ctx, Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Sync: SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	defer served.Close()
	if served.syncer != nil || !served.srv.JetStreamConfig().SyncAlways {
		t.Fatal("a server serving other clients left SyncAlways to the store: a client that does not ask would get less")
	}
	w2 := openURL(t, served.ClientURL())
	if _, err := w2.Append(ctx, event("acme", "remote", 0)); err != nil {
		t.Fatal(err)
	}
}

// TestAWriterThroughARestartingHolderIsSynced: a writer whose holder stops
// and starts again on the same address is never answered success for an
// append no fsync covered: while no holder answers it keeps asking (until
// RetryFor) or fails, and after the restart the new holder syncs for it.
func TestAWriterThroughARestartingHolderIsSynced(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", loopbackPort(t))
	cfg := Config{DataDir: dir, Listen: addr, LocalClients: true, Sync: SyncAlways}
	holder, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	writer, err := Open(ctx, Config{URL: holder.ClientURL(), Timeout: time.Second, RetryFor: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.Append(ctx, event("acme", "r", 0)); err != nil {
		t.Fatal(err)
	}
	holder.Close()
	holder2, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer holder2.Close()
	for i := 1; i < 4; i++ {
		before := holder2.syncer.count()
		if _, err := writer.Append(ctx, event("acme", "r", i)); err != nil {
			t.Fatalf("append %d after the holder's restart: %v", i, err)
		}
		if holder2.syncer.count() == before {
			t.Fatalf("append %d through the restarted holder returned without its fsync", i)
		}
	}
}

// TestAFailedFsyncFailsEveryAppendAfter: once an fsync fails, no append
// reports success again (the kernel may have dropped the pages).
func TestAFailedFsyncFailsEveryAppendAfter(t *testing.T) {
	s := openAlways(t, Config{})
	ctx := context.Background()
	if _, err := s.Append(ctx, event("acme", "f", 0)); err != nil {
		t.Fatal(err)
	}
	// The block the syncer holds open is closed under it: its next fsync
	// fails.
	s.syncer.mu.Lock()
	s.syncer.cur.Close()
	s.syncer.mu.Unlock()
	for i := 1; i < 3; i++ {
		_, err := s.Append(ctx, event("acme", "f", i))
		if !errors.Is(err, ErrNotDurable) {
			t.Fatalf("append %d after a failed fsync: %v, want ErrNotDurable", i, err)
		}
	}
	if _, err := s.AppendAll(ctx, []ledger.Event{event("acme", "g", 0), event("acme", "g", 1)}); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("batch after a failed fsync: %v, want ErrNotDurable", err)
	}
}

// TestAnAppendWaitingAtCloseIsAnsweredByTheLastFsync: Close lets the fsync
// in flight finish and runs one more, which answers the appends still
// waiting; they are durable and told so.
func TestAnAppendWaitingAtCloseIsAnsweredByTheLastFsync(t *testing.T) {
	s := openAlways(t, Config{RetryFor: 100 * time.Millisecond})
	ctx := context.Background()
	if _, err := s.Append(ctx, event("acme", "c", 0)); err != nil {
		t.Fatal(err)
	}
	held, release := holdNextFsync(s)
	errs := make(chan error, 2)
	go func() {
		_, err := s.Append(ctx, event("acme", "c", 1))
		errs <- err
	}()
	<-held
	go func() {
		_, err := s.Append(ctx, event("acme", "d", 0))
		errs <- err
	}()
	untilSyncer(s, func(y *syncer) bool { return y.want-y.done == 2 })
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	// Close is waiting for the fsync in flight: from here only its last
	// fsync can answer the append behind it.
	untilSyncer(s, func(y *syncer) bool { return y.closing })
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("an append written before Close and synced by its last fsync: %v", err)
		}
	}
	<-closed
	if _, err := s.Append(ctx, event("acme", "c", 2)); err == nil {
		t.Fatal("an append after Close succeeded")
	}
}
