package hookwire

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	c, err := dialSocket(context.Background(), p)
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

// TestDialSocketWithoutNet: the thin hook's connection (system calls, no
// net package) reaches a listening socket, exchanges bytes both ways and
// honours a deadline; a socket no one listens on is an error naming it;
// the hook's program links neither the net package nor cgo, so it is a
// static program that starts without a dynamic loader.
func TestDialSocketWithoutNet(t *testing.T) {
	p := filepath.Join(t.TempDir(), "e.sock")
	if _, err := dialSocket(context.Background(), p); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("no listener: %v", err)
	}
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(c, buf); err == nil {
			c.Write([]byte("pong:" + string(buf)))
		}
		time.Sleep(time.Second) // then says nothing more
	}()
	c, err := dialSocket(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 10)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "pong:hello" {
		t.Fatalf("read %q: %v", got, err)
	}
	c.SetDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.Read(got); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read past the deadline: %v, want it to time out", err)
	}
	out, err := exec.Command("go", "list", "-deps", "../cmd/agentledger-hook").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "net" || pkg == "runtime/cgo" {
			t.Errorf("agentledger-hook links %s (a dynamic program, slower to start)", pkg)
		}
	}
}
