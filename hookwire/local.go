package hookwire

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Local reaches the local engine of a data directory, starting it when no
// engine answers: every hook process of a user reaches one engine, so that
// hooks the host runs in parallel never contend for the data directory,
// and a session's state stays in memory between calls.
type Local struct {
	// DataDir is the data directory; its socket is SocketPath(DataDir).
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
func (l *Local) Post(ctx context.Context, in Input) ([]byte, error) {
	client := UnixClient(SocketPath(l.DataDir))
	in.Binary = l.Binary
	r, err := Post(ctx, client, "http://engine", "", in)
	if errors.Is(err, ErrStale) && len(l.Command) > 0 {
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
	client := UnixClient(SocketPath(l.DataDir))
	if Healthy(ctx, client) {
		return nil
	}
	if len(l.Command) == 0 {
		return fmt.Errorf("no engine answers on %s", SocketPath(l.DataDir))
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
			return fmt.Errorf("the local engine did not answer on %s within %s (see %s)", SocketPath(l.DataDir), wait, logf.Name())
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
