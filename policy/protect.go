package policy

import (
	"cmp"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/manifest"
)

// agentledger protects itself (AARTS §10.2): its data (ledger, signing
// keys, checkpoints, spool) may not be touched by any tool at all, and the
// hosts' hook configuration may not be written, whatever the path form (~,
// $HOME, relative, a parent directory, a glob) and whatever the tool
// (file tools, or any shell command that is not read-only).

// dataGlobs are agentledger's data directories wherever they are.
var dataGlobs = []string{"**/ledger-data", "**/.agentledger", "**/.local/share/agentledger"}

// hostConfigGlobs are the hosts' hook configurations in any project or
// home directory, and the machine-wide ones; and any file named like the
// program the hooks run (a project's wrapper runs agentledger-hook from
// PATH: one written earlier on PATH would answer in its place).
var hostConfigGlobs = []string{"**/agentledger-hook",
	"**/.claude/settings.json", "**/.claude/settings.local.json", "**/.claude/hooks",
	"**/.cursor/hooks.json", "**/.github/hooks", "**/.gemini/settings.json",
	"**/.codex/config.toml", "**/.codex/hooks.json", "**/.github/copilot/settings.json", "**/.github/copilot/settings.local.json",
	"**/.copilot/hooks", "**/.copilot/config.json", "**/.gemini/hooks", "**/.cursor/hooks",
	"**/.qwen/settings.json", "**/.factory/settings.json", "**/.factory/hooks.json",
	// opencode and Kilo CLI run every plugin in their plugin directories
	// in their own process: agentledger's, and any that could undo it.
	"**/.opencode/plugin", "**/.opencode/plugins", "**/.kilo/plugin", "**/.kilo/plugins",
	// Cline runs every hook file named after an event in these.
	"**/.clinerules/hooks", "**/.cline/hooks", "**/Documents/Cline/Hooks",
	"/etc/claude-code", "/Library/Application Support/ClaudeCode", "/etc/cursor/hooks.json",
	"/Library/Application Support/Cursor/hooks.json", "/etc/gemini-cli", "/etc/github-copilot", "/etc/codex",
}

// homeConfigDirs are the hosts' per-user directories and files, protected
// whole (their settings, hooks, plugins and credentials live there).
var homeConfigDirs = []string{".claude", ".claude.json", ".cursor", ".gemini", ".codex", ".copilot", ".config/github-copilot",
	".qwen", ".factory", ".config/opencode", ".config/kilo", ".cline"}

// guard is what the self-protection checks: roots no tool may touch, and
// roots no tool may write.
type guard struct {
	home         string
	data, config []string // absolute directories or files, or globs
	// dataRoots and configRoots are data and config prepared for under.
	dataRoots, configRoots []root
}

// root is a protected root prepared for matching: an absolute path (abs),
// **/NAME anywhere (name), or another glob.
type root struct {
	text string
	abs  bool
	name bool
	// For abs: text+"/"; for name: NAME, NAME+"/", "/"+NAME, "/"+NAME+"/".
	prefix, tail, tailSlash, slashTail, slashTailSlash string
}

func rootsOf(globs []string) []root {
	out := make([]root, 0, len(globs))
	for _, g := range globs {
		r := root{text: g}
		if tail, ok := strings.CutPrefix(g, "**/"); ok && !strings.ContainsAny(tail, "*?[") {
			r.name, r.tail, r.tailSlash, r.slashTail, r.slashTailSlash = true, tail, tail+"/", "/"+tail, "/"+tail+"/"
		} else if !strings.ContainsAny(g, "*?[") {
			r.abs, r.prefix = true, g+"/"
		}
		out = append(out, r)
	}
	return out
}

func newGuard(m *manifest.Manifest) *guard {
	g := &guard{home: m.Home, data: slices.Concat(dataGlobs, m.ProtectedData), config: slices.Concat(hostConfigGlobs, m.Protected)}
	if m.Home != "" {
		for _, d := range homeConfigDirs {
			g.config = append(g.config, path.Join(m.Home, d))
		}
	}
	g.dataRoots, g.configRoots = rootsOf(g.data), rootsOf(g.config)
	return g
}

