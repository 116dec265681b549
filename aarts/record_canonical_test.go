package aarts

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/agentledger/agentledger/canon"
	"github.com/agentledger/agentledger/internal/randvalue"
)

// TestVerdictRecordCanonical: the engine writes a verdict record with
// canon.AppendMarshal; for random records (every field set, raw members
// canonical or not) it is what canonicalizing json.Marshal's text gives.
func TestVerdictRecordCanonical(t *testing.T) {
	rng := rand.New(rand.NewPCG(110, 38))
	compared := 0
	for i := range 3000 {
		var r VerdictRecord
		randvalue.Fill(rng, reflect.ValueOf(&r).Elem(), 5)
		raw, err := json.Marshal(r)
		if err != nil {
			continue
		}
		want, werr := canon.Canonicalize(raw, canon.Limits{MaxBytes: 1 << 30, MaxDepth: 1 << 10})
		got, gerr := canon.AppendMarshal(nil, &r)
		if (werr != nil) != (gerr != nil) || werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("record %d:\nwritten:  %s %v\nvia json: %s %v", i, got, gerr, want, werr)
		}
		if werr == nil {
			compared++
		}
	}
	if compared < 1000 {
		t.Fatalf("only %d of 3000 random records were compared", compared)
	}
}
