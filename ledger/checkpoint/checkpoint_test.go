package checkpoint

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/ledger"
)

func chain(t *testing.T, tenant, session string, n int, tag string) []*ledger.Envelope {
	t.Helper()
	var out []*ledger.Envelope
	head := ledger.Head{}
	for i := 0; i < n; i++ {
		e, err := ledger.Seal(head, ledger.Event{TenantID: tenant, SessionID: session, EventType: "PreToolUse", TsUnixMs: int64(1000 + i),
			Payload: []byte(fmt.Sprintf(`{"i":%d,"tag":%q}`, i, tag))}, ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		head = e.Head()
	}
	return out
}

func TestCheckpointFindsTruncationAndRewrite(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(nil)
	a, b, c := chain(t, "acme", "s 1", 6, "x"), chain(t, "acme", "s2", 4, "x"), chain(t, "beta", "s3", 3, "x")
	ck, err := New("agentledger/LEDGER", logOf(a, b, c), Heads([][]*ledger.Envelope{a, b, c}))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := ck.Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := Open(signed, pub)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Heads) != 3 || cp.Heads[0].Session != "s 1" || cp.Heads[0].Seq != 5 {
		t.Fatalf("heads %+v", cp.Heads)
	}
	// Intact, and grown since: no fault.
	grown := append(clone(a), chain(t, "acme", "s 1", 8, "x")[6:]...)
	if f, _ := cp.Check(context.Background(), InChains([][]*ledger.Envelope{grown, b, c})); len(f) != 0 {
		t.Fatalf("intact ledger: %v", f)
	}
	// Truncated tail of s2, s3 gone, and s 1 rewritten from seq 3 with
	// valid hashes: each chain still verifies on its own.
	rewritten := append(clone(a[:3]), reseal(t, a[2], 3)...)
	faults, err := cp.Check(context.Background(), InChains([][]*ledger.Envelope{rewritten, b[:2]}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ledger.FaultKind{}
	for _, f := range faults {
		got[f.Session] = f.Kind
		if !errors.Is(f, ledger.ErrIntegrity) {
			t.Errorf("%v is not an integrity fault", f)
		}
	}
	if len(faults) != 3 || got["s 1"] != Rewritten || got["s2"] != Truncated || got["s3"] != Truncated {
		t.Fatalf("faults %v", faults)
	}
	// A changed byte in the note, or another key, fails the signature.
	if _, err := Open(bytes.Replace(signed, []byte(" 5 "), []byte(" 4 "), 1), pub); !errors.Is(err, ErrSignature) {
		t.Fatalf("edited checkpoint: %v", err)
	}
	other, _, _ := ed25519.GenerateKey(nil)
	if _, err := Open(signed, other); !errors.Is(err, ErrSignature) {
		t.Fatalf("other key: %v", err)
	}
	// A format 1 checkpoint (heads and their root) is still read; its
	// root must match the listed sessions.
	heads := Heads([][]*ledger.Envelope{a, b, c})
	v1 := &Checkpoint{Version: 1, Origin: "o", Size: int64(len(heads)), Root: Root(heads), Heads: heads}
	if got, err := parse(v1.Text()); err != nil || got.Version != 1 || len(got.Heads) != 3 {
		t.Fatalf("format 1: %+v %v", got, err)
	}
	lines := strings.Split(v1.Text(), "\n")
	wrong := Root(Heads([][]*ledger.Envelope{a, b}))
	lines[2] = base64.StdEncoding.EncodeToString(wrong[:])
	if _, err := parse(strings.Join(lines, "\n")); err == nil || !strings.Contains(err.Error(), "root") {
		t.Fatalf("a root that does not match its sessions: %v", err)
	}
}

// logOf is the log of chains, interleaved envelope by envelope as a
// stream would hold them.
func logOf(chains ...[]*ledger.Envelope) *Log {
	var l Log
	for i := 0; ; i++ {
		added := false
		for _, c := range chains {
			if i < len(c) {
				l.Add(c[i].Bytes())
				added = true
			}
		}
		if !added {
			return &l
		}
	}
}

func clone(es []*ledger.Envelope) []*ledger.Envelope { return append([]*ledger.Envelope(nil), es...) }

// reseal writes a different suffix after prev, from seq on, with valid
// hashes.
func reseal(t *testing.T, prev *ledger.Envelope, n int) []*ledger.Envelope {
	t.Helper()
	var out []*ledger.Envelope
	head := prev.Head()
	for i := 0; i < n; i++ {
		e, err := ledger.Seal(head, ledger.Event{TenantID: prev.TenantID(), SessionID: prev.SessionID(), EventType: "PreToolUse",
			TsUnixMs: 5000, Payload: []byte(fmt.Sprintf(`{"forged":%d}`, i))}, ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		head = e.Head()
	}
	return out
}

// TestWitnessFollowsOneLogPerKey: a fork under a renamed origin, or a
// malformed origin, is refused like a fork under the same one.
func TestWitnessFollowsOneLogPerKey(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	_, wkey, _ := ed25519.GenerateKey(nil)
	a := chain(t, "acme", "s", 3, "x")
	b := chain(t, "acme", "s", 3, "forked")
	sign := func(origin string, l *Log) []byte {
		c, err := New(origin, l, Heads([][]*ledger.Envelope{a}))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := c.Sign(key)
		return msg
	}
	la, lb := logOf(a), logOf(b)
	w := &Witness{Name: "w.example/1", Key: wkey}
	pub := key.Public().(ed25519.PublicKey)
	if _, err := w.Cosign(sign(Origin("LEDGER", la), la), pub, nil, time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	for name, origin := range map[string]string{
		"same origin":    Origin("LEDGER", la),
		"renamed origin": Origin("LEDGER", la) + "x",
		"another id":     "agentledger/LEDGER/0000000000000000",
		"trailing space": Origin("LEDGER", la) + " ",
		"another stream": Origin("OTHER", lb),
		"its own id":     Origin("LEDGER", lb),
	} {
		if _, err := w.Cosign(sign(origin, lb), pub, nil, time.Unix(2, 0)); err == nil {
			t.Errorf("%s: the fork was cosigned", name)
		}
	}
	// And the log check names an origin that is not the stream's.
	c, _ := New("agentledger/LEDGER/0000000000000000", la, nil)
	if f := c.CheckLog(la); f == nil || f.Kind != LogRewritten {
		t.Errorf("a checkpoint naming another log: %v", f)
	}
}

// TestWitnessFollowsEachStream: the streams of one ledger spread over
// several are each a log the ledger's one checkpoint key signs; a witness
// cosigns each and still refuses a new log in a stream it follows, a
// one-stream ledger's name beside them, and another ledger's streams.
// Checkpoints of two streams are not held to each other.
func TestWitnessFollowsEachStream(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	_, wkey, _ := ed25519.GenerateKey(nil)
	pub := key.Public().(ed25519.PublicKey)
	a, b, forked := chain(t, "acme", "a", 3, "x"), chain(t, "acme", "b", 2, "y"), chain(t, "acme", "b", 2, "forked")
	la, lb, lf := logOf(a), logOf(b), logOf(forked)
	cks := map[string]*Checkpoint{}
	sign := func(stream string, l *Log, c []*ledger.Envelope) []byte {
		ck, err := New(Origin(stream, l), l, Heads([][]*ledger.Envelope{c}))
		if err != nil {
			t.Fatal(err)
		}
		cks[stream] = ck
		msg, _ := ck.Sign(key)
		return msg
	}
	w := &Witness{Name: "w.example/1", Key: wkey}
	for _, c := range []struct {
		name string
		msg  []byte
		ok   bool
	}{
		{"stream 0", sign("LEDGER-0", la, a), true},
		{"stream 1", sign("LEDGER-1", lb, b), true},
		{"stream 1 again", sign("LEDGER-1", lb, b), true},
		{"a new log in stream 1", func() []byte {
			ck, _ := New(Origin("LEDGER-1", lf), lf, nil)
			msg, _ := ck.Sign(key)
			return msg
		}(), false},
		{"the ledger's name as a stream", sign("LEDGER", lf, forked), false},
		{"another ledger's stream", sign("OTHER-0", lf, forked), false},
		{"a leading zero", sign("LEDGER-01", lf, forked), false},
	} {
		_, err := w.Cosign(c.msg, pub, nil, time.Unix(1, 0))
		if (err == nil) != c.ok {
			t.Errorf("%s: cosign %v, want ok %v", c.name, err, c.ok)
		}
	}
	if f := AllConsistent([]*Checkpoint{cks["LEDGER-0"], cks["LEDGER-1"]}, []string{"0", "1"}); len(f) != 0 {
		t.Errorf("checkpoints of two streams held to each other: %v", f)
	}
	if f := AllConsistent([]*Checkpoint{cks["LEDGER-0"], cks["OTHER-0"]}, []string{"0", "other"}); len(f) == 0 {
		t.Error("checkpoints of two ledgers not held to each other")
	}
	for origin, want := range map[string]string{"agentledger/LEDGER-2/0123456789abcdef": "LEDGER-2", "agentledger/LEDGER": "LEDGER", "agentledger": "", "other/x/y": ""} {
		if got := StreamOf(origin); got != want {
			t.Errorf("StreamOf(%q) = %q, want %q", origin, got, want)
		}
	}
}
