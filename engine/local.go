package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The local engine: every hook process of a user reaches one engine over a
// Unix socket in the data directory, so that hooks the host runs in
// parallel never contend for the data directory, and a session's state
// stays in memory between calls instead of being rebuilt from the ledger on
// every call. The first hook that finds no engine starts one (engine serve
// on the socket only, exiting after a while idle); `engine serve` run by
// hand on the same data directory serves the same socket.

// SocketName is the engine's socket in a data directory.
const SocketName = "engine.sock"

// SocketPath returns the engine socket of a data directory.
func SocketPath(dataDir string) string { return filepath.Join(dataDir, SocketName) }

// maxSocketPath is the longest path a Unix socket address holds on Linux
// (sun_path is 108 bytes, one for the terminating NUL).
const maxSocketPath = 107

// ListenUnix listens on the socket at path, readable and writable by this
// user only. A socket file nobody answers on (left by a crashed engine) is
// replaced; one that answers is an error: another engine serves it.
func ListenUnix(path string) (net.Listener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes, over the %d a Unix socket allows: use a shorter --data directory", path, len(path), maxSocketPath)
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

// ErrStale means the local engine runs another configuration (policy,
// manifest, flags or binary) than the hook that reached it: it stops, and
// the hook starts one with its own.
var ErrStale = errors.New("the local engine runs another configuration")

// HeaderConfig carries a hook's configuration digest to the local engine.
const HeaderConfig = "X-Agentledger-Config"

// ConfigDigest identifies the configuration a local engine is started
// with: its command line, and the size and modification time of the
// binary and of every policy and manifest file it reads (walking
// directories). A hook whose digest differs from the running engine's
// gets ErrStale, so that a changed policy or an upgraded binary takes
// effect at the next hook, not when the engine happens to idle out.
func ConfigDigest(args []string, files []string) string {
	h := sha256.New()
	for _, a := range args {
		h.Write([]byte(a))
		h.Write([]byte{0})
	}
	for _, f := range files {
		_ = filepath.WalkDir(f, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if info, err := d.Info(); err == nil {
				fmt.Fprintf(h, "%s\x00%d\x00%d\x00", p, info.Size(), info.ModTime().UnixNano())
			}
			return nil
		})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Local reaches the local engine of a data directory, starting it when no
// engine answers.
type Local struct {
	// DataDir is the data directory; its socket is SocketPath(DataDir).
	DataDir string
	// Command starts an engine serving the socket (when empty, no engine
	// is started: the caller only reaches a running one).
	Command []string
	// Wait bounds how long a call waits for an engine it started to
	// answer. Default 10s.
	Wait time.Duration
	// Config is the digest of Command's configuration (ConfigDigest); an
	// engine started with another one is replaced.
	Config string
}

// Post sends one hook input to the local engine, starting the engine first
// when none answers.
func (l *Local) Post(ctx context.Context, req Request) (HookResponse, error) {
	sock := SocketPath(l.DataDir)
	client := unixClient(sock)
	req.config = l.Config
	r, err := PostHook(ctx, client, "http://engine", "", req)
	if errors.Is(err, ErrStale) && len(l.Command) > 0 {
		// The engine stops itself; wait until the socket is free.
		for deadline := time.Now().Add(10 * time.Second); healthy(ctx, client) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		err = syscall.ECONNREFUSED
	}
	if err == nil || !isNotServing(err) || len(l.Command) == 0 {
		return r, err
	}
	if err := l.start(ctx, client); err != nil {
		return r, err
	}
	return PostHook(ctx, client, "http://engine", "", req)
}

// start starts the local engine, unless another hook process is already
// starting it: one process at a time holds DATA/engine.start.lock, and
// whoever holds it starts the engine only if the socket still does not
// answer; the others find it answering once they hold the lock.
func (l *Local) start(ctx context.Context, client *http.Client) error {
	if err := os.MkdirAll(l.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	wait := l.Wait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	unlock, err := lockFile(ctx, filepath.Join(l.DataDir, "engine.start.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if healthy(ctx, client) {
		return nil
	}
	logf, err := os.OpenFile(filepath.Join(l.DataDir, "engine.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("engine log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(l.Command[0], l.Command[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives the hook and its process group
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the local engine: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for tick := time.NewTicker(5 * time.Millisecond); ; {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the local engine did not answer on %s within %s (see %s)", SocketPath(l.DataDir), wait, logf.Name())
		case err := <-exited:
			return fmt.Errorf("the local engine exited at start (%v): %s", err, lastLine(logf.Name()))
		case <-tick.C:
			if healthy(ctx, client) {
				tick.Stop()
				return nil
			}
		}
	}
}

// lastLine is the last line of a log file, for an error message.
func lastLine(path string) string {
	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	return lines[len(lines)-1]
}

func healthy(ctx context.Context, client *http.Client) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://engine/v1/version", strings.NewReader(`{"aarts_version":"0.1"}`))
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// isNotServing reports whether err means nothing listens on the socket.
func isNotServing(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableKeepAlives: true,
	}}
}

// lockFile takes an exclusive lock on path, waiting until ctx ends.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// PostHook sends one hook input to a running engine and returns its
// answer: an AARTS event to POST /v1/hooks, a host's native input to POST
// /v1/hooks/{host}.
func PostHook(ctx context.Context, client *http.Client, baseURL, token string, in Request) (HookResponse, error) {
	var r HookResponse
	url := strings.TrimRight(baseURL, "/") + "/v1/hooks"
	if in.Host != "" {
		url += "/" + in.Host
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(in.Body))
	if err != nil {
		return r, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if in.AutoApprove {
		req.Header.Set(HeaderAutoApprove, "1")
	}
	if in.config != "" {
		req.Header.Set(HeaderConfig, in.config)
	}
	if in.Size > int64(len(in.Body)) {
		req.Header.Set(HeaderInputSize, strconv.FormatInt(in.Size, 10))
		req.Header.Set(HeaderInputSHA256, in.SHA256)
		if in.Truncated {
			req.Header.Set(HeaderInputTruncated, "1")
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return r, fmt.Errorf("engine %s: %w", baseURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return r, fmt.Errorf("engine %s: %w", baseURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		_ = json.Unmarshal(body, &e)
		if resp.StatusCode == http.StatusConflict {
			return r, fmt.Errorf("engine %s: %w", baseURL, ErrStale)
		}
		return r, fmt.Errorf("engine %s: %s: %s", baseURL, resp.Status, e.Error)
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("engine %s: bad answer: %w", baseURL, err)
	}
	return r, nil
}
