package aarts

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/canon"
	"github.com/agentledger/agentledger/internal/randvalue"
)

// TestFitsFieldsImpliesDecodes: for random members of every hook point's
// own fields — of their types, of other types, under case-folded names —
// whenever fitsFields says the members fit, decoding them into the fields'
// types succeeds; and it says so for most well-typed events.
func TestFitsFieldsImpliesDecodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 38))
	fit, typed := 0, 0
	for hp := range hooks {
		v := fieldsOf(hp)
		if v == nil {
			continue
		}
		typ := reflect.TypeOf(v).Elem()
		for range 300 {
			val := reflect.New(typ)
			randvalue.Fill(rng, val.Elem(), 4)
			raw, err := json.Marshal(val.Interface())
			if err != nil {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			wellTyped := true
			for k := range m {
				switch rng.IntN(6) {
				case 0:
					m[k], wellTyped = randvalue.Any(rng, 2), false
				case 1:
					m[strings.ToUpper(k)], wellTyped = randvalue.Any(rng, 2), false
				}
			}
			c, err := canon.AppendMarshal(nil, m)
			if err != nil {
				continue
			}
			d, ok := canon.DecodeCanonical(c, 64)
			if !ok {
				t.Fatalf("%s", c)
			}
			e := &Event{HookPoint: hp}
			_, derr := e.decodeFields(c)
			if fitsFields(hp, d.(map[string]any)) {
				fit++
				if derr != nil {
					t.Fatalf("%s: %s fits, but decoding says %v", hp, c, derr)
				}
			}
			if wellTyped {
				typed++
			}
		}
	}
	if fit < typed/2 {
		t.Fatalf("only %d fit of %d well-typed events", fit, typed)
	}
}

// TestRecordedEventsFit: every hook event of the recorded sessions is
// read in one pass and checked without a second decode.
func TestRecordedEventsFit(t *testing.T) {
	files, _ := filepath.Glob("../fixtures/sessions/*/*.ndjson")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var env struct {
				EventType string          `json:"event_type"`
				Payload   json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal([]byte(line), &env); err != nil {
				t.Fatal(err)
			}
			if !IsHookPoint(env.EventType) {
				continue
			}
			d, ok := canon.DecodeCanonical(env.Payload, maxCanonicalDepth)
			if !ok || !fitsFields(env.EventType, d.(map[string]any)) {
				t.Errorf("%s: a recorded %s does not fit: %.200s", filepath.Base(f), env.EventType, env.Payload)
			}
			n++
		}
	}
	if n < 200 {
		t.Fatalf("only %d hook events", n)
	}
}
