package hookwire

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentledger/agentledger/internal/fsync"
)

// SpoolName is the spool directory in a data directory: records the engine
// owes the ledger (an EngineFailure, a Rejected envelope), each written and
// synced before the answer it records is given, appended by the engine
// (now, or when it next starts) and then removed.
const SpoolName = "spool"

// RejectedSession is the session of records whose own session cannot be
// read or used.
const RejectedSession = "rejected"

// SpoolRecord is one record in a spool directory.
type SpoolRecord struct {
	ID        string          `json:"id"`
	Tenant    string          `json:"tenant"`
	Session   string          `json:"session"`
	EventType string          `json:"event_type"`
	AtMs      int64           `json:"at_unix_ms"`
	Payload   json.RawMessage `json:"payload"`
}

// NewID returns a random 128-bit id, hex.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// WriteSpool writes r to dir as one file, synced, with the directory entry
// synced too.
func WriteSpool(dir string, r SpoolRecord) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, r.ID+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err = f.Write(raw); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, r.ID+".json"))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return fsync.Dir(dir)
}

// BadSpool is a file in a spool directory that is not a spooled record.
type BadSpool struct {
	Name string
	Raw  []byte
	Err  error
}

// ReadSpool reads every record in dir, oldest first (by name order within
// equal times, which is deterministic), and the files that are not records
// (each is the caller's to put on record and set aside: one bad file never
// keeps the others from the ledger).
func ReadSpool(dir string) ([]SpoolRecord, []BadSpool, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("spool: %w", err)
	}
	var out []SpoolRecord
	var bad []BadSpool
	for _, de := range ents {
		if !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			return nil, nil, fmt.Errorf("spool: %w", err)
		}
		var r SpoolRecord
		if err := json.Unmarshal(raw, &r); err != nil || r.ID == "" || r.Session == "" || r.ID+".json" != de.Name() {
			bad = append(bad, BadSpool{Name: de.Name(), Raw: raw, Err: fmt.Errorf("%s is not a spooled record", de.Name())})
			continue
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b SpoolRecord) int { return cmp.Compare(a.AtMs, b.AtMs) })
	return out, bad, nil
}

// Unanswered is a hook call no engine could decide: what the hook answered
// the host instead, and why. A hook writes it to the data directory's
// spool (SpoolUnanswered) before it answers, so the next engine on that
// directory records it as an EngineFailure: answered means recorded, even
// when no engine answered.
type Unanswered struct {
	Tenant string // "" is the default tenant
	Host   string // the adapter whose native input Input is
	Input  []byte // the input, or its first bytes
	// SHA256 and Size describe the whole input when Input is a prefix.
	SHA256   string
	Size     int64
	Answered string // deny, or none (fail-open)
	Cause    error
}

// SpoolUnanswered writes u to dataDir's spool, synced, as the payload of
// an EngineFailure: the call's session (the rejected session when none can
// be read; the engine moves one the ledger cannot take there too), the host, its event and tool names, and the input's digest and
// length — never the input itself, which may hold secrets the hook cannot
// seal.
func SpoolUnanswered(dataDir string, u Unanswered, now time.Time) error {
	tenant := cmp.Or(u.Tenant, "default")
	p := Probe(u.Input)
	session := cmp.Or(p.SessionID, RejectedSession) // one the ledger cannot take is moved there when drained
	sum := u.SHA256
	if sum == "" {
		s := sha256.Sum256(u.Input)
		sum = hex.EncodeToString(s[:])
	}
	ev, err := json.Marshal(map[string]any{"host": u.Host, "host_event": p.HostEvent, "tool_name": p.Tool, "sha256": sum,
		"length": max(u.Size, int64(len(u.Input)))})
	if err != nil {
		return err
	}
	id := NewID()
	raw, err := json.Marshal(map[string]any{"id": id, "event": json.RawMessage(ev), "answered": u.Answered,
		"error": "no engine answered the hook: " + u.Cause.Error(), "at_unix_ms": now.UnixMilli()})
	if err != nil {
		return err
	}
	return WriteSpool(filepath.Join(dataDir, SpoolName), SpoolRecord{ID: id, Tenant: tenant, Session: session,
		EventType: "EngineFailure", AtMs: now.UnixMilli(), Payload: raw})
}
