package ledger

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/randvalue"
)

type edSigner struct{ key ed25519.PrivateKey }

func (s edSigner) KeyID() string                          { return "test-key" }
func (s edSigner) Alg() string                            { return "ed25519" }
func (s edSigner) SignMessage(msg []byte) ([]byte, error) { return ed25519.Sign(s.key, msg), nil }

// record is shaped like a verdict record: nested values, raw JSON, maps.
type record struct {
	ForSeq     uint64          `json:"for_seq"`
	Decision   string          `json:"decision"`
	Reasons    []string        `json:"reasons,omitempty"`
	Directives map[string]any  `json:"directives,omitempty"`
	Receipt    json.RawMessage `json:"receipt,omitempty"`
	Enforced   *bool           `json:"enforced,omitempty"`
	Confidence *float64        `json:"confidence,omitempty"`
}

// TestPrepareRecordIsSeal: a record prepared from its value seals to the
// envelope Seal makes of its canonical text (json.Marshal's, canonicalized),
// signed or not, at genesis or linked; what Seal refuses, PrepareRecord
// refuses. (Given json.Marshal's own text, Seal counts its escapes of <, >
// and & against the byte limit: TestPrepareRecordCountsStoredBytes.)
func TestPrepareRecordIsSeal(t *testing.T) {
	signer := edSigner{ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))}
	rng := rand.New(rand.NewPCG(3, 8785))
	head := Head{Seq: 4, Hash: strings.Repeat("ab", 32)}
	sealed, refused := 0, 0
	for i := range 2000 {
		var r record
		randvalue.Fill(rng, reflect.ValueOf(&r).Elem(), 6)
		ev := Event{TenantID: "acme", SessionID: "s1", EventType: EventVerdict, TsUnixMs: int64(i)}
		if i%2 == 0 {
			ev.Signer = signer
		}
		lim := Limits{MaxDepth: 4 + i%4, MaxBytes: 400 + i}
		raw, err := json.Marshal(r)
		if err != nil {
			continue
		}
		if c, err := Canonicalize(raw, Limits{MaxBytes: 1 << 30, MaxDepth: 1 << 10}); err == nil {
			raw = c
		}
		h := head
		if i%3 == 0 {
			h = Head{}
		}
		want, werr := seal(h, ev, raw, lim)
		draft, gerr := PrepareRecord(ev, &r, lim)
		var got *Envelope
		if gerr == nil {
			got, gerr = draft.Seal(h)
		}
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("record %d: Seal says %v, PrepareRecord says %v\n%s", i, werr, gerr, raw)
		}
		if werr != nil {
			if !errors.Is(gerr, ErrInvalidInput) {
				t.Fatalf("record %d: %v is not an input error", i, gerr)
			}
			refused++
			continue
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("record %d:\nPrepareRecord: %s\nSeal:          %s", i, got.Bytes(), want.Bytes())
		}
		sealed++
	}
	if sealed < 300 || refused < 50 {
		t.Fatalf("%d sealed, %d refused: the cases miss one side", sealed, refused)
	}
	if _, err := PrepareRecord(Event{TenantID: "acme", SessionID: "s1", EventType: "PreToolUse", TsUnixMs: 1}, &record{}, Limits{}); err == nil {
		t.Fatal("a hook event was prepared as a record")
	}
}

func seal(h Head, ev Event, raw []byte, lim Limits) (*Envelope, error) {
	ev.Payload = raw
	return Seal(h, ev, lim)
}

// TestPrepareFromIsSeal: an envelope's event prepared again seals, at
// another position, to what sealing the same event there gives; limits
// tighter than its size refuse it as Seal would.
func TestPrepareFromIsSeal(t *testing.T) {
	payload := []byte(`{"hook_point":"PreToolUse","tool_input":{"command":"go test ./...","z":[1,2.5,"é"]},"a":"<&>"}`)
	ev := Event{TenantID: "acme", SessionID: "s1", EventType: "PreToolUse", TsUnixMs: 1700000000123, Payload: payload}
	rec, err := Seal(Head{}, ev, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []Head{{}, {Seq: 9, Hash: strings.Repeat("0f", 32)}} {
		want, err := Seal(h, ev, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := PrepareFrom(rec, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Seal(h)
		if err != nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("at %+v: %v\nPrepareFrom: %s\nSeal:        %s", h, err, got.Bytes(), want.Bytes())
		}
	}
	small := Limits{MaxBytes: len(rec.Bytes()) - 1}
	_, serr := Seal(Head{}, ev, small)
	_, perr := PrepareFrom(rec, small)
	if serr == nil || perr == nil {
		t.Fatalf("an envelope over the byte limit: Seal %v, PrepareFrom %v", serr, perr)
	}
}

// TestPrepareRecordCountsStoredBytes: the byte limit applies to the
// record as stored. A record whose json.Marshal text is over the limit
// only by its escapes of < (six bytes each, one stored) is sealed; one
// over the limit as stored is refused.
func TestPrepareRecordCountsStoredBytes(t *testing.T) {
	ev := Event{TenantID: "acme", SessionID: "s1", EventType: EventVerdict, TsUnixMs: 1}
	r := record{Decision: "deny", Reasons: []string{strings.Repeat("<", 300)}}
	raw, _ := json.Marshal(r)
	lim := Limits{MaxBytes: 1000}
	if len(raw) <= lim.MaxBytes {
		t.Fatalf("json.Marshal's text is %d bytes: the case needs it over %d", len(raw), lim.MaxBytes)
	}
	if _, err := seal(Head{}, ev, raw, lim); err == nil {
		t.Fatal("Seal took json.Marshal's text over the limit")
	}
	d, err := PrepareRecord(ev, &r, lim)
	if err != nil {
		t.Fatalf("a record of %d stored bytes under a %d-byte limit: %v", len(r.Reasons[0]), lim.MaxBytes, err)
	}
	e, err := d.Seal(Head{})
	if err != nil || len(e.Bytes()) > lim.MaxBytes {
		t.Fatalf("%v, %d bytes", err, len(e.Bytes()))
	}
	r.Reasons[0] = strings.Repeat("<", 1000)
	if _, err := PrepareRecord(ev, &r, lim); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("a record over the limit as stored: %v", err)
	}
}

// TestPrepareFromChecksDepth: an envelope read under looser limits is
// refused under tighter ones, as Seal refuses its payload.
func TestPrepareFromChecksDepth(t *testing.T) {
	payload := []byte(`{"a":{"b":{"c":{"d":[1]}}}}`)
	ev := Event{TenantID: "acme", SessionID: "s1", EventType: "PreToolUse", TsUnixMs: 1, Payload: payload}
	rec, err := Seal(Head{}, ev, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for depth := 3; depth <= 6; depth++ {
		lim := Limits{MaxDepth: depth}
		_, serr := Seal(Head{}, ev, lim)
		_, perr := PrepareFrom(rec, lim)
		if (serr == nil) != (perr == nil) || serr != nil && serr.Error() != perr.Error() {
			t.Fatalf("depth limit %d: Seal says %v, PrepareFrom says %v", depth, serr, perr)
		}
	}
}