// hits returns why an action touches what agentledger protects, one
// reason per path; none for an action that does not. Relative paths are
// read against the call's working directory and, for shell calls, also
// against shellDir (where a cd of an earlier call of the session left the
// shell, when it differs).
func (g *guard) hits(a *action.Analysis, shellDir string) []string {
	var out []string
	add := func(format string, args ...any) {
		if r := fmt.Sprintf(format, args...); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	switch a.Tool {
	case aarts.ToolShell, aarts.ToolCodeExec, aarts.ToolPackageInstall:
		for _, c := range a.Commands {
			if why := selfCommand(c); why != "" {
				add("%s: a person runs it, outside the agent", why)
			}
			g.shellHits(c, cmp.Or(c.Dir, a.Cwd), a.Symlinks, add)
			if shellDir != "" && shellDir != a.Cwd && c.Dir == "" {
				g.shellHits(c, shellDir, a.Symlinks, add)
			}
		}
		for _, p := range slices.Concat(a.WritePaths, a.MayWrite) { // what interpreter code, sed w, git --output and programs the analysis does not know write
			p = g.expand(p, a.Cwd)
			if r, ok := g.under(p, g.dataRoots); ok {
				add("the call writes %s, agentledger's own data (%s)", p, r)
			} else if r, ok := g.under(p, g.configRoots); ok {
				add("the call would change %s, an agent host's hook configuration (%s)", p, r)
			}
		}
		for _, p := range a.Removes {
			if r, ok := g.under(g.expand(p, a.Cwd), g.configRoots); ok {
				add("the call would take away %s, an agent host's hook configuration (%s), untracked in its repository", p, r)
			}
		}
	default:
		writes := a.Tool == aarts.ToolFileWrite || a.Tool == aarts.ToolFileEdit || a.Tool == aarts.ToolFileDelete
		paths := slices.Clone(a.Paths)
		for _, p := range a.Paths {
			if t, ok := a.Symlinks[g.expand(p, a.Cwd)]; ok {
				paths = append(paths, t) // what a symlink the engine saw points to
			}
		}
		for _, p := range paths {
			p = g.expand(p, a.Cwd)
			if r, ok := g.under(p, g.dataRoots); ok {
				add("%s is agentledger's own data (%s): no tool may touch it", p, r)
			} else if r, ok := g.under(p, g.configRoots); ok && writes {
				add("%s is an agent host's hook configuration (%s): no tool may change it", p, r)
			}
		}
	}
	return out
}

func (g *guard) shellHits(c action.Command, cwd string, symlinks map[string]string, add func(string, ...any)) {
	readOnly, destructive := readOnly(c), destructive(c)
	// A copier reads its sources: cp SETTINGS /tmp/backup changes only the
	// backup (mv takes its source away: destructive, below).
	if c.Binary == "cp" || c.Binary == "install" || c.Binary == "rsync" && !destructive {
		readOnly = true
		written := action.WrittenArgs(c)
		defer func() {
			for _, w := range written {
				w = lookedUp.ReplaceAllString(w, "/PATH/${1}${2}")
				if prog, ok := strings.CutPrefix(w, "/PATH/"); ok && ownPrograms[prog] {
					add("%s would change %s, agentledger's own program, wherever PATH finds it", c.Binary, prog)
				} else if r, ok := g.under(g.expand(w, cwd), g.configRoots); ok {
					add("%s would change %s, an agent host's hook configuration (%s)", c.Binary, w, r)
				}
			}
		}()
	}
	var check func(arg string, write bool)
	check = func(arg string, write bool) {
		p := g.expand(arg, cwd)
		if t, ok := symlinks[p]; ok && t != p {
			check(t, write) // through a symlink the engine saw
		}
		if r, ok := g.under(p, g.dataRoots); ok {
			add("%s touches %s, agentledger's own data (%s)", c.Binary, p, r)
			return
		}
		if r, ok := g.under(p, g.configRoots); ok && (write || !readOnly) {
			add("%s would change %s, an agent host's hook configuration (%s)", c.Binary, p, r)
			return
		}
		if destructive {
			if r, ok := g.above(p); ok {
				add("%s would remove or move %s, which holds %s", c.Binary, p, r)
			}
		}
	}
	for i, arg := range c.Argv {
		if i == 0 {
			continue
		}
		if strings.ContainsAny(arg, "$`") {
			arg = lookedUp.ReplaceAllString(arg, "/PATH/${1}${2}") // "$(command -v agentledger-hook)" is that program, wherever PATH finds it
		}
		if prog, ok := strings.CutPrefix(arg, "/PATH/"); ok && ownPrograms[prog] && !readOnly {
			add("%s would change %s, agentledger's own program, wherever PATH finds it", c.Binary, prog)
			continue
		}
		if k, v, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(k, "-") {
			arg = v // --file=PATH
		} else if len(arg) > 2 && arg[0] == '-' && arg[1] != '-' && strings.ContainsAny(arg[2:3], "/~.$") {
			arg = arg[2:] // -C/dir, -f./file: a short option stuck to its path
		} else if strings.HasPrefix(arg, "-") {
			continue
		}
		check(arg, false)
	}
	for _, r := range c.Redirects {
		if strings.ContainsAny(r, "$`") {
			r = lookedUp.ReplaceAllString(r, "/PATH/${1}${2}")
		}
		check(r, true)
	}
}

// lookedUp matches a program looked up on PATH inside a word: $(command
// -v X), $(which X), $(type -p X), `which X`.
var lookedUp = regexp.MustCompile("\\$\\((?:command\\s+-v|which|type\\s+-p|whereis)\\s+([\\w.-]+)\\)|`(?:command\\s+-v|which|type\\s+-p)\\s+([\\w.-]+)`")

// agentHosts are the agent hosts' programs.
var agentHosts = map[string]bool{"claude": true, "codex": true, "gemini": true, "copilot": true, "cursor-agent": true}

// namesEngine matches a word that names agentledger's engine process.
var namesEngine = regexp.MustCompile(`(?:^|[\s/"'(])engine(?:$|[\s"')])|agentledger`)

// ownPrograms are agentledger's programs, found on PATH.
var ownPrograms = map[string]bool{"engine": true, "ledger": true, "replay": true, "agentledger-hook": true}

// hostsUnguarded are the ways to start an agent host without its
// permission checks or its hooks.
var hostsUnguarded = regexp.MustCompile(`--dangerously-skip-permissions|--dangerously-bypass-approvals-and-sandbox|--yolo\b|--allow-all-tools|--approval-mode[= ]yolo|--settings\s*['"]?\{[^}]*"hooks"|AGENTLEDGER_DISABLE=|--no-hooks\b|disableAllHooks`)

// selfCommands are agentledger's own commands that lift or weaken its
// protection, by program and subcommand.
var selfCommands = map[string]map[string]string{
	"engine": {"uninstall": "removes agentledger's hooks", "install": "changes agentledger's hooks (monitor mode lifts enforcement)",
		"stop": "stops the engine", "tokens": "issues engine tokens"},
	"ledger": {"shred": "shreds sealed records' keys", "keys": "changes the ledger's keys", "rotate": "rotates the ledger's keys"},
}

// selfCommand says why c lifts or weakens agentledger's own protection:
// one of its commands that uninstalls, stops or rekeys it, or a signal to
// its processes; "" for any other command.
func selfCommand(c action.Command) string {
	if subs, ok := selfCommands[c.Binary]; ok {
		for _, w := range c.Argv[1:] {
			if strings.HasPrefix(w, "-") {
				continue
			}
			if why, ok := subs[w]; ok {
				return c.Binary + " " + w + " " + why
			}
			break
		}
	}
	if agentHosts[c.Binary] || c.Binary == "export" {
		line := strings.Join(c.Argv, " ") + " " + strings.Join(c.Env, " ")
		if agentHosts[c.Binary] && hostsUnguarded.MatchString(line) || strings.Contains(line, "AGENTLEDGER_DISABLE=") {
			return c.Binary + " starts an agent without its permission checks or hooks"
		}
	}
	switch c.Binary {
	case "kill", "pkill", "killall", "pgrep":
		if c.Binary == "pgrep" && !slices.Contains(c.Via, "$()") {
			return "" // looking is not signalling; kill $(pgrep engine) is
		}
		for _, w := range c.Argv[1:] {
			if namesEngine.MatchString(w) && (c.Binary != "kill" || strings.ContainsAny(w, "$`")) {
				return c.Binary + " signals agentledger's engine"
			}
		}
	case "systemctl", "launchctl", "service":
		if strings.Contains(strings.Join(c.Argv, " "), "agentledger") && slices.ContainsFunc(c.Argv, func(w string) bool {
			return w == "stop" || w == "disable" || w == "kill" || w == "mask" || w == "unload" || w == "bootout" || w == "remove"
		}) {
			return c.Binary + " stops agentledger's service"
		}
	}
	return ""
}

// expand reads a path as the shell would: ~ and $HOME are the home
// directory (kept as written when it is not known), ${VAR:-default} is its
// default, the XDG variables their defaults under the home directory, a
// relative path is under cwd.
func (g *guard) expand(p, cwd string) string {
	p = expandVars(strings.Trim(p, `"'`))
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") && !strings.HasPrefix(p, "$HOME") && !strings.HasPrefix(p, "${HOME}") && cwd != "" {
		p = expandVars(cwd) + "/" + p
	}
	for _, h := range []string{"${HOME}", "$HOME", "~"} {
		if rest, ok := strings.CutPrefix(p, h); ok && (rest == "" || rest[0] == '/') {
			if g.home == "" {
				return path.Clean("~" + rest)
			}
			return path.Clean(g.home + rest)
		}
	}
	return path.Clean(p)
}

