package mcpproxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/seal"
)

// TestResourcesAndPromptsAreJudged: a resources/read and a prompts/get
// are judged and recorded as uses of the server's content (mcp_resource,
// mcp__SERVER__METHOD) with what the server answered; a secret in a
// resource reaches the client redacted and the record sealed.
func TestResourcesAndPromptsAreJudged(t *testing.T) {
	const token = "ghp_R7dKq2R7dKq2R7dKq2R7dKq2R7dKq2sP2a"
	eachClient(t, func(t *testing.T) *rig { return newRig(t, nil) }, func(t *testing.T, r *rig, cs *mcp.ClientSession) {
		ctx := context.Background()
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///README.md"})
		if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "A small web shop") {
			t.Fatalf("resources/read: %v %+v", err, res)
		}
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///deploy/NOTES.md"})
		if err != nil || strings.Contains(res.Contents[0].Text, token) || !strings.Contains(res.Contents[0].Text, "Deploy with the bot token") {
			t.Fatalf("a resource with a secret: %v %+v", err, res)
		}
		prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{"path": "checkout/total.go"}})
		if err != nil || len(prompt.Messages) != 1 || !strings.Contains(prompt.Messages[0].Content.(*mcp.TextContent).Text, "func Total") {
			t.Fatalf("prompts/get: %v %+v", err, prompt)
		}
		types, envs := r.recorded(t)
		if got := strings.Join(types[4:], " "); got != strings.TrimSpace(strings.Repeat("PreToolUse Verdict PostToolUse Verdict ", 3)) {
			t.Fatalf("recorded %v", types)
		}
		for i, native := range []string{"resources/read", "resources/read", "prompts/get"} {
			pre, post := string(envs[4+4*i].Payload()), envs[6+4*i]
			if !strings.Contains(pre, `"tool_name":"mcp_resource"`) || !strings.Contains(pre, `"tool_name_native":"mcp__filesystem__`+native+`"`) {
				t.Fatalf("%s recorded as %s", native, pre)
			}
			if strings.Contains(string(post.Bytes()), token) {
				t.Fatalf("the token is in the clear at seq %d", post.Seq())
			}
		}
		if !seal.Has(envs[10].Payload()) || !strings.Contains(string(envs[10].Payload()), `"result_delivered":"redacted"`) {
			t.Fatalf("the secret's resource is not sealed with its redaction: %s", envs[10].Payload())
		}
		if !strings.Contains(string(envs[6].Payload()), "A small web shop") {
			t.Fatalf("the resource read is not on record: %s", envs[6].Payload())
		}
	})
}

// TestReadsAreLeastPrivilege: a manifest that does not permit
// mcp_resource refuses a resources/read (a JSON-RPC error with the
// reason) before the server.
func TestReadsAreLeastPrivilege(t *testing.T) {
	r := newRig(t, func(m *manifest.Manifest) {
		for i, tool := range m.Tools {
			if tool == "mcp_resource" {
				m.Tools = append(m.Tools[:i], m.Tools[i+1:]...)
				break
			}
		}
	})
	cs := r.client(t, "stdio", "2025-11-25")
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///README.md"})
	if err == nil || !strings.Contains(err.Error(), "deny (PERMISSION_UNDECLARED)") {
		t.Fatalf("resources/read: %v", err)
	}
	if got := r.called(t); len(got) != 0 {
		t.Fatalf("the server received %v", got)
	}
}

// TestHungAndDeadServer: a server that never answers gives the client an
// error result once the upstream timeout passes, and one that exits
// gives it an error at once; both are on record as the call's result.
// (Each in its own session: the first failure's result is MCP content,
// which makes the policy ask before the session's next MCP call.)
func TestHungAndDeadServer(t *testing.T) {
	misbehaving := func(t *testing.T) *rig {
		r := newRigWith(t, nil, []string{"-hang", "list_dir", "-die-on", "read_file"})
		r.timeout = 300 * time.Millisecond
		return r
	}
	eachClient(t, misbehaving, func(t *testing.T, r *rig, cs *mcp.ClientSession) {
		res, text := call(t, cs, "list_dir", map[string]any{"path": "checkout"})
		if !res.IsError || !strings.Contains(text, "did not answer within 300ms") {
			t.Fatalf("a hung server: %q", text)
		}
		res, text = call(t, r.client(t, r.face, r.version), "read_file", map[string]any{"path": "README.md"})
		if !res.IsError || !strings.Contains(text, "the server filesystem failed") {
			t.Fatalf("a dead server: %q", text)
		}
		hung, dead := false, false
		infos, err := r.st.Sessions(context.Background(), store.Filter{Tenant: "default"})
		if err != nil || len(infos) != 2 {
			t.Fatalf("sessions: %v %+v", err, infos)
		}
		for _, info := range infos {
			r.st.ReadSession(context.Background(), info.Key(), func(m store.Msg) error {
				if strings.Contains(string(m.Data), `"hook_point":"PostToolUse"`) {
					hung = hung || strings.Contains(string(m.Data), "did not answer within 300ms")
					dead = dead || strings.Contains(string(m.Data), "the server filesystem failed")
				}
				return nil
			})
		}
		if !hung || !dead {
			t.Fatalf("the failures are not on record (hung %v, dead %v)", hung, dead)
		}
	})
}
