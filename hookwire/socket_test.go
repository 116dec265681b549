package hookwire

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSocketPathFitsAUnixAddress: a data directory under a deep home gets
// a short socket, the same one for the same directory (however it is
// named), in this user's private directory under /tmp; a short data
// directory keeps its own. A short socket in a directory that is not
// private is never dialled.
func TestSocketPathFitsAUnixAddress(t *testing.T) {
	short := t.TempDir()
	if got := SocketPath(short); got != filepath.Join(short, SocketName) {
		t.Errorf("SocketPath(%s) = %s, want the data directory's own", short, got)
	}
	deep := filepath.Join(t.TempDir(), strings.Repeat("a-long-user-name/", 6), ".local", "share", "agentledger")
	p := SocketPath(deep)
	if len(p) > MaxSocketPath || filepath.Dir(p) != ShortSocketDir() {
		t.Fatalf("SocketPath(deep) = %s (%d bytes), want a short one in %s", p, len(p), ShortSocketDir())
	}
	if again := SocketPath(deep + "/"); again != p {
		t.Errorf("the same directory, named with a trailing slash, gets %s, want %s", again, p)
	}
	if other := SocketPath(deep + "-other"); other == p {
		t.Error("two data directories share a socket")
	}

	// A private directory: dialled. One others may enter: refused.
	dir := ShortSocketDir()
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	if err := PrivateSocketDir(dir); err != nil {
		t.Fatalf("%s exists and is not this user's private directory: %v", dir, err)
	}
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := DialSocket(context.Background(), p)
	if err != nil {
		t.Fatalf("dial the short socket: %v", err)
	}
	c.Close()
	open := t.TempDir()
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := PrivateSocketDir(open); err == nil {
		t.Errorf("%s (0755) taken for a private directory", open)
	}
	if err := PrivateSocketDir(filepath.Join(open, "missing")); err == nil {
		t.Error("a missing directory taken for a private one")
	}
}
