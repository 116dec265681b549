// Package localengine reaches the user's local engine over the data
// directory's Unix socket with net/http, starting it when none answers:
// what the engine program's own hook, the ledger commands and the tests
// use. (The thin hook, cmd/agentledger-hook, speaks the same wire through
// hookwire.Exchange, without net/http.)
package localengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentledger/agentledger/hookwire"
)

// Local reaches the local engine of a data directory, starting it when no
// engine answers: every hook process of a user reaches one engine, so that
// hooks the host runs in parallel never contend for the data directory,
// and a session's state stays in memory between calls.
type Local struct {
	// DataDir is the data directory; its socket is hookwire.SocketPath(DataDir).
	DataDir string
	// Command starts an engine serving the socket (when empty, no engine
	// is started: the caller only reaches a running one).
	Command []string
	// Wait bounds how long a call waits for an engine it started to
	// answer. Default 10s.
	Wait time.Duration
	// Binary is the identity (BinaryIdentity) of the program Command
	// starts: an engine running another one is replaced.
	Binary string
}

// Post sends one hook input to the local engine, starting the engine first
// when none answers, and returns the body of its answer.
func (l *Local) Post(ctx context.Context, in hookwire.Input) ([]byte, error) {
	client := UnixClient(hookwire.SocketPath(l.DataDir))
	in.Binary = l.Binary
	r, err := Post(ctx, client, "http://engine", "", in)
	if errors.Is(err, hookwire.ErrStale) && len(l.Command) > 0 {
		// The engine stops itself; wait until the socket is free.
		for deadline := time.Now().Add(10 * time.Second); Healthy(ctx, client) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		err = syscall.ECONNREFUSED
	}
	if err == nil || !NotServing(err) || len(l.Command) == 0 {
		return r, err
	}
	if err := l.Start(ctx); err != nil {
		return nil, err
	}
	return Post(ctx, client, "http://engine", "", in)
}

// NotServing reports whether err means nothing listens on the socket.
func NotServing(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// Start starts the local engine unless one answers, and unless another
// process is already starting it: one process at a time holds
// DATA/engine.start.lock, and whoever holds it starts the engine only if
// the socket still does not answer; the others find it answering once they
// hold the lock.
func (l *Local) Start(ctx context.Context) error {
	client := UnixClient(hookwire.SocketPath(l.DataDir))
	if Healthy(ctx, client) {
		return nil
	}
	if len(l.Command) == 0 {
		return fmt.Errorf("no engine answers on %s", hookwire.SocketPath(l.DataDir))
	}
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
	if Healthy(ctx, client) {
		return nil
	}
	return l.spawn(ctx, client, wait)
}

func (l *Local) spawn(ctx context.Context, client *http.Client, wait time.Duration) error {
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
			return fmt.Errorf("the local engine did not answer on %s within %s (see %s)", hookwire.SocketPath(l.DataDir), wait, logf.Name())
		case err := <-exited:
			return fmt.Errorf("the local engine exited at start (%v): %s", err, lastLine(logf.Name()))
		case <-tick.C:
			if Healthy(ctx, client) {
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

// Post sends one hook input to the engine at baseURL and returns the body
// of its answer (a JSON engine.HookResponse): an AARTS event to POST
// /v1/hooks, a host's native input to POST /v1/hooks/{host}. A 409 is
// hookwire.ErrStale; any other status but 200 an error with the engine's message.
func Post(ctx context.Context, client *http.Client, baseURL, token string, in hookwire.Input) ([]byte, error) {
	url := strings.TrimRight(baseURL, "/") + "/v1/hooks"
	if in.Host != "" {
		url += "/" + in.Host
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(in.Body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, h := range hookwire.Headers(in) {
		req.Header.Set(h[0], h[1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("engine %s: %w", baseURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("engine %s: %w", baseURL, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusConflict:
		return nil, fmt.Errorf("engine %s: %w", baseURL, hookwire.ErrStale)
	}
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return nil, fmt.Errorf("engine %s: %s: %s", baseURL, resp.Status, e.Error)
}

// UnixClient is an HTTP client of the engine socket at path.
func UnixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if err := hookwire.CheckSocket(path); err != nil {
				return nil, err
			}
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableKeepAlives: true,
	}}
}

// Healthy reports whether an engine answers on client within a second.
func Healthy(ctx context.Context, client *http.Client) bool {
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
