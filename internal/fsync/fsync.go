// Package fsync makes what was written to a file, or to a directory's
// entries, durable.
package fsync

import (
	"errors"
	"os"
	"syscall"
)

// File fsyncs the file at path.
func File(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Dir fsyncs the directory at path, so that the entries created, renamed
// or removed in it are durable, where the file system can: some (network
// and FUSE file systems) refuse to fsync a directory and order their
// entries themselves.
func Dir(path string) error {
	err := File(path)
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil
	}
	return err
}
