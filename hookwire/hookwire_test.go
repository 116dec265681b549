package hookwire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigHeaderRoundTrip(t *testing.T) {
	c := Config{Tenant: "acme", Manifest: "/p/m é.json", Policy: []string{"/p/a", "default"}, FailOpen: true, Hook: "/bin/agentledger-hook"}
	got, err := ParseConfig(c.Header())
	if err != nil || got.Manifest != c.Manifest || len(got.Policy) != 2 || !got.FailOpen || got.Tenant != "acme" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, bad := range []string{
		"not base64!",
		Config{Manifest: "rel/m.json"}.Header(),
		"eyJ4IjoxfQ", // {"x":1}: an unknown member
	} {
		if _, err := ParseConfig(bad); err == nil {
			t.Errorf("ParseConfig(%q): no error", bad)
		}
	}
}

// TestProbeKeepsTheFirstValue: a duplicate session_id cannot move a record
// to another session, and a broken input still names what can be read.
func TestProbeKeepsTheFirstValue(t *testing.T) {
	p := Probe([]byte(`{"session_id":"a","hook_event_name":"PreToolUse","tool_name":"Bash","session_id":"b","tool_input":{"command":`))
	if p.SessionID != "a" || p.HostEvent != "PreToolUse" || p.Tool != "Bash" {
		t.Fatalf("%+v", p)
	}
	if p := Probe([]byte("not json")); p != (Probed{}) {
		t.Fatalf("%+v", p)
	}
}

func TestReadBounded(t *testing.T) {
	in := strings.Repeat("x", 100)
	kept, size, sum, truncated, err := ReadBounded(strings.NewReader(in), 10, 50)
	want := sha256.Sum256([]byte(in[:50]))
	if err != nil || len(kept) != 11 || size != 50 || sum != hex.EncodeToString(want[:]) || !truncated {
		t.Fatalf("kept %d size %d truncated %v err %v", len(kept), size, truncated, err)
	}
	kept, size, sum, truncated, err = ReadBounded(strings.NewReader(in), 200, 400)
	if err != nil || !bytes.Equal(kept, []byte(in)) || size != 100 || sum != "" || truncated {
		t.Fatalf("whole input: kept %d size %d sum %q", len(kept), size, sum)
	}
}

// TestSpoolUnansweredHoldsNoInput: the record names the session, host,
// event, tool, length and digest, never the input.
func TestSpoolUnansweredHoldsNoInput(t *testing.T) {
	dir := t.TempDir()
	in := []byte(`{"session_id":"s-1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo sk-live-123"}}`)
	if err := SpoolUnanswered(dir, Unanswered{Host: "claude-code", Input: in, Answered: "deny", Cause: os.ErrNotExist}, time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	recs, _, err := ReadSpool(filepath.Join(dir, SpoolName))
	if err != nil || len(recs) != 1 {
		t.Fatalf("%v %v", recs, err)
	}
	r := recs[0]
	sum := sha256.Sum256(in)
	if r.Session != "s-1" || r.Tenant != "default" || !bytes.Contains(r.Payload, []byte(hex.EncodeToString(sum[:]))) || bytes.Contains(r.Payload, []byte("sk-live")) {
		t.Fatalf("%+v %s", r, r.Payload)
	}
}
