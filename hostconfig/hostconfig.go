// Package hostconfig writes agentledger's hooks into an agent host's own
// configuration file (Claude Code, Cursor, GitHub Copilot, Gemini CLI, Qwen
// Code, Droid, Codex), or its plugin into a host that loads plugins
// (opencode, Kilo CLI), and takes them out again.
//
// An install merges: every member of the file agentledger does not own
// keeps its place and its value, the hook entries are added beside the
// user's own, and an install that finds its hooks in place changes
// nothing. An uninstall removes exactly the hook entries agentledger
// wrote (recognised by their command: the engine program running
// "hook <host>"), and what became empty because of that. Every change is
// planned first (Change, with a unified diff), then applied atomically.
package hostconfig

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// HookTimeout is the time, in seconds, a host gives one agentledger hook:
// enough for the first hook of a session to start the local engine.
const HookTimeout = 30

// Scope is where a host's configuration is written: a project (Dir), or
// the user's own configuration (User, under Home).
type Scope struct {
	Dir  string // the project directory
	User bool
	Home string // the user's home directory (default: os.UserHomeDir)
	// Getenv reads the environment (default os.Getenv); Copilot's user
	// hooks live under $COPILOT_HOME when it is set.
	Getenv func(string) string
}

func (s Scope) home() (string, error) {
	if s.Home != "" {
		return s.Home, nil
	}
	return os.UserHomeDir()
}

// root is the directory a scope's wrapper is under: the project, or the
// user's home.
func (s Scope) root() (string, error) {
	if s.User {
		return s.home()
	}
	return s.Dir, nil
}

func (s Scope) env(k string) string {
	if s.Getenv == nil {
		return os.Getenv(k)
	}
	return s.Getenv(k)
}

// spec is how one host configures command hooks.
type spec struct {
	// events are the host events the adapter handles, in the order the
	// file lists them.
	events []string
	// file is the configuration file for a scope.
	file func(s Scope) (string, error)
	// base is a new file's content before any hook is added.
	base func() *node
	// grouped hosts list, per event, groups {matcher, hooks: [handler]};
	// the others list handlers directly.
	grouped bool
	// matcher is the matcher of a group for event ("" for none).
	matcher func(event string) string
	// commandKey is the handler member holding the command.
	commandKey string
	// handler is agentledger's handler running command.
	handler func(command string) *node
	// httpHandler, for a host with an HTTP hook type that fails closed, is
	// agentledger's handler sending the event to h.
	httpHandler func(h HTTPHook) *node
	// owned: the file is agentledger's alone (removed when its hooks are).
	owned bool
}

func dirFile(project, user string) func(Scope) (string, error) {
	return func(s Scope) (string, error) {
		if !s.User {
			return filepath.Join(s.Dir, project), nil
		}
		home, err := s.home()
		return filepath.Join(home, user), err
	}
}

