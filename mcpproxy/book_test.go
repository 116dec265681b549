package mcpproxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPinsAcrossSessions: pins outlive the session that made them. A
// later session whose server serves a changed read_file (a new version,
// no change within the session) finds it quarantined from its first list
// and its call denied TOOL_CHANGED; an approver's resolution re-pins it,
// for that session and the ones after (no ask); and a session whose
// server serves the old definition again finds that one quarantined: a
// pin moves only by approval.
func TestPinsAcrossSessions(t *testing.T) {
	for _, face := range faces {
		t.Run(face, func(t *testing.T) {
			r := newRig(t, nil)
			setFlags := func(flags ...string) {
				r.flagsMu.Lock()
				r.serverFlags = flags
				r.flagsMu.Unlock()
			}
			first := r.client(t, face, "2025-11-25")
			if res, text := call(t, first, "list_dir", map[string]any{"path": "checkout"}); res.IsError {
				t.Fatalf("first session: %q", text)
			}
			first.Close()

			setFlags("-changed")
			second := r.client(t, face, "2025-11-25")
			if listed := toolNames(t, second); strings.Contains(listed, "read_file") {
				t.Fatalf("the changed tool is listed: %s", listed)
			}
			if res, text := call(t, second, "read_file", map[string]any{"path": "README.md"}); !res.IsError || !strings.Contains(text, "deny (TOOL_CHANGED)") {
				t.Fatalf("the changed tool's call: %q", text)
			}
			r.approveToolChange(t)
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(toolNames(t, second), "read_file"); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the approval never re-pinned the tool")
				}
			}
			if res, text := call(t, second, "read_file", map[string]any{"path": "README.md"}); res.IsError {
				t.Fatalf("after re-pinning: %q", text)
			}
			second.Close()

			third := r.client(t, face, "2025-11-25")
			if res, text := call(t, third, "read_file", map[string]any{"path": "README.md"}); res.IsError {
				t.Fatalf("a later session of the approved version: %q", text)
			}
			third.Close()

			setFlags()
			fourth := r.client(t, face, "2025-11-25")
			if res, text := call(t, fourth, "read_file", map[string]any{"path": "README.md"}); !res.IsError || !strings.Contains(text, "TOOL_CHANGED") {
				t.Fatalf("the old definition again: %q", text)
			}
			if got := strings.Count(strings.Join(r.called(t), " "), "read_file"); got != 2 {
				t.Fatalf("read_file reached the server %d times, want 2 (after approval, and in the third session)", got)
			}
		})
	}
}

func toolNames(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return strings.Join(names, " ")
}

// TestToolsDeclaredAfterInitialize: a tool a server declares once the
// client has initialized (late_tool) is trusted on first use in the
// server's first session, like the tools of its connection, and stays
// pinned for the later sessions; a server that declares it only in a
// later session has it quarantined and its call denied.
func TestToolsDeclaredAfterInitialize(t *testing.T) {
	for _, face := range faces {
		t.Run(face, func(t *testing.T) {
			r := newRigWith(t, nil, []string{"-late-tool"})
			for i := range 2 {
				cs := r.client(t, face, "2025-11-25")
				if listed := toolNames(t, cs); !strings.Contains(listed, "late_tool") {
					t.Fatalf("session %d: late_tool not listed: %s", i+1, listed)
				}
				if res, text := call(t, cs, "late_tool", map[string]any{}); res.IsError {
					t.Fatalf("session %d: late_tool: %q", i+1, text)
				}
				cs.Close()
			}

			r = newRig(t, nil)
			first := r.client(t, face, "2025-11-25")
			toolNames(t, first)
			first.Close()
			r.flagsMu.Lock()
			r.serverFlags = []string{"-late-tool"}
			r.flagsMu.Unlock()
			later := r.client(t, face, "2025-11-25")
			if listed := toolNames(t, later); strings.Contains(listed, "late_tool") {
				t.Fatalf("a later session lists the new late_tool: %s", listed)
			}
			if res, text := call(t, later, "late_tool", map[string]any{}); !res.IsError || !strings.Contains(text, "TOOL_CHANGED") {
				t.Fatalf("a later session's late_tool: %q", text)
			}
			later.Close()
		})
	}
}
