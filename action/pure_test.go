package action

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPure keeps the analysis pure and small in what it links: no I/O,
// clock or randomness of its own; of this module only the AARTS event model
// it interprets (and the pure packages that model uses); of other modules
// only the shell parser and the canonicalizer.
func TestPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		switch {
		case imp == "os", imp == "time", imp == "log", imp == "syscall", imp == "math/rand", imp == "math/rand/v2", imp == "crypto/rand",
			strings.HasPrefix(imp, "net") && imp != "net/url", strings.HasPrefix(imp, "os/"), strings.HasPrefix(imp, "log/"):
			t.Errorf("action imports %s", imp)
		}
	}
	deps, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, d := range strings.Fields(string(deps)) {
		first := strings.Split(d, "/")[0]
		if !strings.Contains(first, ".") {
			continue // the standard library
		}
		switch {
		case d == "github.com/agentledger/agentledger/aarts", d == "github.com/agentledger/agentledger/action",
			d == "github.com/agentledger/agentledger/ledger", d == "github.com/agentledger/agentledger/canon",
			strings.HasPrefix(d, "mvdan.cc/sh/"), strings.HasPrefix(d, "github.com/gowebpki/jcs"):
		default:
			t.Errorf("action depends on %s", d)
		}
	}
}