var specs = map[string]*spec{
	"claude-code": {
		events: []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionDenied", "PostToolUse", "PostToolUseFailure", "PreCompact", "PostCompact", "Stop", "SubagentStart", "SubagentStop", "ConfigChange", "InstructionsLoaded", "SessionEnd"},
		file:   dirFile(".claude/settings.json", ".claude/settings.json"),
		base:   func() *node { return object() }, grouped: true,
		matcher: func(event string) string {
			if event == "PreToolUse" || event == "PostToolUse" || event == "PostToolUseFailure" || event == "PermissionDenied" {
				return "*"
			}
			return ""
		},
		commandKey: "command",
		handler: func(c string) *node {
			// onFailure "block" (Claude Code 2.1.295+, ignored before): a
			// hook that cannot start or exits oddly blocks the call instead
			// of letting it through.
			return object(member{"type", scalar("command")}, member{"command", scalar(c)}, member{"timeout", scalar(HookTimeout)}, member{"onFailure", scalar("block")})
		},
		httpHandler: func(h HTTPHook) *node {
			headers := object()
			for _, kv := range h.Headers {
				headers.set(kv[0], scalar(kv[1]))
			}
			return object(member{"type", scalar("http")}, member{"url", scalar(h.URL)}, member{"headers", headers}, member{"timeout", scalar(HookTimeout)}, member{"onFailure", scalar("block")})
		},
	},
	"cursor": {
		events: []string{"sessionStart", "beforeSubmitPrompt", "preToolUse", "beforeShellExecution", "beforeMCPExecution", "beforeReadFile",
			"postToolUse", "afterShellExecution", "afterMCPExecution", "afterFileEdit", "subagentStart", "subagentStop", "stop", "sessionEnd"},
		file:       dirFile(".cursor/hooks.json", ".cursor/hooks.json"),
		base:       func() *node { return object(member{"version", scalar(1)}) },
		commandKey: "command",
		handler: func(c string) *node {
			// failClosed: a hook that crashes or times out blocks the call.
			return object(member{"command", scalar(c)}, member{"timeout", scalar(HookTimeout)}, member{"failClosed", scalar(true)})
		},
	},
	"copilot": {
		// PascalCase names: every payload then names its event.
		events: []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "PreCompact", "Stop", "SubagentStop", "SessionEnd"},
		file: func(s Scope) (string, error) {
			if !s.User {
				return filepath.Join(s.Dir, ".github/hooks/agentledger.json"), nil
			}
			if h := s.env("COPILOT_HOME"); h != "" {
				return filepath.Join(h, "hooks/agentledger.json"), nil
			}
			home, err := s.home()
			return filepath.Join(home, ".copilot/hooks/agentledger.json"), err
		},
		base:       func() *node { return object(member{"version", scalar(1)}) },
		commandKey: "bash",
		handler: func(c string) *node {
			return object(member{"type", scalar("command")}, member{"bash", scalar(c)}, member{"timeoutSec", scalar(HookTimeout)})
		},
		owned: true,
	},
	"gemini": {
		events: []string{"SessionStart", "BeforeAgent", "BeforeModel", "AfterModel", "BeforeTool", "AfterTool", "AfterAgent", "PreCompress", "SessionEnd"},
		file:   dirFile(".gemini/settings.json", ".gemini/settings.json"),
		base:   func() *node { return object() }, grouped: true,
		matcher: func(event string) string {
			if event == "BeforeTool" || event == "AfterTool" {
				return ".*"
			}
			return ""
		},
		commandKey: "command",
		handler: func(c string) *node {
			// Gemini CLI's timeout is in milliseconds.
			return object(member{"name", scalar("agentledger")}, member{"type", scalar("command")}, member{"command", scalar(c)}, member{"timeout", scalar(HookTimeout * 1000)})
		},
	},
	// Qwen Code: Claude Code's settings shape; its timeout in seconds.
	"qwen-code": {
		events: []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "PreCompact", "PostCompact",
			"SubagentStart", "SubagentStop", "Stop", "SessionEnd"},
		file: dirFile(".qwen/settings.json", ".qwen/settings.json"),
		base: func() *node { return object() }, grouped: true,
		matcher: func(event string) string {
			if event == "PreToolUse" || event == "PostToolUse" || event == "PostToolUseFailure" {
				return "*"
			}
			return ""
		},
		commandKey: "command",
		handler: func(c string) *node {
			return object(member{"type", scalar("command")}, member{"command", scalar(c)}, member{"timeout", scalar(HookTimeout)})
		},
	},
	// Droid: the hooks member of .factory/settings.json (a hooks.json in
	// the same directory takes the events it names over).
	"droid": {
		events: []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "SubagentStop", "Stop", "SessionEnd"},
		file:   dirFile(".factory/settings.json", ".factory/settings.json"),
		base:   func() *node { return object() }, grouped: true,
		matcher: func(event string) string {
			if event == "PreToolUse" || event == "PostToolUse" {
				return "*"
			}
			return ""
		},
		commandKey: "command",
		handler: func(c string) *node {
			return object(member{"type", scalar("command")}, member{"command", scalar(c)}, member{"timeout", scalar(HookTimeout)})
		},
	},
	"codex": {
		events: []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "PreCompact", "PostCompact",
			"SubagentStart", "SubagentStop", "Stop", "SessionEnd"},
		file: func(s Scope) (string, error) {
			if !s.User {
				return filepath.Join(s.Dir, ".codex/hooks.json"), nil
			}
			if h := s.env("CODEX_HOME"); h != "" {
				return filepath.Join(h, "hooks.json"), nil
			}
			home, err := s.home()
			return filepath.Join(home, ".codex/hooks.json"), err
		},
		base: func() *node { return object() }, grouped: true,
		matcher: func(event string) string {
			if event == "PreToolUse" || event == "PostToolUse" || event == "PermissionRequest" {
				return "*"
			}
			return ""
		},
		commandKey: "command",
		handler: func(c string) *node {
			return object(member{"type", scalar("command")}, member{"command", scalar(c)}, member{"timeout", scalar(HookTimeout)})
		},
	},
}

