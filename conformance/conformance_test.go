package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/adapter"
	"github.com/agentledger/agentledger/ledger"
)

var allHosts = []string{"claude-code", "cline", "codex", "copilot", "cursor", "droid", "gemini", "kilo", "opencode", "qwen-code"}

// mutantHosts are the hosts the mutant adapters are run against (each
// trick's failing cases are named per host).
var mutantHosts = []string{"claude-code", "codex", "copilot", "cursor", "gemini"}

// TestShippedPackBuiltin: the shipped packs load (each covers its host
// and catches every mutant), every case passes against the built-in
// adapters, and each host's level is what the cases earn. It is 0 for all
// five: every case of every level passes, but none of these hosts lets a
// deny stop a session at SessionStart (their adapters' Blocking, and the
// packs' own SessionStart cases, which assert a deny there answers
// nothing), and AARTS level 1 requires SessionStart.
func TestShippedPackBuiltin(t *testing.T) {
	packs, err := LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	var hostNames []string
	for _, p := range packs {
		hostNames = append(hostNames, p.Host)
		if adapter.Named(p.Host) == nil {
			t.Errorf("pack for %s, which has no built-in adapter", p.Host)
		}
	}
	if !slices.Equal(hostNames, allHosts) {
		t.Fatalf("packs for %v", hostNames)
	}
	rep, err := Run(context.Background(), packs, Builtin{}, "built-in")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range rep.Hosts {
		for _, c := range h.Cases {
			if !c.Pass {
				t.Errorf("%s/%s: %s", h.Host, c.Name, strings.Join(c.Failures, "; "))
			}
		}
	}
	wantAsks := map[string][]string{
		"claude-code": {"prompt", "held for an approver", "defer"},
		"cursor":      {"prompt", "held for an approver"},
		"codex":       {"held for an approver"}, "copilot": {"held for an approver"}, "gemini": {"held for an approver"},
		"droid": {"held for an approver"}, "qwen-code": {"held for an approver"}, "opencode": {"held for an approver"}, "kilo": {"held for an approver"}, "cline": {"held for an approver"},
	}
	byHost := map[string]*HostReport{}
	for _, h := range rep.Hosts {
		byHost[h.Host] = h
	}
	for _, h := range rep.Hosts {
		if h.Level != 0 || h.CasesLevel != 3 {
			t.Errorf("%s: level %d, cases pass to level %d, want 0 and 3", h.Host, h.Level, h.CasesLevel)
		}
		if len(h.NextLevel) != 1 || !strings.HasPrefix(h.NextLevel[0], "hook point SessionStart where a deny stops something") {
			t.Errorf("%s: level 1 needs %q, want SessionStart enforced alone", h.Host, h.NextLevel)
		}
		if !slices.Contains(h.Unenforced, "SessionStart") || slices.Contains(h.HookPoints, "SessionStart") || !slices.Contains(h.HookPoints, "PreToolUse") {
			t.Errorf("%s: hook points %v, not counted %v", h.Host, h.HookPoints, h.Unenforced)
		}
		if !slices.Equal(h.Enforces, []string{"allow", "deny", "ask"}) || !slices.Equal(h.AsksAs, wantAsks[h.Host]) {
			t.Errorf("%s: enforces %v, asks as %v, want allow, deny, ask as %v", h.Host, h.Enforces, h.AsksAs, wantAsks[h.Host])
		}
		// Claude Code, Codex and Qwen Code name a sub-agent's calls by its
		// agent_id; opencode's and Kilo's sub-agents are sessions that name
		// their parent. Elsewhere no input says which calls are a
		// sub-agent's.
		if want := slices.Contains([]string{"claude-code", "codex", "qwen-code", "opencode", "kilo", "cline"}, h.Host); h.Provenance != want {
			t.Errorf("%s: provenance %v, want %v", h.Host, h.Provenance, want)
		}
		if !h.Pack.Shipped || len(h.Pack.SHA256) != 64 {
			t.Errorf("%s: pack %v", h.Host, h.Pack)
		}
		for _, tool := range h.NotApplicable {
			if slices.Contains(hosts[h.Host].tools, tool) || slices.ContainsFunc(h.NextLevel, func(n string) bool { return n == "tool "+tool }) {
				t.Errorf("%s: %s is not applicable, yet the host has it or a level needs it", h.Host, tool)
			}
		}
	}
	if copilot := byHost["copilot"]; !slices.Contains(copilot.Tools, aarts.ToolMCPCall) {
		t.Errorf("copilot: tools %v, without mcp_call (its <server>-<tool> names)", copilot.Tools)
	}
	// Claude Code's Stop (PreOutputDeliver) answers a deny with nothing:
	// it does not count (Gemini CLI's AfterAgent does).
	if cc, gm := byHost["claude-code"], byHost["gemini"]; slices.Contains(cc.HookPoints, "PreOutputDeliver") || !slices.Contains(gm.HookPoints, "PreOutputDeliver") {
		t.Errorf("PreOutputDeliver counted at claude-code %v, gemini %v", cc.HookPoints, gm.HookPoints)
	}
}

