package mcpproxy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/replay"
)

// TestMonitorMode (issue 40): the gateway in monitor mode, on both faces
// and revisions, blocks nothing that enforcing blocks — a rug-pulled tool
// is listed and called, a tool the manifest does not declare is listed
// and called, a result holding a secret reaches the client (redacted, as
// always), arguments the record cannot hold are passed on — records every
// verdict enforced
// false with no approval waiting, and replay exact over the session
// reports each of those as what enforcing would have stopped.
func TestMonitorMode(t *testing.T) {
	eachClient(t, func(t *testing.T) *rig {
		r := newRigWith(t, func(m *manifest.Manifest) {
			m.Tools = slices.DeleteFunc(m.Tools, func(s string) bool { return s == "mcp_call" })
			m.Tools = append(m.Tools, "mcp__filesystem__read_*", "mcp__filesystem__list_dir")
		}, []string{"-rug-pull"})
		r.monitor = true
		return r
	}, func(t *testing.T, r *rig, cs *mcp.ClientSession) {
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(tools.Tools) != 4 {
			t.Fatalf("tools/list in monitor mode: %v %v", err, tools)
		}
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"read_file", map[string]any{"path": "README.md"}},             // changed since pinned
			{"read_file", map[string]any{"path": "/home/dev/.ssh/id_rsa"}}, // a secret's path
			{"create_issue", map[string]any{"title": "x"}},                 // undeclared
		} {
			if res, text := call(t, cs, c.tool, c.args); strings.Contains(text, "agentledger: deny") || strings.Contains(text, "agentledger: ask") {
				t.Errorf("%s %v was blocked in monitor mode: %v %q", c.tool, c.args, res.IsError, text)
			}
		}
		// A number the record cannot hold exactly: the event is rejected
		// (on record), and in monitor mode the call is passed on.
		if res, text := call(t, cs, "create_issue", map[string]any{"title": "y", "n": json.Number("1234567890123456789")}); strings.Contains(text, "agentledger:") {
			t.Errorf("arguments the record cannot hold were blocked in monitor mode: %v %q", res.IsError, text)
		}
		if got := strings.Join(r.called(t), " "); got != "read_file read_file create_issue create_issue" {
			t.Errorf("the server received %q, want every call", got)
		}
		if pend := r.eng.Pending(context.Background(), "default"); len(pend) != 0 {
			t.Errorf("%d approvals wait in monitor mode", len(pend))
		}
		_, envs := r.recorded(t)
		var rejected int
		for _, e := range envs {
			switch e.EventType() {
			case ledger.EventRejected:
				rejected++
				if !strings.Contains(string(e.Payload()), `"answered":"none"`) {
					t.Errorf("seq %d: a rejection in monitor mode: %s", e.Seq(), e.Payload())
				}
			case ledger.EventVerdict:
				var v aarts.VerdictRecord
				if err := json.Unmarshal(e.Payload(), &v); err != nil || v.IsEnforced() {
					t.Errorf("seq %d: verdict recorded enforced (%v): %s", e.Seq(), err, e.Payload())
				}
			}
		}
		if rejected == 0 {
			t.Error("no rejection recorded for the arguments the record cannot hold")
		}
		rep := replay.Exact(context.Background(), r.eng.Decider(), envs)
		if rep.Fault != "" || !rep.Identical {
			t.Fatalf("replay of the monitored session: fault %q, diffs %v", rep.Fault, rep.Diffs)
		}
		rules := map[string]bool{}
		for _, b := range rep.WouldBlock {
			rules[b.HookPoint+"/"+b.Decision] = true
			rules[b.Rule+"/"+b.Decision] = true
		}
		for _, want := range []string{"PreMCPConnect/ask", "TOOL_CHANGED/deny", "SECRET_IN_RESULT/deny", "PERMISSION_UNDECLARED/deny"} {
			found := rules[want]
			if !found {
				t.Errorf("replay does not report the %s enforcing would have stopped: %+v", want, rep.WouldBlock)
			}
		}
	})
}