// Hosts are the hosts an install can configure, sorted.
func Hosts() []string {
	var out []string
	for h := range specs {
		out = append(out, h)
	}
	for h := range pluginSpecs {
		out = append(out, h)
	}
	for h := range hookFilesSpecs {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

// Events are the host events an install sends to agentledger.
func Events(host string) []string {
	if s := specs[host]; s != nil {
		return slices.Clone(s.events)
	}
	if s := pluginSpecs[host]; s != nil {
		return slices.Clone(s.events)
	}
	if s := hookFilesSpecs[host]; s != nil {
		return slices.Clone(s.events)
	}
	return nil
}

// Change is a planned change of one configuration file.
type Change struct {
	Path          string
	Before, After []byte // After is nil when the file is to be removed
	Existed       bool
	// Mode of a new file (default 0644; a file that exists keeps its own).
	Mode os.FileMode
	root string // the project or home directory the file is under
	// More are the changes of the other files the same install makes (a
	// host that runs a file per event: Cline).
	More []*Change
}

// Changed reports whether applying the change would change the file (or
// one of More).
func (c *Change) Changed() bool {
	for _, m := range c.More {
		if m.Changed() {
			return true
		}
	}
	return c.Existed != (c.After != nil) || string(c.Before) != string(c.After)
}

// Diff is the change as a unified diff ("" when nothing changes).
func (c *Change) Diff() string {
	d := Diff(c.Path, c.Before, c.After)
	for _, m := range c.More {
		d += m.Diff()
	}
	return d
}

// Apply makes the change: the new file is written beside the old one and
// renamed over it (keeping its mode), so a host never reads half a file;
// then each of More.
func (c *Change) Apply() error {
	if err := c.apply(); err != nil {
		return err
	}
	for _, m := range c.More {
		if err := m.apply(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Change) apply() error {
	if c.Existed == (c.After != nil) && string(c.Before) == string(c.After) {
		return nil
	}
	if c.After == nil {
		if err := os.Remove(c.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		// The directories an install made, as far as nothing else is in them.
		for dir := filepath.Dir(c.Path); c.root != "" && strings.HasPrefix(dir, c.root+string(filepath.Separator)); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break
			}
		}
		return nil
	}
	mode := os.FileMode(0o644)
	if c.Mode != 0 {
		mode = c.Mode
	}
	if fi, err := os.Stat(c.Path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.Path), "."+filepath.Base(c.Path)+".agentledger-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(c.After); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), c.Path)
}

// load reads the host's configuration file for scope, or its base content
// when there is none.
func load(host string, scope Scope) (*spec, *Change, *node, error) {
	sp := specs[host]
	if sp == nil {
		return nil, nil, nil, fmt.Errorf("unknown host %q (one of %s)", host, strings.Join(Hosts(), ", "))
	}
	if !scope.User && scope.Dir == "" {
		return nil, nil, nil, errors.New("no project directory")
	}
	p, err := sp.file(scope)
	if err != nil {
		return nil, nil, nil, err
	}
	c := &Change{Path: p, root: filepath.Clean(scope.Dir)}
	if scope.User {
		c.root, _ = scope.home()
	}
	data, err := os.ReadFile(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return sp, c, sp.base(), nil
	case err != nil:
		return nil, nil, nil, err
	}
	c.Before, c.Existed = data, true
	if strings.TrimSpace(string(data)) == "" {
		return sp, c, sp.base(), nil
	}
	doc, err := parseJSON(data)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w; nothing was changed", p, err)
	}
	if !doc.isObj {
		return nil, nil, nil, fmt.Errorf("%s: not a JSON object; nothing was changed", p)
	}
	if h := doc.get("hooks"); h != nil && !h.isObj {
		return nil, nil, nil, fmt.Errorf("%s: \"hooks\" is not an object; nothing was changed", p)
	}
	return sp, c, doc, nil
}

// Install plans the change that sends every event the host's adapter
// handles to command (the engine program and "hook <host>", with any
// flags). Hooks of agentledger already in place for an event are updated
// to command, duplicates of them removed; the user's own hooks stay.
func Install(host string, scope Scope, command string) (*Change, error) {
	if ps := pluginSpecs[host]; ps != nil {
		return installPlugin(host, ps, scope, command)
	}
	if hs := hookFilesSpecs[host]; hs != nil {
		return installHookFiles(host, hs, scope, command)
	}
	sp := specs[host]
	if sp == nil {
		return nil, fmt.Errorf("unknown host %q (one of %s)", host, strings.Join(Hosts(), ", "))
	}
	return install(host, scope, program(command), func(string) *node { return sp.handler(command) })
}

// HTTPHook is a hook the host sends as an HTTP request: a URL on this
// machine's loopback, and the headers that go with it.
type HTTPHook struct {
	URL     string
	Headers [][2]string
}

// InstallHTTP plans the change that sends every event the host's adapter
// handles to agentledger's HTTP hook endpoint, failing closed (the host
// blocks a call whose request fails), except SessionStart, which runs
// startCommand: a command hook, which starts the engine the HTTP hooks
// reach. Only hosts with an HTTP hook type that can fail closed take it.
func InstallHTTP(host string, scope Scope, h HTTPHook, startCommand string) (*Change, error) {
	sp := specs[host]
	if sp == nil || sp.httpHandler == nil {
		return nil, fmt.Errorf("%s has no HTTP hook type with a documented fail-closed setting; use the command hook", host)
	}
	return install(host, scope, program(startCommand), func(event string) *node {
		if event == "SessionStart" {
			return sp.handler(startCommand)
		}
		return sp.httpHandler(h)
	})
}

// install writes handlerFor(event) as agentledger's hook of every event.
func install(host string, scope Scope, prog string, handlerFor func(event string) *node) (*Change, error) {
	sp, c, doc, err := load(host, scope)
	if err != nil {
		return nil, err
	}
	hooks := doc.get("hooks")
	if hooks == nil {
		hooks = object()
		doc.set("hooks", hooks)
	}
	for _, event := range sp.events {
		list := hooks.get(event)
		if list == nil {
			list = array()
			hooks.set(event, list)
		}
		if !list.isArr {
			return nil, fmt.Errorf("%s: hooks.%s is not an array; nothing was changed", c.Path, event)
		}
		want := handlerFor(event)
		found := false
		sp.eachOurs(list, host, prog, func(h *node) bool {
			if found {
				return false // a duplicate: removed
			}
			found = true
			mergeHandler(h, want)
			return true
		})
		if !found {
			entry := want
			if sp.grouped {
				entry = object(member{"hooks", array(entry)})
				if m := sp.matcher(event); m != "" {
					entry = object(member{"matcher", scalar(m)}, member{"hooks", entry.get("hooks")})
				}
			}
			list.arr = append(list.arr, entry)
			list.dirty = true
		}
	}
	c.After = doc.encode(indentOf(c.Before))
	if c.Existed && doc.clean() {
		c.After = c.Before // nothing changed: the file stays byte for byte
	}
	return c, nil
}

// Uninstall plans the change that removes every hook of agentledger from
// the host's configuration for scope, and the groups, event lists and
// hooks object that only held them. A file that then holds nothing but
// what an install started it with is removed.
func Uninstall(host string, scope Scope, command string) (*Change, error) {
	if ps := pluginSpecs[host]; ps != nil {
		return uninstallPlugin(host, ps, scope)
	}
	if hs := hookFilesSpecs[host]; hs != nil {
		return uninstallHookFiles(host, hs, scope)
	}
	sp, c, doc, err := load(host, scope)
	if err != nil {
		return nil, err
	}
	if !c.Existed {
		return c, nil
	}
	c.After = c.Before
	hooks := doc.get("hooks")
	if hooks == nil {
		return c, nil
	}
	prog, removed := program(command), 0
	for _, m := range slices.Clone(hooks.obj) {
		if !m.val.isArr {
			continue
		}
		had := len(m.val.arr)
		sp.eachOurs(m.val, host, prog, func(*node) bool { removed++; return false })
		if had > 0 && len(m.val.arr) == 0 {
			hooks.remove(m.key)
		}
	}
	if removed == 0 {
		return c, nil
	}
	if len(hooks.obj) == 0 {
		doc.remove("hooks")
	}
	c.After = doc.encode(indentOf(c.Before))
	if equal(doc, sp.base()) || len(doc.obj) == 0 {
		c.After = nil // only what an install created is left
	}
	return c, nil
}

// eachOurs calls keep with every handler of agentledger for host in an
// event's list; a handler keep returns false for is removed, and with it a
// group that held nothing else.
func (sp *spec) eachOurs(list *node, host, prog string, keep func(h *node) bool) {
	filter := func(parent *node, f func(*node) bool) {
		out := parent.arr[:0]
		for _, it := range parent.arr {
			if f(it) {
				out = append(out, it)
			}
		}
		if len(out) != len(parent.arr) {
			parent.dirty = true
		}
		parent.arr = out
	}
	handlers := func(h *node) bool {
		return !(isOurs(h.str(sp.commandKey), host, prog) || isOurHTTP(h, host)) || keep(h)
	}
	if !sp.grouped {
		filter(list, handlers)
		return
	}
	filter(list, func(g *node) bool {
		hs := g.get("hooks")
		if hs == nil || !hs.isArr || len(hs.arr) == 0 {
			return true // not a group agentledger touches
		}
		filter(hs, handlers)
		return len(hs.arr) > 0
	})
}

// mergeHandler brings an existing handler of agentledger to want, keeping
// members the user added to it.
func mergeHandler(h, want *node) {
	for _, m := range want.obj {
		if !equal(h.get(m.key), m.val) {
			h.set(m.key, m.val)
		}
	}
	// What only the other kind of handler has goes (a command hook
	// become an HTTP hook, or back).
	for _, k := range []string{"command", "url", "headers"} {
		if want.get(k) == nil && h.get(k) != nil {
			h.remove(k)
		}
	}
}

// isOurs reports whether a hook command is agentledger's hook for host:
// the engine program (named prog, or engine) running "hook <host>", the
// thin hook (agentledger-hook <host>), or a project's hook wrapper
// (.../.agentledger/hook <host>).
func isOurs(command, host, prog string) bool {
	words := shellWords(command)
	if len(words) < 2 {
		return false
	}
	first := filepath.ToSlash(words[0])
	switch name := path.Base(first); {
	case name == ThinHook || strings.HasSuffix(first, "/"+WrapperPath) || first == WrapperPath:
		return words[1] == host
	case name != prog && name != "engine":
		return false
	}
	for i := 1; i+1 < len(words); i++ {
		if words[i] == "hook" && words[i+1] == host {
			return true
		}
	}
	return false
}

// HTTPHookPath is the path of agentledger's HTTP hook endpoint for host:
// the engine answers there with the host's own answer.
func HTTPHookPath(host string) string { return "/v1/hooks/" + host + "/native" }

// isOurHTTP reports whether a handler is agentledger's HTTP hook for host.
func isOurHTTP(h *node, host string) bool {
	u := h.str("url")
	return h.str("type") == "http" && strings.HasPrefix(u, "http://127.0.0.1:") && strings.HasSuffix(u, HTTPHookPath(host))
}

// program is the name of the program a hook command runs.
func program(command string) string {
	words := shellWords(command)
	if len(words) == 0 {
		return ""
	}
	return path.Base(filepath.ToSlash(words[0]))
}

// shellWords splits a command line as a POSIX shell would split plain
// words: on blanks, with single quotes, double quotes and backslashes.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	inWord, quote := false, rune(0)
	for i := 0; i < len(s); i++ {
		c := rune(s[i])
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				w.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s) && quote != '\'':
			i++
			w.WriteByte(s[i])
			inWord = true
		case quote == '"':
			if c == '"' {
				quote = 0
			} else {
				w.WriteByte(s[i])
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(s[i])
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// ThinHook is the name of the program a host runs for every call
// (cmd/agentledger-hook).
const ThinHook = "agentledger-hook"

// ShellCommand is the shell command running the program at exe (an
// absolute path) with args.
func ShellCommand(exe string, args ...string) string {
	return strings.Join(append([]string{shellQuote(exe)}, args...), " ")
}

// projectDirVar is the variable in which each host tells its hooks the
// project directory (Copilot documents none: its hooks run in the
// repository).
var projectDirVar = map[string]string{"claude-code": "CLAUDE_PROJECT_DIR", "cursor": "CURSOR_PROJECT_DIR", "gemini": "GEMINI_PROJECT_DIR", "droid": "FACTORY_PROJECT_DIR", "qwen-code": "QWEN_PROJECT_DIR",
	// agentledger's plugin sets it for its hook command (hostconfig.Plugin).
	"opencode": "OPENCODE_PROJECT_DIR", "kilo": "KILO_PROJECT_DIR",
	// agentledger's hook files set it for their command (hostconfig.HookFile).
	"cline": "CLINE_PROJECT_DIR"}

// ProjectCommand is the hook command a project's configuration holds: the
// project's hook wrapper (WrapperPath, committed with it), which runs
// agentledger-hook from PATH for whoever works in the project, and blocks
// (and notes for the record) a call where agentledger is not installed.
func ProjectCommand(host string, args ...string) string {
	w := WrapperPath
	if v := projectDirVar[host]; v != "" {
		w = `"$` + v + `"/` + WrapperPath
	}
	return strings.Join(append([]string{w, host}, args...), " ")
}

func shellQuote(s string) string {
	if strings.ContainsAny(s, " \t'\"$`\\;&|<>()*?[]#~") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

// Command is the hook command for host that runs the engine program at
// exe: its path, quoted for the shell when it needs to be.
func Command(exe, host string, args ...string) string {
	return strings.Join(append([]string{shellQuote(exe), "hook", host}, args...), " ")
}

// Installed is what a host's configuration for a scope holds of
// agentledger: its file, whether the file exists, and agentledger's hook
// commands per event the adapter handles (none for an event without one;
// "http URL" for an HTTP hook).
type Installed struct {
	Path     string
	Exists   bool
	Commands map[string][]string
}

// Missing are the events the adapter handles that have no agentledger
// hook.
func (in Installed) Missing(host string) []string {
	var out []string
	for _, e := range Events(host) {
		if len(in.Commands[e]) == 0 {
			out = append(out, e)
		}
	}
	return out
}

// Inspect reads what a host's configuration for scope holds of
// agentledger, changing nothing.
func Inspect(host string, scope Scope) (Installed, error) {
	if ps := pluginSpecs[host]; ps != nil {
		return inspectPlugin(host, ps, scope)
	}
	if hs := hookFilesSpecs[host]; hs != nil {
		return inspectHookFiles(host, hs, scope)
	}
	sp, c, doc, err := load(host, scope)
	if err != nil {
		return Installed{}, err
	}
	in := Installed{Path: c.Path, Exists: c.Existed, Commands: map[string][]string{}}
	hooks := doc.get("hooks")
	if hooks == nil {
		return in, nil
	}
	for _, event := range sp.events {
		list := hooks.get(event)
		if list == nil || !list.isArr {
			continue
		}
		sp.eachOurs(list, host, "engine", func(h *node) bool {
			cmd := h.str(sp.commandKey)
			if isOurHTTP(h, host) {
				cmd = "http " + h.str("url")
			}
			in.Commands[event] = append(in.Commands[event], cmd)
			return true
		})
	}
	return in, nil
}

// CommandProgram is the program a hook command runs and the variables it
// names (a project wrapper's "$CLAUDE_PROJECT_DIR"), for a check to
// resolve: the first word of the command, unquoted.
func CommandProgram(command string) string {
	words := shellWords(command)
	if len(words) == 0 {
		return ""
	}
	return words[0]
}
