package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestDeniedResultsAreWithheld: a tool result carrying a secret is denied
// at PostToolUse by every host's adapter; what each host is answered is
// shown here, and where the host lets a hook replace the result (Claude
// Code for every tool, Cursor for MCP tools, Copilot, Gemini CLI with the
// reason) the replacement carries no secret. Claude Code's replacement
// keeps the Bash output's shape, so Claude Code applies it.
func TestDeniedResultsAreWithheld(t *testing.T) {
	const secret = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	for _, c := range []struct {
		host, in string
		check    func(t *testing.T, out map[string]any)
	}{
		{"claude-code", `{"session_id":"w-cc","transcript_path":"/t","cwd":"/workspace/shop","permission_mode":"default","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"cat .git/config"},"tool_use_id":"toolu_w","tool_response":{"stdout":"url = https://x:` + secret + `@github.com/acme/shop","stderr":"","interrupted":false,"isImage":false}}`,
			func(t *testing.T, out map[string]any) {
				hso, _ := out["hookSpecificOutput"].(map[string]any)
				rep, _ := hso["updatedToolOutput"].(map[string]any)
				if out["decision"] != "block" || rep == nil {
					t.Fatalf("got %v, want a block with updatedToolOutput", out)
				}
				for _, k := range []string{"stdout", "stderr", "interrupted", "isImage"} {
					if _, ok := rep[k]; !ok {
						t.Errorf("updatedToolOutput lacks %s (Claude Code ignores a replacement of another shape): %v", k, rep)
					}
				}
				if s, _ := rep["stdout"].(string); !strings.Contains(s, "github.com/acme/shop") {
					t.Errorf("stdout %q: want the result with the secret taken out, not nothing", s)
				}
			}},
		{"claude-code", `{"session_id":"w-cc","transcript_path":"/t","cwd":"/workspace/shop","permission_mode":"default","hook_event_name":"PostToolUse","tool_name":"mcp__github__get_secret","tool_input":{},"tool_use_id":"toolu_m","tool_response":{"content":[{"type":"text","text":"token ` + secret + `"}]}}`,
			func(t *testing.T, out map[string]any) {
				hso, _ := out["hookSpecificOutput"].(map[string]any)
				if hso["updatedMCPToolOutput"] == nil || hso["updatedToolOutput"] == nil {
					t.Fatalf("got %v, want updatedMCPToolOutput and updatedToolOutput", out)
				}
			}},
		{"cursor", `{"hook_event_name":"postToolUse","conversation_id":"w-cu","generation_id":"g","workspace_roots":["/workspace/shop"],"tool_name":"MCP:get_secret","tool_input":{},"tool_use_id":"tu","tool_output":"token ` + secret + `"}`,
			func(t *testing.T, out map[string]any) {
				if out["updated_mcp_tool_output"] == nil {
					t.Fatalf("got %v, want updated_mcp_tool_output", out)
				}
			}},
		{"copilot", `{"sessionId":"w-cp","timestamp":1763892000000,"cwd":"/workspace/shop","toolName":"bash","toolArgs":{"command":"cat .git/config"},"toolResult":{"resultType":"success","textResultForLlm":"url = https://x:` + secret + `@github.com/acme/shop"}}`,
			func(t *testing.T, out map[string]any) {
				mr, _ := out["modifiedResult"].(map[string]any)
				if mr == nil || mr["textResultForLlm"] == nil {
					t.Fatalf("got %v, want modifiedResult", out)
				}
			}},
		{"gemini", `{"session_id":"w-gm","transcript_path":"/t","cwd":"/workspace/shop","hook_event_name":"AfterTool","timestamp":"2026-11-23T10:00:00Z","tool_name":"run_shell_command","tool_input":{"command":"cat .git/config"},"tool_response":{"llmContent":"url = https://x:` + secret + `@github.com/acme/shop","returnDisplay":""}}`,
			func(t *testing.T, out map[string]any) {
				if out["decision"] != "deny" || out["reason"] == nil {
					t.Fatalf("got %v, want deny with the reason that replaces the result", out)
				}
			}},
	} {
		r := e.Answer(context.Background(), Request{Host: c.host, Body: []byte(c.in)})
		t.Logf("%s answers %s", c.host, r.HostOutput)
		if r.Decision != "deny" || r.ReasonCode != "SECRET_IN_RESULT" {
			t.Errorf("%s: %s %s %v, want deny SECRET_IN_RESULT", c.host, r.Decision, r.ReasonCode, r.Reasons)
			continue
		}
		if strings.Contains(string(r.HostOutput), secret) || strings.Contains(string(r.HostOutput), secret[4:20]) {
			t.Errorf("%s: the answer carries the secret: %s", c.host, r.HostOutput)
		}
		var out map[string]any
		if err := json.Unmarshal(r.HostOutput, &out); err != nil {
			t.Fatalf("%s: host output %q", c.host, r.HostOutput)
		}
		c.check(t, out)
	}
}

// TestEveryCredentialIsWithheld: a credential the data findings do not
// classify — a token named by the word beside it, a registry token, a
// password in a URL or an assignment — is withheld from the model all the
// same (the record seals it; the model must not read it either), while a
// result that holds only hashes, ids and prose reaches it as it is.
func TestEveryCredentialIsWithheld(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	result := func(n int, stdout string) []byte {
		raw, _ := json.Marshal(map[string]any{"session_id": "cred", "transcript_path": "/t", "cwd": "/workspace/shop", "permission_mode": "default",
			"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "cat notes.txt"}, "tool_use_id": "toolu_" + string(rune('a'+n)),
			"tool_response": map[string]any{"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false}})
		return raw
	}
	for i, c := range []struct{ stdout, secret string }{
		{"Deploy with the bot token ghp_R7dKq2R7dKq2R7dKq2R7dKq2R7dKq2sP2a until it is rotated.", "R7dKq2R7dKq2R7dKq2"},
		{"//registry.npmjs.org/:_authToken=npm_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9"},
		{"DATABASE_URL=postgres://app:Vq8#kPz2Lm@db.internal:5432/shop", "Vq8#kPz2Lm"},
		{"glpat-x7Yq2Rk9Wm4Tz8Nc3Vb6", "x7Yq2Rk9Wm4Tz8Nc3Vb6"},
	} {
		r := e.Answer(context.Background(), Request{Host: "claude-code", Body: result(i, c.stdout)})
		if r.ReasonCode != "SECRET_IN_RESULT" || strings.Contains(string(r.HostOutput), c.secret) {
			t.Errorf("%q: %s %s, answer %s; want it withheld", c.stdout, r.Decision, r.ReasonCode, r.HostOutput)
		}
	}
	for i, stdout := range []string{
		"commit 3f9a1c2b7d4e5f60718293a4b5c6d7e8f9012345\nAuthor: dev <dev@example.com>\n\n    fix the total",
		`"integrity": "sha512-Zx8vQ2kR7mP4tN1wL6yB3cJ9hF5gD0sA2eU8iO7pK4lM3nQ6rT1vX9zY5bW2cE8fG4hJ7kL0mN3pQ6rS9tU2vW==",`,
		"ok  \tgithub.com/acme/shop/checkout\t0.012s\nthe token bucket refills every second",
		"services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: shop\n      DATABASE_URL: postgres://shop:shop@localhost:5432/shop",
	} {
		r := e.Answer(context.Background(), Request{Host: "claude-code", Body: result(10+i, stdout)})
		if r.ReasonCode == "SECRET_IN_RESULT" {
			t.Errorf("%q: withheld (%v), want it shown as it is", stdout, r.Reasons)
		}
	}
}
