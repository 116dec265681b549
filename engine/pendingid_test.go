package engine

import (
	"encoding/base32"
	"testing"
)

// TestPendingIDsAreUnguessable: approval ids carry 128 random bits: no two
// of 10,000 agree, and every bit position is set in close to half of them
// (a counter, a clock or a weak generator would fail one or the other).
func TestPendingIDsAreUnguessable(t *testing.T) {
	const n = 10000
	seen := make(map[string]bool, n)
	var ones [128]int
	for i := 0; i < n; i++ {
		id := newPendingID()
		if seen[id] {
			t.Fatalf("id %s drawn twice", id)
		}
		seen[id] = true
		raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(id)
		if err != nil || len(raw) != 16 {
			t.Fatalf("id %q is not 128 bits: %v", id, err)
		}
		for b := 0; b < 128; b++ {
			if raw[b/8]>>(b%8)&1 == 1 {
				ones[b]++
			}
		}
	}
	for b, c := range ones {
		// Six standard deviations (50 each) either side of n/2: a fair bit
		// falls outside once in ~10^9 runs.
		if c < n/2-300 || c > n/2+300 {
			t.Errorf("bit %d set in %d of %d ids", b, c, n)
		}
	}
}