// varDefault matches ${NAME:-word}, ${NAME-word}, ${NAME:=word} and
// ${NAME=word}.
var varDefault = regexp.MustCompile(`\$\{(\w+):?[-=]([^{}]*)\}`)

// xdgDefaults are the XDG base directories' values when they are unset.
var xdgDefaults = map[string]string{"XDG_DATA_HOME": "~/.local/share", "XDG_CONFIG_HOME": "~/.config", "XDG_STATE_HOME": "~/.local/state", "XDG_CACHE_HOME": "~/.cache"}

// expandVars reads the variables of a path the way the shell would when
// they hold their defaults: ${X:-default} is default; $XDG_DATA_HOME and
// friends are their defaults under the home directory.
func expandVars(p string) string {
	if !strings.Contains(p, "$") {
		return p
	}
	for range 4 { // nested defaults: ${A:-${B:-~/x}}
		q := varDefault.ReplaceAllStringFunc(p, func(m string) string {
			sub := varDefault.FindStringSubmatch(m)
			if d, ok := xdgDefaults[sub[1]]; ok && sub[2] == "" {
				return d
			}
			return sub[2]
		})
		if q == p {
			break
		}
		p = q
	}
	for name, d := range xdgDefaults {
		p = strings.ReplaceAll(p, "${"+name+"}", d)
		if i := strings.Index(p, "$"+name); i >= 0 && (i+1+len(name) == len(p) || p[i+1+len(name)] == '/') {
			p = p[:i] + d + p[i+1+len(name):]
		}
	}
	return p
}

