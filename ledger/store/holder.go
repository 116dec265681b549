package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Holder says which process holds a data directory, and how other
// processes reach what it serves.
type Holder struct {
	PID int `json:"pid"`
	// Program is what holds it: "ledger serve", "engine serve", ...
	Program string `json:"program"`
	// NATSURL is the embedded server's client URL, when it listens.
	NATSURL string `json:"nats_url,omitempty"`
	// Socket is the engine's Unix socket, when an engine serves one.
	Socket string `json:"socket,omitempty"`
}

// ReadHolder reads who holds dir, as far as the lock file says.
func ReadHolder(dir string) Holder {
	var h Holder
	raw, err := os.ReadFile(filepath.Join(dir, "agentledger.lock"))
	if err == nil {
		_ = json.Unmarshal(raw, &h)
	}
	return h
}

// LockedError is ErrLocked with what holds the directory.
type LockedError struct {
	Dir    string
	Holder Holder
}

func (e *LockedError) Error() string {
	h := e.Holder
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s is held by ", ErrLocked, e.Dir)
	if h.PID == 0 {
		b.WriteString("another process")
	} else {
		fmt.Fprintf(&b, "%s (pid %d)", orDefault(h.Program, "another agentledger process"), h.PID)
	}
	switch {
	case h.Socket != "":
		fmt.Fprintf(&b, "; hooks reach its engine through %s (engine hook does so by itself)", h.Socket)
		if h.NATSURL != "" {
			fmt.Fprintf(&b, ", other commands with --nats %s", h.NATSURL)
		}
	case h.NATSURL != "":
		fmt.Fprintf(&b, "; reach its ledger with --nats %s", h.NATSURL)
	default:
		b.WriteString("; stop it, or use another --data directory")
	}
	return b.String()
}

// Unwrap makes a LockedError an ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// HeldBy reports whether a process holds dir's store now (its lock is
// taken), and what the lock file says of it. A lock file left by a process
// that died is not held.
func HeldBy(dir string) (Holder, bool) {
	if !locked(dir) {
		return Holder{}, false
	}
	return ReadHolder(dir), true
}
