package replay

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestReplayLinksNoNetwork: exact replay's contract is "no network", so its
// package links no NATS client or server, no store, no engine, and none of
// agentledger's packages it links imports net/http. (net/http is still in
// the binary through OPA itself, whose topdown carries the http.send
// builtin; agentledger's policies never call it.)
func TestReplayLinksNoNetwork(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		switch {
		case strings.HasPrefix(pkg, "github.com/nats-io/"):
			t.Errorf("replay links %s", pkg)
		case pkg == "github.com/agentledger/agentledger/engine" || pkg == "github.com/agentledger/agentledger/ledger/store":
			t.Errorf("replay links %s", pkg)
		case strings.HasPrefix(pkg, "github.com/agentledger/agentledger/") && slices.Contains(imports, "net/http"):
			t.Errorf("%s, linked by replay, imports net/http", pkg)
		}
	}
}