// TestHostEventsAreTheAdapters: each host's documented events are events
// its built-in adapter reads — mapped to a hook point, or known to have
// none — and a deny at a host event its adapter calls non-blocking
// answers nothing in the shipped pack.
func TestHostEventsAreTheAdapters(t *testing.T) {
	packs, err := LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range packs {
		for _, c := range p.Cases {
			native := nativeEvent(p.Host, c.Input)
			if c.Expect.Rejected {
				continue
			}
			if !slices.Contains(hosts[p.Host].events, native) {
				t.Errorf("%s/%s: event %q is not among the host's documented events", p.Host, c.Name, native)
			}
			if enforced(p.Host, native) || slices.Contains(notificationHooks, c.Expect.HookPoint) {
				continue
			}
			res, err := Builtin{}.Run(context.Background(), Request{Host: p.Host, Input: c.Input, Verdict: verdict(p.Host, "deny", &c)})
			if err != nil {
				t.Fatal(err)
			}
			var answer map[string]any
			json.Unmarshal(res.Answer, &answer)
			for _, k := range []string{"decision", "permission", "permissionDecision", "hookSpecificOutput", "continue"} {
				if _, ok := answer[k]; ok {
					t.Errorf("%s/%s: %s is not blocking, yet a deny is answered %s", p.Host, c.Name, native, res.Answer)
				}
			}
		}
	}
}

// brokenBinary builds testdata/broken once.
var brokenBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "conformance-broken")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "broken")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/broken").CombinedOutput()
	if err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if bin, err := brokenBinary(); err == nil {
		os.RemoveAll(filepath.Dir(bin))
	}
	os.Exit(code)
}

// TestBrokenAdapters: every deliberately broken adapter of testdata — one
// trick each that the old suite credited with level 1 — is refused that
// level by a case of level 1 it fails (not only for want of an enforced
// SessionStart), with the cases that catch it named, and none that
// touches PreToolUse is credited provenance.
func TestBrokenAdapters(t *testing.T) {
	bin, err := brokenBinary()
	if err != nil {
		t.Fatal(err)
	}
	packs, err := LoadPacks("")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		trick      string
		hosts      []string
		failing    []string // host/case, each with a failure that says why
		why        string
		casesLevel int // the level every case passes to (0: one of level 1 fails)
	}{
		{"constant-provenance", mutantHosts, []string{"claude-code/sub-agent call", "codex/sub-agent call", "cursor/shell curl piped to sh",
			"copilot/bash curl piped to sh", "gemini/shell curl piped to sh"}, "is_sub_agent", 0},
		{"drop-sub-agents", []string{"claude-code", "codex"}, []string{"claude-code/sub-agent call", "codex/sub-agent call"}, "is_sub_agent", 0},
		// Cursor names a sub-agent only at its start and stop (level 3).
		{"drop-sub-agents", []string{"cursor"}, []string{"cursor/sub-agent start"}, "want PreSubAgentSpawn", 2},
		{"empty-tool-input", mutantHosts, []string{"claude-code/Write", "codex/apply_patch", "copilot/edit", "cursor/shell npm install",
			"gemini/replace"}, "tool_input {}", 0},
		{"drop-fields", mutantHosts, []string{"claude-code/Bash curl piped to sh", "codex/MCP tool", "copilot/MCP tool (server-tool)",
			"cursor/MCP object input", "gemini/read_file"}, "absent", 0},
		{"wrong-hook-point", mutantHosts, []string{"claude-code/PostToolUse", "codex/PostToolUse", "copilot/post tool use",
			"cursor/after shell", "gemini/after tool"}, `hook_point "PreToolUse", want "PostToolUse"`, 0},
		{"deny-for-ask", mutantHosts, []string{"claude-code/Bash curl piped to sh", "codex/apply_patch", "copilot/edit",
			"cursor/shell curl piped to sh", "gemini/write_file"}, "answer to ask", 0},
	} {
		t.Run(tt.trick+"/"+strings.Join(tt.hosts, ","), func(t *testing.T) {
			t.Parallel()
			var run []*Pack
			for _, p := range packs {
				if slices.Contains(tt.hosts, p.Host) {
					run = append(run, p)
				}
			}
			rep, err := Run(context.Background(), run, Command{Line: bin + " " + tt.trick}, tt.trick)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range rep.Hosts {
				if h.Level != 0 || h.CasesLevel != tt.casesLevel {
					t.Errorf("%s: level %d, cases pass to level %d; want 0, %d", h.Host, h.Level, h.CasesLevel, tt.casesLevel)
				}
				// Only a trick that leaves every PreToolUse case alone keeps
				// provenance, where the host has it.
				if h.Provenance && tt.trick != "wrong-hook-point" {
					t.Errorf("%s: provenance credited to %s", h.Host, tt.trick)
				}
			}
			for _, name := range tt.failing {
				host, caseName, _ := strings.Cut(name, "/")
				var failures []string
				for _, h := range rep.Hosts {
					for _, c := range h.Cases {
						if h.Host == host && c.Name == caseName {
							failures = c.Failures
						}
					}
				}
				if joined := strings.Join(failures, "\n"); !strings.Contains(joined, tt.why) {
					t.Errorf("%s: failures %q, want one saying %q", name, failures, tt.why)
				}
			}
		})
	}
	t.Run("broken-adapter.sh", func(t *testing.T) {
		t.Parallel()
		// It ignores the input, maps everything to a PreToolUse of an
		// unknown tool and never answers: every case fails.
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
			if h.Level != 0 || h.CasesLevel != 0 || h.Passed != 0 {
				t.Errorf("%s: level %d with %d passing cases, want 0 and 0", h.Host, h.Level, h.Passed)
			}
		}
	})
	t.Run("exit 3", func(t *testing.T) {
		t.Parallel()
		// An adapter that fails to run is a failure of each case, not of
		// the run.
		rep, err := Run(context.Background(), packs[:1], Command{Line: "exit 3"}, "gone")
		if err != nil || rep.Passed != 0 || rep.Failed != len(packs[0].Cases) {
			t.Errorf("a failing command: %v, %d pass %d fail", err, rep.Passed, rep.Failed)
		}
	})
}

