package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/adapter"
)

// TestShippedPackBuiltin: every case of the shipped pack passes against
// the built-in adapters, and each host's level is what its hook points,
// tools and enforcement give.
func TestShippedPackBuiltin(t *testing.T) {
	packs, err := LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, p := range packs {
		hosts = append(hosts, p.Host)
		if adapter.Named(p.Host) == nil {
			t.Errorf("pack for %s, which has no built-in adapter", p.Host)
		}
	}
	if !slices.Equal(hosts, []string{"claude-code", "codex", "copilot", "cursor", "gemini"}) {
		t.Fatalf("packs for %v", hosts)
	}
	rep, err := Run(context.Background(), packs, Builtin{}, "built-in")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 0 {
		for _, h := range rep.Hosts {
			for _, c := range h.Cases {
				if !c.Pass {
					t.Errorf("%s/%s: %s", h.Host, c.Name, strings.Join(c.Failures, "; "))
				}
			}
		}
	}
	want := map[string]int{"claude-code": 1, "codex": 1, "cursor": 1, "gemini": 1, "copilot": 1}
	for _, h := range rep.Hosts {
		if h.Level != want[h.Host] {
			t.Errorf("%s: level %d, want %d (needs %v)", h.Host, h.Level, want[h.Host], h.NextLevel)
		}
		if !slices.Contains(h.Enforces, "deny") || !slices.Contains(h.HookPoints, "PreToolUse") {
			t.Errorf("%s: enforces %v, hook points %v", h.Host, h.Enforces, h.HookPoints)
		}
	}
	for _, p := range packs {
		var h *HostReport
		for _, r := range rep.Hosts {
			if r.Host == p.Host {
				h = r
			}
		}
		// A host that cannot prompt carries an ask out as a deny: its
		// pack's every ask answer is its deny answer, and the report says so.
		if wantAsks := map[bool]string{true: "prompt", false: "deny"}[p.HostAsks]; h.AsksAs != wantAsks {
			t.Errorf("%s: asks as %q, want %q", p.Host, h.AsksAs, wantAsks)
		}
		for _, c := range p.Cases {
			if ask, ok := c.Answers["ask"]; ok && !p.HostAsks && !bytes.Equal(ask, c.Answers["deny"]) {
				t.Errorf("%s/%s: the host cannot prompt, but its ask answer %s is not its deny %s", p.Host, c.Name, ask, c.Answers["deny"])
			}
		}
		// Tools the host does not have are not asked of it.
		for _, tool := range h.NotApplicable {
			if slices.Contains(p.Tools, tool) || slices.ContainsFunc(h.NextLevel, func(n string) bool { return n == "tool "+tool }) {
				t.Errorf("%s: %s is not applicable, yet listed or needed", p.Host, tool)
			}
		}
	}
	for _, h := range rep.Hosts {
		switch h.Host {
		case "claude-code", "codex":
			// They say which calls are a sub-agent's: provenance on every
			// PreToolUse.
			if !h.Provenance {
				t.Errorf("%s: no provenance on its PreToolUse events", h.Host)
			}
		case "copilot":
			// Its MCP tools ("<server>-<tool>") are MCP calls.
			if !slices.Contains(h.Tools, aarts.ToolMCPCall) {
				t.Errorf("copilot: tools %v, without mcp_call", h.Tools)
			}
		}
	}
}

// TestBrokenAdapter: an external adapter that maps everything to an
// unknown tool and never answers fails, with the cases named, and
// reaches no level.
func TestBrokenAdapter(t *testing.T) {
	packs, err := LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), packs, Command{Line: "sh testdata/broken-adapter.sh"}, "broken")
	if err != nil {
		t.Fatal(err)
	}
	failing := rep.Failing()
	for _, name := range []string{"cursor/shell curl piped to sh", "claude-code/Bash curl piped to sh", "gemini/tool_input not an object", "copilot/session start"} {
		if !slices.Contains(failing, name) {
			t.Errorf("%s is not among the failing cases %v", name, failing)
		}
	}
	for _, h := range rep.Hosts {
		if h.Level != 0 || h.Passed != 0 {
			t.Errorf("%s: level %d with %d passing cases, want 0 and 0", h.Host, h.Level, h.Passed)
		}
		for _, c := range h.Cases {
			if c.Name == "shell curl piped to sh" && h.Host == "cursor" {
				joined := strings.Join(c.Failures, "\n")
				if !strings.Contains(joined, `tool_name "other", want "shell"`) || !strings.Contains(joined, "answer to deny") {
					t.Errorf("cursor curl | sh failures do not say what is wrong:\n%s", joined)
				}
			}
		}
	}
	// An adapter that fails to run is a failure of each case, not of the run.
	rep, err = Run(context.Background(), packs[:1], Command{Line: "exit 3"}, "gone")
	if err != nil || rep.Passed != 0 || rep.Failed != len(packs[0].Cases) {
		t.Errorf("a failing command: %v, %d pass %d fail", err, rep.Passed, rep.Failed)
	}
}

// TestMatch: the answer patterns' rules.
func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, value string
		ok             bool
	}{
		{`{"permission":"deny"}`, `{"permission":"deny","user_message":"x"}`, true},
		{`{"permission":"deny"}`, `{"permission":"allow"}`, false},
		{`{"permission":null}`, `{}`, true},
		{`{"permission":null}`, `{"permission":"allow"}`, false},
		{`{"reason":"*"}`, `{"reason":"because"}`, true},
		{`{"reason":"*"}`, `{}`, false},
		{`{"a":{"b":[1,2]}}`, `{"a":{"b":[1,2],"c":3}}`, true},
		{`{"a":{"b":[1,2]}}`, `{"a":{"b":[1]}}`, false},
		{`{"a":1}`, `[1]`, false},
		{`{"a":1}`, `not json`, false},
	} {
		if why := Match(json.RawMessage(tt.pattern), json.RawMessage(tt.value)); (why == "") != tt.ok {
			t.Errorf("Match(%s, %s) = %q, want ok=%v", tt.pattern, tt.value, why, tt.ok)
		}
	}
}

// TestLoadPacksRefuses: a pack this suite cannot read is refused with the
// file and the defect named.
func TestLoadPacksRefuses(t *testing.T) {
	for _, tt := range []struct{ pack, want string }{
		{`{"pack":"p","version":"2","host":"x","cases":[]}`, `pack version "2"`},
		{`{"pack":"p","version":"1","host":"x","cases":[],"extra":1}`, `unknown field "extra"`},
		{`{"pack":"p","version":"1","cases":[]}`, "no host"},
		{`{"pack":"p","version":"1","host":"x","cases":[{"name":"a","input":{},"expect":{}}]}`, "names no hook_point"},
		{`{"pack":"p","version":"1","host":"x","cases":[{"name":"a","input":{},"expect":{"rejected":true}},{"name":"a","input":{},"expect":{"rejected":true}}]}`, "used twice"},
		{`{"pack":"p","version":"1","host":"x","cases":[{"name":"a","input":{},"expect":{"rejected":true},"answers":{"maybe":{}}}]}`, `answer for "maybe"`},
		{`{"pack":"p","version":"1","host":"x","cases":[{"name":"a","input":{},"expect":{"rejected":true},"answers":{"modify":{}}}]}`, "needs a rewrite"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "x.json"), []byte(tt.pack), 0o644)
		_, err := LoadPacks(dir)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "x.json") {
			t.Errorf("%s: %v, want an error naming x.json and %q", tt.pack, err, tt.want)
		}
	}
	if _, err := LoadPacks(t.TempDir()); err == nil {
		t.Error("an empty pack directory was accepted")
	}
}
