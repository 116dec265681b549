// Package hookwire is the hook API as a hook process speaks it: the input
// it sends (the host's bytes, how much of them it read, and the
// configuration the call is to be decided under), how it reaches the user's
// local engine over the data directory's Unix socket (starting the engine
// when none answers), and what it reads of the answer. It links neither the
// policy engine nor the store, so that the process a host starts for every
// tool call stays small (cmd/agentledger-hook); the engine serves the same
// wire (engine.Handler).
package hookwire

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// SocketName is the local engine's socket in a data directory.
const SocketName = "engine.sock"

// SocketPath returns the local engine's socket of a data directory:
// DATA/engine.sock, or, where that is longer than a Unix socket address
// holds (a data directory under a deep home), a short one named by a
// digest of the directory in this user's own directory under /tmp
// (ShortSocketDir), which the engine creates private to the user.
func SocketPath(dataDir string) string {
	p := filepath.Join(dataDir, SocketName)
	if len(p) <= MaxSocketPath {
		return p
	}
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	sum := sha256.Sum256([]byte(dataDir))
	return filepath.Join(ShortSocketDir(), "engine-"+hex.EncodeToString(sum[:8])+".sock")
}

// MaxSocketPath is the longest path a Unix socket address holds (Linux's
// sun_path is 108 bytes, one for the terminating NUL; macOS's 104).
const MaxSocketPath = 103

// ShortSocketDir is the directory of the short sockets of this user's data
// directories whose own socket path would be too long.
func ShortSocketDir() string { return fmt.Sprintf("/tmp/agentledger-%d", os.Getuid()) }

// MaxInput is the most of one hook input agentledger reads: an input up to
// it is recorded (its longest values cut to fit the record's limit), one
// over it is rejected with its length and digest.
const MaxInput = 16 << 20

// Headers of the hook API.
const (
	// HeaderAutoApprove "1" is a host adapter's opt-in to answer every
	// allow with the host's own allow.
	HeaderAutoApprove = "X-Agentledger-Auto-Approve"
	// HeaderInputSize and HeaderInputSHA256 carry the length and SHA-256
	// of a host's whole input when a hook sends only its start (the input
	// is over MaxInput and will be rejected); HeaderInputTruncated says it
	// went on past what the hook read at all.
	HeaderInputSize      = "X-Agentledger-Input-Size"
	HeaderInputSHA256    = "X-Agentledger-Input-Sha256"
	HeaderInputTruncated = "X-Agentledger-Input-Truncated"
	// HeaderHostAsks "1" is a hook's word that the host prompts its user
	// for an ask (Copilot's interactive CLI): otherwise an adapter whose
	// host may have no one to prompt answers an ask with deny.
	HeaderHostAsks = "X-Agentledger-Host-Asks"
	// HeaderUnattended "1" is a hook's word that no one attends the host's
	// run (Claude Code's print mode): an ask is deferred where the host has
	// a form for that, and is a deny where it does not.
	HeaderUnattended = "X-Agentledger-Unattended"
	// HeaderMonitor "1" is a hook's word that its host runs agentledger in
	// monitor mode: the call is judged and recorded, not enforced.
	HeaderMonitor = "X-Agentledger-Monitor"
	// HeaderConfig carries the configuration a call is decided under
	// (Config.Header), to the local engine.
	HeaderConfig = "X-Agentledger-Config"
	// HeaderBinary carries the identity (BinaryIdentity) of the engine
	// program the hook would start: a local engine running another one
	// stops, so that an upgrade takes effect at the next hook.
	HeaderBinary = "X-Agentledger-Binary"
)

// Config is what a hook's flags say a call is decided under. It travels
// with every request to the local engine, which serves every configuration
// at once (caching each by the digest of its files).
type Config struct {
	// Tenant the call's session belongs to; "" is the default tenant.
	Tenant string `json:"tenant,omitempty"`
	// Manifest is the capability manifest file (absolute); "" is the
	// built-in one.
	Manifest string `json:"manifest,omitempty"`
	// Policy are the policy files or directories (absolute); none is the
	// built-in policy.
	Policy []string `json:"policy,omitempty"`
	// FailOpen: when the engine cannot decide and record a valid event,
	// give no decision instead of deny.
	FailOpen bool `json:"fail_open,omitempty"`
	// Hook is the program the host runs for every call (protected from
	// every tool, like the engine's own).
	Hook string `json:"hook,omitempty"`
}

