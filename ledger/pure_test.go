package ledger

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPure keeps the ledger package free of I/O and clocks: it may not
// import os, net, time, log or syscall itself, and nothing it depends on may
// reach the network or NATS.
func TestPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		switch {
		case imp == "os", imp == "time", imp == "log", imp == "syscall", imp == "math/rand", imp == "math/rand/v2", imp == "crypto/rand",
			strings.HasPrefix(imp, "net"), strings.HasPrefix(imp, "os/"), strings.HasPrefix(imp, "log/"):
			t.Errorf("ledger imports %s", imp)
		}
	}
	deps, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, d := range strings.Fields(string(deps)) {
		if strings.HasPrefix(d, "net") || strings.Contains(d, "nats-io") || strings.Contains(d, "open-policy-agent") {
			t.Errorf("ledger depends on %s", d)
		}
	}
}
