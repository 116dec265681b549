//go:build unix

package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive advisory lock on dir, so that two embedded
// servers never share one file store. The lock file then says who holds it
// (Holder), so that a process that finds the directory taken can say what
// holds it and how to reach it.
func lockDir(dir string) (unlock func(), announce func(Holder), err error) {
	path := filepath.Join(dir, "agentledger.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, nil, &LockedError{Dir: dir, Holder: ReadHolder(dir)}
	}
	announce = func(h Holder) {
		raw, _ := json.Marshal(h)
		if f.Truncate(0) == nil {
			_, _ = f.WriteAt(append(raw, '\n'), 0)
		}
	}
	return func() {
		_ = f.Truncate(0)
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, announce, nil
}

// locked reports whether another process holds dir's lock.
func locked(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "agentledger.lock"))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
