package ledger

import (
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/purity"
)

// TestPure keeps the ledger package free of I/O and clocks: it may not
// import os, net, time, log or syscall itself, and nothing it depends on may
// reach the network or NATS.
func TestPure(t *testing.T) {
	purity.Check(t, func(imp string) bool { return purity.IO(imp) || imp == "net/url" }, func(d string) bool {
		return strings.HasPrefix(d, "net") || strings.Contains(d, "nats-io") || strings.Contains(d, "open-policy-agent")
	})
}