// under reports whether p is one of roots or inside one (or, for a path
// with glob characters, may name one).
func (g *guard) under(p string, roots []root) (string, bool) {
	pathGlob := strings.ContainsAny(p, "*?[")
	for _, r := range roots {
		switch {
		case pathGlob:
		case r.name:
			if p == r.tail || strings.HasPrefix(p, r.tailSlash) || strings.HasSuffix(p, r.slashTail) || strings.Contains(p, r.slashTailSlash) {
				return r.text, true
			}
			continue
		case r.abs:
			if p == r.text || strings.HasPrefix(p, r.prefix) || r.text == "/" {
				return r.text, true
			}
			continue
		}
		if g.underGlob(p, r.text) {
			return r.text, true
		}
	}
	return "", false
}

// underGlob is under for one root that is a glob, or for a path with glob
// characters: p's ancestors are tried one by one.
func (g *guard) underGlob(p, r string) bool {
	glob := strings.ContainsAny(r, "*?[")
	tail, anyDir := strings.CutPrefix(r, "**/")
	anyDir = anyDir && !strings.ContainsAny(tail, "*?[")
	for q := p; ; q = path.Dir(q) {
		switch {
		case anyDir: // **/NAME: q is NAME, or ends in /NAME
			if q == tail || strings.HasSuffix(q, "/"+tail) {
				return true
			}
		case glob:
			if manifest.MatchGlob(r, q, true) || !strings.HasPrefix(q, "/") && manifest.MatchGlob(r, "/"+q, true) {
				return true
			}
		case q == r:
			return true
		}
		if strings.ContainsAny(q, "*?[") && !glob {
			if ok, _ := path.Match(q, r); ok {
				return true
			}
		}
		if q == "/" || q == "." || q == "~" || !strings.Contains(q, "/") {
			return false
		}
	}
}

// above reports whether p is a parent of a protected directory that has a
// known place (an absolute root), or a glob that takes one in: removing or
// moving p takes the protected directory with it.
func (g *guard) above(p string) (string, bool) {
	for _, r := range slices.Concat(g.data, g.config) {
		if strings.ContainsAny(r, "*?[") || !strings.HasPrefix(r, "/") {
			continue
		}
		if p == "/" || strings.HasPrefix(r, p+"/") {
			return r, true
		}
		if strings.ContainsAny(p, "*?[") {
			for q := r; q != "/"; q = path.Dir(q) {
				if ok, _ := path.Match(p, q); ok {
					return r, true
				}
			}
		}
	}
	return "", false
}

// readOnly reports whether c only reads the files it names.
func readOnly(c action.Command) bool { return action.ReadsOnly(c) }

// destructive reports whether c removes or moves what it names.
func destructive(c action.Command) bool {
	switch c.Binary {
	case "rm", "rmdir", "mv", "shred", "unlink", "chmod", "chown", "chattr", "truncate":
		return true
	case "find":
		// -fprint and -fls write a file; -delete and -exec (rm ...) take
		// what matches.
		return slices.ContainsFunc(c.Argv[1:], func(a string) bool {
			return a == "-delete" || strings.HasPrefix(a, "-exec") || a == "-ok" || a == "-okdir"
		})
	case "rsync":
		return slices.ContainsFunc(c.Argv, func(a string) bool { return strings.HasPrefix(a, "--delete") || a == "--remove-source-files" })
	case "tar":
		// Extracting into a directory overwrites what is there.
		return slices.ContainsFunc(c.Argv[1:], func(a string) bool {
			return a == "--extract" || a == "--get" || !strings.HasPrefix(a, "--") && strings.Contains(a, "x") && (strings.HasPrefix(a, "-") || a == c.Argv[1])
		})
	case "unzip", "cpio", "7z", "bsdtar":
		return true
	}
	return false
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
