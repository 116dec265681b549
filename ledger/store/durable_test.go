package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

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
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.syncer.beforeSync = func() {
		once.Do(func() {
			close(held)
			<-release
		})
	}
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
	for {
		s.syncer.mu.Lock()
		waiting := s.syncer.want - s.syncer.done
		s.syncer.mu.Unlock()
		if waiting == n+1 {
			break
		}
		select {
		case err := <-errs:
			t.Fatalf("an append returned while the only fsync after its write had not run: %v", err)
		default:
			runtime.Gosched()
		}
	}
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
// embedded server: the holder fsyncs for it.
func TestWritersThroughTheHolderAreSynced(t *testing.T) {
	holder := openAlways(t, Config{Listen: "127.0.0.1:0", LocalClients: true})
	writer := openURL(t, holder.ClientURL())
	before := holder.syncer.count()
	if _, err := writer.Append(context.Background(), event("acme", "remote", 0)); err != nil {
		t.Fatal(err)
	}
	if holder.syncer.count() == before || writer.noRemoteSync.Load() {
		t.Fatalf("a writer through the holder's server appended without the holder's fsync (fsyncs %d -> %d)", before, holder.syncer.count())
	}
	// A server that syncs nothing for others (here, one under sync
	// interval) answers no one: the writer stops asking.
	plain := openEmbedded(t, "127.0.0.1:0")
	w2 := openURL(t, plain.ClientURL())
	if _, err := w2.Append(context.Background(), event("acme", "remote", 0)); err != nil {
		t.Fatal(err)
	}
	if !w2.noRemoteSync.Load() {
		t.Fatal("no one answers fsync requests on a sync-interval server, and the writer still asks")
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
