package action

import (
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/purity"
)

// TestPure keeps the analysis pure and small in what it links: no I/O,
// clock or randomness of its own; of this module only the AARTS event model
// it interprets (and the pure packages that model uses); of other modules
// only the shell parser and the canonicalizer.
func TestPure(t *testing.T) {
	purity.Check(t, purity.IO, func(d string) bool {
		if !strings.Contains(strings.Split(d, "/")[0], ".") {
			return false // the standard library
		}
		switch {
		case d == "github.com/agentledger/agentledger/aarts", d == "github.com/agentledger/agentledger/action",
			d == "github.com/agentledger/agentledger/ledger", d == "github.com/agentledger/agentledger/canon", d == "github.com/agentledger/agentledger/elide", d == "github.com/agentledger/agentledger/detect",
			strings.HasPrefix(d, "mvdan.cc/sh/"), strings.HasPrefix(d, "github.com/gowebpki/jcs"):
			return false
		}
		return true
	})
}
