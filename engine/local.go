package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/localengine"
)

// The local engine: every hook process of a user reaches one engine over a
// Unix socket in the data directory (localengine.Local), so that hooks the
// host runs in parallel never contend for the data directory, and a
// session's state stays in memory between calls instead of being rebuilt
// from the ledger on every call. The first hook that finds no engine starts
// one (engine serve on the socket, exiting after a while idle); `engine
// serve` run by hand on the same data directory serves the same socket.
// Each request carries the configuration it is decided under
// (hookwire.Config), so one engine serves every tenant, manifest and
// policy of the user.

// SocketName is the engine's socket in a data directory.
const SocketName = hookwire.SocketName

// SocketPath returns the engine socket of a data directory.
func SocketPath(dataDir string) string { return hookwire.SocketPath(dataDir) }

// ListenUnix listens on the socket at path, readable and writable by this
// user only. A socket file nobody answers on (left by a crashed engine) is
// replaced; one that answers is an error: another engine serves it.
func ListenUnix(path string) (net.Listener, error) {
	if len(path) > hookwire.MaxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes, over the %d a Unix socket allows: use a shorter --data directory", path, len(path), hookwire.MaxSocketPath)
	}
	if dir := filepath.Dir(path); dir == hookwire.ShortSocketDir() {
		if err := privateDir(dir); err != nil {
			return nil, err
		}
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("%s: another engine already serves this socket", path)
	}
	_ = os.Remove(path)
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	return ln, nil
}

// IdleListener wraps a listener and closes it once no connection has been
// open for idle: a spawned engine exits when its hooks have gone quiet.
type IdleListener struct {
	net.Listener
	idle   time.Duration
	active chan int // +1 when a connection opens, -1 when it closes
}

// NewIdleListener returns ln closing itself after idle without connections.
func NewIdleListener(ln net.Listener, idle time.Duration) *IdleListener {
	l := &IdleListener{Listener: ln, idle: idle, active: make(chan int, 64)}
	go l.watch()
	return l
}

func (l *IdleListener) watch() {
	open := 0
	t := time.NewTimer(l.idle)
	defer t.Stop()
	for {
		select {
		case d, ok := <-l.active:
			if !ok {
				return
			}
			open += d
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
			if open == 0 {
				t.Reset(l.idle)
			}
		case <-t.C:
			l.Listener.Close()
			return
		}
	}
}

// Accept counts the connection as active until it is closed.
func (l *IdleListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.active <- 1
	return &countedConn{Conn: c, done: func() { l.active <- -1 }}, nil
}

type countedConn struct {
	net.Conn
	once bool
	done func()
}

func (c *countedConn) Close() error {
	if !c.once {
		c.once = true
		c.done()
	}
	return c.Conn.Close()
}

// PostHook sends one hook input to a running engine and returns its
// answer (localengine.Post, decoded).
func PostHook(ctx context.Context, client *http.Client, baseURL, token string, in hookwire.Input) (HookResponse, error) {
	var r HookResponse
	body, err := localengine.Post(ctx, client, baseURL, token, in)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("engine %s: bad answer: %w", baseURL, err)
	}
	return r, nil
}

// PostLocal sends one hook input to the local engine l (starting it when
// none answers) and returns its answer.
func PostLocal(ctx context.Context, l *localengine.Local, in hookwire.Input) (HookResponse, error) {
	var r HookResponse
	body, err := l.Post(ctx, in)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("local engine: bad answer: %w", err)
	}
	return r, nil
}

// privateDir makes dir, a directory of this user's alone (0700), or checks
// that the one there is (hookwire.PrivateSocketDir); anything else is
// refused, since another user could then answer for the engine.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("socket directory: %w", err)
	}
	if err := hookwire.PrivateSocketDir(dir); err != nil {
		return fmt.Errorf("%w: refusing to serve there", err)
	}
	return nil
}