// Header is c as the value of HeaderConfig: its JSON, base64url.
func (c Config) Header() string {
	raw, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// ParseConfig reads a HeaderConfig value. Paths must be absolute: a
// relative one would depend on the engine's working directory.
func ParseConfig(h string) (Config, error) {
	var c Config
	raw, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return c, fmt.Errorf("%s: not base64url: %w", HeaderConfig, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%s: %w", HeaderConfig, err)
	}
	for _, p := range append([]string{c.Manifest, c.Hook}, c.Policy...) {
		if p != "" && p != "default" && !filepath.IsAbs(p) {
			return c, fmt.Errorf("%s: %q is not an absolute path", HeaderConfig, p)
		}
	}
	return c, nil
}

// Input is one hook input as a hook sends it.
type Input struct {
	// Host names the adapter whose native input Body is; "" means Body is
	// an AARTS hook event.
	Host string
	// Body is the input, or its first MaxInput bytes when Size says it was
	// longer.
	Body []byte
	// Size and SHA256 describe the whole input when Body is only its start.
	Size   int64
	SHA256 string
	// Truncated says the input went on past what the hook read at all.
	Truncated bool
	// AutoApprove is the hook's opt-in to answer every allow with the
	// host's own allow.
	AutoApprove bool
	// HostAsks is the hook's word that the host prompts for an ask.
	HostAsks bool
	// Unattended is the hook's word that no one attends the run
	// (Unattended()).
	Unattended bool
	// Monitor is the hook's word that the host runs agentledger in monitor
	// mode.
	Monitor bool
	// Config, when set, is the configuration the call is decided under
	// (the local engine's requests).
	Config *Config
	// Binary is the identity of the engine program the hook would start
	// (BinaryIdentity), for the local engine to compare with its own.
	Binary string
}

// ErrStale means the local engine runs another program than the hook's:
// it stops, and the hook starts the new one.
var ErrStale = errors.New("the local engine runs another program")

// ReadBounded reads r, keeping at most keep+1 bytes; past that it reads on
// (hashing, not keeping) up to limit bytes in all. It returns what it kept,
// the length read, and, when it kept less than it read, the hex SHA-256 of
// everything read; truncated is true when r held more than limit bytes.
func ReadBounded(r io.Reader, keep, limit int64) (kept []byte, size int64, sum string, truncated bool, err error) {
	kept, err = io.ReadAll(io.LimitReader(r, keep+1))
	if err != nil || int64(len(kept)) <= keep {
		return kept, int64(len(kept)), "", false, err
	}
	h := sha256.New()
	h.Write(kept)
	n, err := io.Copy(h, io.LimitReader(r, limit-int64(len(kept))))
	if err == nil {
		var one [1]byte
		m, _ := r.Read(one[:])
		truncated = m > 0
	}
	return kept, int64(len(kept)) + n, hex.EncodeToString(h.Sum(nil)), truncated, err
}

// Answer is what a hook reads of the engine's answer: the decision, and
// the host's native output to print.
type Answer struct {
	Decision   string          `json:"decision"`
	ReasonCode string          `json:"reason_code"`
	HostOutput json.RawMessage `json:"host_output,omitempty"`
}

// BinaryIdentity identifies a program file by its path, size and
// modification time: what changes when it is rebuilt or upgraded. "" when
// it cannot be read.
func BinaryIdentity(path string) string {
	info, err := os.Stat(path)
	if err != nil {
		return ""
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", path, info.Size(), info.ModTime().UnixNano())))
	return hex.EncodeToString(h[:16])
}

// Unattended reports whether the hook runs in a host run no one attends:
// Claude Code sets CLAUDE_CODE_SESSION_ATTENDED=0 for its hooks in print
// mode (-p); AGENTLEDGER_UNATTENDED=1 says so for any host.
func Unattended() bool {
	return os.Getenv("CLAUDE_CODE_SESSION_ATTENDED") == "0" || os.Getenv("AGENTLEDGER_UNATTENDED") == "1"
}

// PrivateSocketDir checks that dir is this user's private directory: a
// directory (not a link) it owns that no one else may enter. A socket in
// the shared /tmp is answered only from such a directory: in any other,
// another user could answer for the engine.
func PrivateSocketDir(dir string) error {
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !info.IsDir() || !ok || int(st.Uid) != os.Getuid() || info.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("socket directory %s is not this user's private directory", dir)
	}
	return nil
}

// CheckSocket refuses to reach an engine socket that another user could
// serve: a short socket (SocketPath) only in this user's private
// directory.
func CheckSocket(path string) error {
	if dir := filepath.Dir(path); dir == ShortSocketDir() {
		return PrivateSocketDir(dir)
	}
	return nil
}

// unixSocket is a new Unix stream socket, closed on exec and
// non-blocking (so the runtime's poller serves it), on every Unix.
func unixSocket() (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return -1, err
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// dialSocket connects to the engine socket at path (CheckSocket first),
// with the system's calls alone: the thin hook links no net package, and
// so no C library and no dynamic loader, and starts as fast as a program
// can. The connection honours deadlines (the runtime's poller), and a
// listener whose queue is full is tried again until ctx ends.
func dialSocket(ctx context.Context, path string) (*os.File, error) {
	if err := CheckSocket(path); err != nil {
		return nil, err
	}
	for {
		fd, err := unixSocket()
		if err != nil {
			return nil, fmt.Errorf("socket: %w", err)
		}
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err == nil {
			return os.NewFile(uintptr(fd), path), nil
		}
		syscall.Close(fd)
		// A listener whose queue is full: EAGAIN (Linux), EINPROGRESS
		// (where a connect may complete later).
		if err != syscall.EAGAIN && err != syscall.EINPROGRESS {
			return nil, &os.PathError{Op: "connect", Path: path, Err: err}
		}
		select {
		case <-ctx.Done():
			return nil, &os.PathError{Op: "connect", Path: path, Err: ctx.Err()}
		case <-time.After(time.Millisecond):
		}
	}
}
