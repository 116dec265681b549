// Package proctest helps tests that run agentledger's programs as
// processes: a buffer their output can go to while the test reads it, a
// copy of a directory (a data directory's keys) for another one, and the
// stop of a process that holds a data directory (a local engine a hook or
// a gateway started).
package proctest

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentledger/agentledger/ledger/store"
)

// StopHolder stops the process holding the data directory data, if any
// (SIGTERM), and waits up to 20 s for it to let the directory go; it
// reports whether the directory is free.
func StopHolder(data string) bool {
	h, held := store.HeldBy(data)
	if !held {
		return true
	}
	if h.PID != 0 {
		_ = syscall.Kill(h.PID, syscall.SIGTERM)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, still := store.HeldBy(data); !still {
			return true
		}
	}
	return false
}

// SyncBuffer is a bytes.Buffer safe for one writer and readers.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// CopyDir copies the tree at from to to, files 0600 and directories 0700.
func CopyDir(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