// shippedPack is the shipped pack of host, decoded to be changed.
func shippedPack(t *testing.T, host string) map[string]any {
	t.Helper()
	data, err := fs.ReadFile(shipped, "pack/v1/"+host+".json")
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// writePack writes p as dir/name.
func writePack(t *testing.T, dir, name string, p any) {
	t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// eachCase calls f with every case of p.
func eachCase(p map[string]any, f func(c map[string]any)) {
	for _, c := range p["cases"].([]any) {
		f(c.(map[string]any))
	}
}

// TestPackRefused: a pack that covers less than its host documents, or
// that asserts too little to catch the adapters that game the suite, is
// refused (ErrCoverage) with the file and what it lacks named — whatever
// tools or events it declares of itself.
func TestPackRefused(t *testing.T) {
	for _, tt := range []struct {
		name, host string
		change     func(p map[string]any)
		want       []string
	}{
		{"the tiny pack of testdata", "", nil, []string{"tool kind file_write in its tools", "a case of the host's event beforeMCPExecution",
			"a PreToolUse case of tool mcp_call", "an answer to ask at PreToolUse", "a case of input the adapter must refuse", `case "shell": expect.tool_input`,
			`case "shell": is_sub_agent asserted absent`}},
		{"a host the suite does not document", "gemini", func(p map[string]any) { p["host"] = "vscode" }, []string{"a host this suite documents"}},
		{"no sub-agent call", "claude-code", func(p map[string]any) {
			p["cases"] = slices.DeleteFunc(p["cases"].([]any), func(c any) bool { return c.(map[string]any)["name"] == "sub-agent call" })
		}, []string{"is_sub_agent true and false"}},
		{"the ask folded into deny", "gemini", func(p map[string]any) {
			eachCase(p, func(c map[string]any) {
				if a, ok := c["answers"].(map[string]any); ok {
					delete(a, "ask_held")
				}
			})
		}, []string{"an answer to ask_held at PreToolUse"}},
		{"is_sub_agent claimed where the host names no sub-agent", "copilot", func(p map[string]any) {
			eachCase(p, func(c map[string]any) {
				if f, ok := c["expect"].(map[string]any)["fields"].(map[string]any); ok && f["is_sub_agent"] == nil {
					f["is_sub_agent"] = false
				}
			})
		}, []string{"is_sub_agent asserted absent"}},
		{"a hook point credited through another event", "claude-code", func(p map[string]any) {
			eachCase(p, func(c map[string]any) {
				if c["name"] == "prompt" {
					c["expect"] = map[string]any{"hook_point": "SessionStart"}
				}
			})
		}, []string{`case "prompt": to expect hook point PreUserInput, as the host's adapter maps its input (it expects hook point SessionStart)`}},
		{"answers that do not tell a deny from no decision", "codex", func(p map[string]any) {
			eachCase(p, func(c map[string]any) {
				if a, ok := c["answers"].(map[string]any); ok {
					for v := range a {
						a[v] = map[string]any{}
					}
				}
			})
		}, []string{"a deny answered with no decision"}},
		{"a few members of the event asserted", "gemini", func(p map[string]any) {
			eachCase(p, func(c map[string]any) {
				if f, ok := c["expect"].(map[string]any)["fields"].(map[string]any); ok {
					for k := range f {
						if k != "is_sub_agent" && k != "parent_session_id" {
							delete(f, k)
						}
					}
				}
			})
		}, []string{"a case of level 1 that an adapter with an event stripped to the members AARTS requires fails"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, file := "testdata/tiny-pack", "cursor.json"
			if tt.change != nil {
				dir, file = t.TempDir(), tt.host+".json"
				p := shippedPack(t, tt.host)
				tt.change(p)
				writePack(t, dir, file, p)
			}
			_, err := LoadPacks(dir)
			if !errors.Is(err, ErrCoverage) {
				t.Fatalf("%v, want ErrCoverage", err)
			}
			var ce *CoverageError
			if !errors.As(err, &ce) || len(ce.SHA256) != 64 || !strings.Contains(err.Error(), file) {
				t.Errorf("%v: want the file and the pack's digest named", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nlacks %q", err, w)
				}
			}
		})
	}
}

// TestPackDigest: a pack is named by the SHA-256 of its canonical form —
// the same however the file is laid out, another when a case changes, and
// "shipped" only when it is the shipped pack — in every report format.
func TestPackDigest(t *testing.T) {
	data, err := fs.ReadFile(shipped, "pack/v1/gemini.json")
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := ledger.Canonicalize(data, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canonical)
	want := hex.EncodeToString(sum[:])

	same, changed := t.TempDir(), t.TempDir()
	p := shippedPack(t, "gemini")
	writePack(t, same, "gemini.json", p) // laid out otherwise
	p["cases"].([]any)[0].(map[string]any)["name"] = "session start, renamed"
	writePack(t, changed, "gemini.json", p)
	for _, tt := range []struct {
		dir     string
		same    bool
		shipped bool
	}{{"", true, true}, {same, true, true}, {changed, false, false}} {
		packs, err := LoadPacks(tt.dir)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(packs, func(p *Pack) bool { return p.Host == "gemini" })
		id := packs[i].ID()
		if (id.SHA256 == want) != tt.same || id.Shipped != tt.shipped {
			t.Errorf("%q: pack %v, want digest %s %v, shipped %v", tt.dir, id, want, tt.same, tt.shipped)
		}
		rep, err := Run(context.Background(), packs[i:i+1], Builtin{}, "built-in")
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range Formats {
			var b bytes.Buffer
			if err := Render(&b, format, rep); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), id.SHA256) {
				t.Errorf("%s report does not name the pack's digest %s:\n%s", format, id.SHA256, b.String())
			}
			if !tt.shipped && format == "text" && !strings.Contains(b.String(), "(not the shipped pack)") {
				t.Errorf("a changed pack is not said to be another:\n%s", b.String())
			}
		}
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
		{`{"pack":"p","version":"1","host":"x","cases":[{"name":"a","expect":{"rejected":true}}]}`, "no input"},
		{`{"pack":"p","version":"1","host":"x","cases":[{"name":"a","input":{},"input_text":"{}","expect":{"rejected":true}}]}`, "both input and input_text"},
		{`{"pack":"p","version":"1","host":"x","cases":[{"name":"a","input":{},"expect":{"rejected":true}},{"name":"a","input":{},"expect":{"rejected":true}}]}`, "used twice"},
		{`{"pack":"p","version":"1","host":"x","cases":[{"name":"a","input":{},"expect":{"rejected":true},"answers":{"maybe":{}}}]}`, `answer for "maybe"`},
		{`{"pack":"p","version":"1","host":"x","cases":[{"name":"a","input":{},"expect":{"rejected":true},"answers":{"modify":{}}}]}`, "needs a rewrite"},
		{`{"pack":"p","version":"1","host":"x","cases":[{"name":"a","input":{"k":1,"k":2},"expect":{"rejected":true}}]}`, "duplicate"},
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
