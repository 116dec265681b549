package fsync

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFileAndDir(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := File(p); err != nil {
		t.Fatalf("fsync a file: %v", err)
	}
	if err := Dir(dir); err != nil {
		t.Fatalf("fsync a directory: %v", err)
	}
	// A path that is not there is an error, not a durable nothing.
	if err := File(filepath.Join(dir, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("fsync of a missing file: %v", err)
	}
	if err := Dir(filepath.Join(dir, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("fsync of a missing directory: %v", err)
	}
}
