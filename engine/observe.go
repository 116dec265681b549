package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentledger/agentledger/action"
)

// What a path resolves to is a fact of the machine, not of the call: a
// symlink the agent made earlier turns rm -rf notes into a delete of the
// ledger, and git clean takes away whichever hook configuration happens to
// be untracked. The local engine, on the same machine as the host, looks
// (lstat, and git ls-files for git clean and git stash -u) before it
// decides, and records what it saw in the event's fs_facts extension, so
// the decision and any replay of it read the same facts.

// maxObserved bounds the paths looked at for one call.
const maxObserved = 64

// hookConfigPaths are the project files holding hosts' hook configuration
// that git clean or git stash could take away.
var hookConfigPaths = []string{".claude/settings.json", ".claude/settings.local.json", ".claude/hooks", ".cursor/hooks.json",
	".github/hooks", ".gemini/settings.json", ".codex", ".github/copilot", ".qwen/settings.json", ".factory/settings.json",
	".factory/hooks.json", ".opencode/plugin", ".kilo/plugin", ".clinerules/hooks"}

// observe adds to an adapter-mapped PreToolUse event what the engine sees
// of the paths it names; the event is returned unchanged when there is
// nothing to add.
func observe(ctx context.Context, event []byte) []byte {
	var ev map[string]any
	if json.Unmarshal(event, &ev) != nil || ev["hook_point"] != "PreToolUse" {
		return event
	}
	native, _ := ev["tool_name_native"].(string)
	cwd, _ := ev["cwd"].(string)
	if cwd == "" || !filepath.IsAbs(cwd) {
		return event
	}
	home, _ := os.UserHomeDir()
	a := action.AnalyzeTool(native, ev["tool_input"], cwd)
	abs := func(p, dir string) string {
		if rest, ok := strings.CutPrefix(p, "~"); ok && home != "" && (rest == "" || rest[0] == '/') {
			return filepath.Clean(home + rest)
		}
		if !filepath.IsAbs(p) {
			return filepath.Join(dir, p)
		}
		return filepath.Clean(p)
	}
	candidates := slices.Clone(a.Paths)
	for _, c := range a.Commands {
		for _, arg := range c.Argv[1:] {
			if !strings.HasPrefix(arg, "-") && !strings.ContainsAny(arg, "$`*?=") && arg != "" {
				candidates = append(candidates, abs(arg, cmp.Or(c.Dir, cwd)))
			}
		}
	}
	links := map[string]any{}
	for i, p := range candidates {
		if i >= maxObserved {
			break
		}
		p = abs(p, cwd)
		if t := resolveLink(p); t != "" {
			links[p] = t
		}
	}
	facts := map[string]any{}
	if len(links) > 0 {
		facts["symlinks"] = links
	}
	if rm := untrackedHookConfig(ctx, a, cwd); len(rm) > 0 {
		facts["removes"] = rm
	}
	if len(facts) == 0 {
		return event
	}
	ev[action.FSFacts] = facts
	out, err := json.Marshal(ev)
	if err != nil {
		return event
	}
	return out
}

// resolveLink returns what p resolves to through symbolic links (its own
// or its directories'), or "" when p is no link or cannot be read.
func resolveLink(p string) string {
	dir, base := filepath.Split(p)
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		// p itself may not exist (a write): its directory may be a link.
		d, derr := filepath.EvalSymlinks(dir)
		if derr != nil {
			return ""
		}
		target = filepath.Join(d, base)
	}
	if target == filepath.Clean(p) {
		return ""
	}
	return target
}

// untrackedHookConfig lists the hook configuration files a git clean or
// git stash -u/-a of the call would take away: those git does not track
// in the repository the command runs in (the command's own directory:
// git -C is in it).
func untrackedHookConfig(ctx context.Context, a action.Analysis, cwd string) []any {
	var out []any
	for _, c := range a.Commands {
		args := []string{"ls-files", "--others"}
		switch action.UntrackedTaken(c) {
		case action.TakesUntracked:
			args = append(args, "--exclude-standard")
		case action.TakesIgnored:
			args = append(args, "--ignored", "--exclude-standard")
		case action.TakesAll:
		default:
			continue
		}
		dir := cmp.Or(c.Dir, cwd)
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		cmd := exec.CommandContext(ctx, "git", append(append(args, "--"), hookConfigPaths...)...)
		cmd.Dir = dir
		raw, err := cmd.Output()
		cancel()
		if err != nil {
			continue
		}
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			if l != "" {
				out = append(out, filepath.Join(dir, l))
			}
		}
	}
	return out
}
