package action

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentledger/agentledger/aarts"
)

// Package is a software package an action installs.
type Package struct {
	Manager string `json:"manager"`
	Name    string `json:"name"`
	Version string `json:"version"`
	// Suspect names the well-known package this one imitates, when its
	// name is one edit away from it ("requets" for requests).
	Suspect string `json:"suspect"`
}

// Analysis is the engine's own reading of an action's input. It is derived
// from the verbatim tool input, never taken from artifacts a host supplied
// (AARTS §6.4.1). Every list is sorted or in order of appearance, so the
// same input always gives the same Analysis.
type Analysis struct {
	Tool         string           `json:"tool"`
	ToolNative   string           `json:"tool_native"`
	MCPServer    string           `json:"mcp_server,omitempty"`
	Commands     []Command        `json:"commands"`
	Binaries     []string         `json:"binaries"`
	URLs         []string         `json:"urls"`
	Hosts        []string         `json:"hosts"`
	Paths        []string         `json:"paths"`
	WritePaths   []string         `json:"write_paths"`
	Packages     []Package        `json:"packages"`
	SQL          []string         `json:"sql"`
	Decoded      []string         `json:"decoded"`
	PipedToShell bool             `json:"piped_to_shell"`
	Artifacts    []aarts.Artifact `json:"artifacts"`
	// Findings are what the reading found that a policy should weigh
	// (FindDestructive, FindDownloadExec, ...).
	Findings []Finding `json:"findings"`
	// Downloads are the files the action downloads (curl -o, wget).
	Downloads []string `json:"downloads"`
	// Executes are the files the action runs, sources or makes executable.
	Executes []string `json:"executes"`
	// Caveats say what the reading cannot vouch for (a script file, code
	// on a pipe, a program named by configuration or a variable, install
	// scripts) or that the action changes what other programs run later
	// (a makefile, a CI workflow, git configuration, an instruction file).
	// An action with a caveat is never explicitly allowed.
	Caveats []string `json:"caveats"`
	// RoutineCaveats are the caveats that are the project's ordinary work
	// (its own scripts and build wrappers run, its build files edited):
	// never explicitly allowed, but not asked about where the host will
	// not prompt.
	RoutineCaveats []string `json:"routine_caveats"`
	// MemoryWrites are the texts the action writes into files hosts load
	// as instructions or memory (CLAUDE.md, AGENTS.md, GEMINI.md, rules,
	// memory directories), for the memory-poisoning rules.
	MemoryWrites []string `json:"memory_writes"`
	// Sends are the ways the call carries data off the machine beyond a
	// request body: uploads from standard input, long query strings and
	// headers, raw sockets, DNS names built from data, interpreter code
	// that opens a connection.
	Sends []string `json:"sends"`
	// Symlinks maps paths the call names that the engine saw to be
	// symbolic links to what they point to; Removes are untracked files
	// the engine saw a git clean or git stash -u of the call would take
	// away. Both are the engine's observation of the file system when the
	// event arrived, recorded with the event (its fs_facts extension), so
	// replay reads the same.
	Symlinks map[string]string `json:"symlinks,omitempty"`
	Removes  []string          `json:"removes,omitempty"`
	// MayWrite are paths the call names that its program may write,
	// judged by the worst it can do: a program the analysis does not
	// know, or inline code, naming a path; any program given a path as
	// an output option's value. (WritePaths are the writes the analysis
	// is sure of.)
	MayWrite []string `json:"may_write"`
	// EndDir is where a cd on the line leaves the shell, when it moves it.
	EndDir string `json:"end_dir,omitempty"`
	// Cwd is the working directory relative paths were read against.
	Cwd string `json:"-"`
}

// AnalyzeTool reads a tool call: native is the host's tool name, input the
// decoded tool_input (a JSON object, or a string for hosts that send one),
// cwd the working directory relative paths resolve against ("" leaves them
// relative).
func AnalyzeTool(native string, input any, cwd string) Analysis {
	a := Analysis{ToolNative: native, MCPServer: aarts.MCPServer(native), Cwd: cwd}
	base := aarts.Canonical(native)
	var shellLines, written []string
	walkStrings(input, "", func(field, s string) {
		f := strings.ToLower(field)
		if (base == aarts.ToolFileWrite || base == aarts.ToolFileEdit || a.MCPServer != "" && mcpWrites(native)) && contentFields[f] {
			written = append(written, s)
		}
		switch {
		case base == aarts.ToolShell && (f == "command" || f == "cmd" || f == "script" || f == "commands"):
			shellLines = append(shellLines, s)
		case base == aarts.ToolCodeExec && (f == "code" || f == "source"):
			a.Decoded = append(a.Decoded, decodeB64(s)...)
		case f == "query" || f == "sql" || f == "statement":
			if base == aarts.ToolDatabase || looksSQL(s) {
				a.SQL = append(a.SQL, s)
			}
		}
		if !isPathField(f) && a.MCPServer != "" && looksPath(s) && !strings.ContainsAny(s, " \n") {
			// An MCP tool's arguments are judged by what they are, whatever
			// their names: a path in any of them (a move's source and
			// destination) is read, and written by a tool that writes.
			p := resolve(s, cwd)
			a.Paths = append(a.Paths, p)
			if mcpWrites(native) {
				a.WritePaths = append(a.WritePaths, p)
			}
		}
		if f == "pattern" && base == aarts.ToolFileRead && (strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~")) && strings.ContainsAny(s, "*?[") {
			a.Paths = append(a.Paths, s) // a Glob tool's absolute pattern names what it reads
		}
		if isPathField(f) && s != "" {
			p := resolve(s, cwd)
			a.Paths = append(a.Paths, p)
			if base == aarts.ToolFileWrite || base == aarts.ToolFileEdit || base == aarts.ToolFileDelete || a.MCPServer != "" && mcpWrites(native) {
				a.WritePaths = append(a.WritePaths, p)
			}
		}
		if strings.Contains(s, "://") && base != aarts.ToolShell {
			// A shell call's URLs are its network commands' (addShell): a
			// URL in a commit message or a grep pattern goes nowhere.
			for _, u := range urlPattern.FindAllString(s, -1) {
				a.URLs = append(a.URLs, trimURL(u))
			}
		}
	})
	for _, line := range shellLines {
		a.addShell(line, cwd, 0)
	}
	var patched bool
	if patch, ok := patchOf(native, input); ok {
		patched = true
		a.addPatch(patch, cwd)
	}
	for _, line := range shellLines {
		// apply_patch run from a shell (Codex's heredoc form).
		if patch, ok := ParsePatch(line); ok && slices.ContainsFunc(a.Commands, func(c Command) bool { return c.Binary == "apply_patch" }) {
			a.addPatch(patch, cwd)
		}
	}
	if native == "save_memory" { // Gemini CLI's memory tool writes its user memory file
		a.WritePaths = append(a.WritePaths, "~/.gemini/GEMINI.md")
	}
	if !patched {
		a.readWrites(written, cwd)
	}
	a.caveats(shellLines, cwd)
	a.findings(cwd)
	a.remoteShells()
	a.remoteShellShapes(shellLines)
	a.sends()
	a.endpointSends()
	a.Tool = canonicalFor(native, &a)
	a.finish()
	a.secretsOut(input)
	return a
}

// addPatch adds the files a patch writes, and what it writes into each.
func (a *Analysis) addPatch(patch Patch, cwd string) {
	for _, f := range patch.Files {
		for _, p := range []string{f.Path, f.MoveTo} {
			if p != "" {
				p = resolve(p, cwd)
				a.Paths = append(a.Paths, p)
				a.WritePaths = append(a.WritePaths, p)
				if f.Added != "" {
					a.readWritten(p, f.Added, cwd)
				}
			}
		}
	}
}

// AnalyzeText finds URLs and hosts in free text (prompts, fetched pages,
// memory content).
func AnalyzeText(s string) Analysis {
	var a Analysis
	for _, u := range urlPattern.FindAllString(s, -1) {
		a.URLs = append(a.URLs, trimURL(u))
	}
	a.finish()
	return a
}

func (a *Analysis) addShell(line, cwd string, depth int) {
	cmds := ParseShell(line)
	sawFetch := false
	dir := cwd
	for _, c := range cmds {
		if c.Binary == "cd" {
			dir = cdTarget(c, dir)
		}
		cwd := dir
		if c.Binary == "git" {
			// git -C DIR runs in DIR: its paths are DIR's.
			for i := 1; i+1 < len(c.Argv) && !gitSubcommands[c.Argv[i]]; i++ {
				if c.Argv[i] == "-C" {
					cwd = resolve(c.Argv[i+1], cwd)
				}
			}
		}
		if cwd != a.Cwd {
			c.Dir = cwd
		}
		a.Commands = append(a.Commands, c)
		a.Binaries = append(a.Binaries, c.Binary)
		for _, w := range c.Via {
			if privileged[w] {
				a.Binaries = append(a.Binaries, w) // sudo must be allowed too
			}
		}
		if c.Stage == 0 {
			sawFetch = fetchers[c.Binary]
		} else if c.Piped && sawFetch && (shells[c.Binary] || interpreters[c.Binary]) && !hasInline(c) && len(Executes(c)) == 0 {
			// The program it runs is what came down the pipe (curl | sh);
			// curl | python3 -c '…json…' runs its own code on the data.
			a.PipedToShell = true
		}
		a.Packages = append(a.Packages, packagesOf(c)...)
		a.Hosts = append(a.Hosts, rawSenderHosts(c)...) // nc HOST PORT, > /dev/tcp/HOST/PORT
		for i, arg := range c.Argv {
			if i == 0 {
				continue
			}
			if strings.Contains(arg, "://") && networkCommand(c) {
				for _, u := range urlPattern.FindAllString(arg, -1) {
					a.URLs = append(a.URLs, trimURL(u))
				}
			}
			if h := scpHost(arg); h != "" && (c.Binary == "ssh" || c.Binary == "scp" || c.Binary == "rsync" || c.Binary == "sftp" ||
				c.Binary == "git" && gitRemote(arg)) {
				a.Hosts = append(a.Hosts, h)
			}
			if f, ok := strings.CutPrefix(arg, "@"); ok && looksPath(f) {
				arg = f // curl -d @FILE, httpie field@FILE: the file is read
			}
			if looksPath(arg) {
				a.Paths = append(a.Paths, resolve(arg, cwd))
			}
		}
		for _, r := range c.Redirects {
			p := resolve(r, cwd)
			if StreamDevice(p) {
				continue // 2>/dev/null writes no file
			}
			a.Paths = append(a.Paths, p)
			a.WritePaths = append(a.WritePaths, p)
		}
		for _, r := range c.Inputs {
			a.Paths = append(a.Paths, resolve(r, cwd)) // read: cmd < FILE
		}
		for _, arg := range WrittenArgs(c) {
			if looksPath(arg) && !StreamDevice(resolve(arg, cwd)) {
				a.WritePaths = append(a.WritePaths, resolve(arg, cwd))
			}
		}
		if dbClients[c.Binary] {
			for i, arg := range c.Argv {
				if (arg == "-c" || arg == "-e" || arg == "--command" || arg == "--execute") && i+1 < len(c.Argv) {
					a.SQL = append(a.SQL, c.Argv[i+1])
				}
			}
		}
		// Base64 payloads: decode for inspection, and read decoded shell.
		if depth < 2 {
			for _, arg := range c.Argv[1:] {
				for _, d := range decodeB64(arg) {
					a.Decoded = append(a.Decoded, d)
					a.addShell(d, cwd, depth+1)
				}
			}
		}
	}
	// Text decoded on its way into a shell (echo ... | base64 -d | sh, xxd
	// -r, rev, tr rot13) is read as the commands it is.
	if depth < 2 {
		for start := 0; start < len(cmds); {
			end := start + 1
			for end < len(cmds) && cmds[end].Stage > 0 {
				end++
			}
			p := cmds[start:end]
			if len(p) >= 3 && (p[0].Binary == "echo" || p[0].Binary == "printf") && (shells[p[len(p)-1].Binary] || interpreterLang(p[len(p)-1].Binary) != "") {
				if d := decodeThrough(printed(p[0].Argv), p[1:len(p)-1]); d != "" && !slices.Contains(a.Decoded, d) {
					a.Decoded = append(a.Decoded, d)
					a.addShell(d, cwd, depth+1)
				}
			}
			start = end
		}
	}
	if depth == 0 && dir != a.Cwd && len(cmds) > 0 {
		a.EndDir = dir
	}
	if depth == 0 {
		for _, d := range a.Decoded {
			for _, u := range urlPattern.FindAllString(d, -1) {
				a.URLs = append(a.URLs, trimURL(u))
			}
		}
	}
}

// cdTarget is the directory a cd command moves to from dir: its operand
// resolved against dir; the home directory (~) for cd alone; dir itself
// when the target cannot be known (cd -).
func cdTarget(c Command, dir string) string {
	ops := operands(c.Argv)
	switch {
	case len(ops) == 0:
		return "~"
	case ops[0] == "-":
		return dir
	}
	return resolve(ops[0], dir)
}

// finish derives hosts and artifacts and sorts the sets.
func (a *Analysis) finish() {
	a.URLs = uniq(a.URLs)
	for _, u := range a.URLs {
		if h := hostOf(u); h != "" {
			a.Hosts = append(a.Hosts, h)
		}
	}
	a.Hosts = uniq(a.Hosts)
	a.Binaries = uniq(a.Binaries)
	a.Paths = uniq(a.Paths)
	a.WritePaths = uniq(a.WritePaths)
	a.Decoded = uniq(a.Decoded)
	a.SQL = uniq(a.SQL)
	sort.SliceStable(a.Packages, func(i, j int) bool {
		if a.Packages[i].Manager != a.Packages[j].Manager {
			return a.Packages[i].Manager < a.Packages[j].Manager
		}
		return a.Packages[i].Name < a.Packages[j].Name
	})
	a.Packages = slices.Compact(a.Packages)
	a.Artifacts = a.Artifacts[:0]
	for _, u := range a.URLs {
		a.Artifacts = append(a.Artifacts, aarts.Artifact{Type: aarts.ArtifactURL, Value: u})
	}
	for _, h := range a.Hosts {
		a.Artifacts = append(a.Artifacts, aarts.Artifact{Type: aarts.ArtifactNetworkAddress, Value: h})
	}
	for _, c := range a.Commands {
		ctx := ""
		if c.Piped {
			ctx = "piped"
		}
		if len(c.Via) > 0 {
			ctx = strings.TrimPrefix(ctx+",via:"+strings.Join(c.Via, ">"), ",")
		}
		a.Artifacts = append(a.Artifacts, aarts.Artifact{Type: aarts.ArtifactCommand, Value: strings.Join(c.Argv, " "), Context: ctx})
	}
	for _, p := range a.Paths {
		a.Artifacts = append(a.Artifacts, aarts.Artifact{Type: aarts.ArtifactFilePath, Value: p})
	}
	for _, p := range a.Packages {
		v := p.Manager + ":" + p.Name
		if p.Version != "" {
			v += "@" + p.Version
		}
		a.Artifacts = append(a.Artifacts, aarts.Artifact{Type: aarts.ArtifactPackage, Value: v})
	}
	for _, d := range a.Decoded {
		a.Artifacts = append(a.Artifacts, aarts.Artifact{Type: aarts.ArtifactContent, Value: d, Context: "base64_encoded"})
	}
	for _, f := range []*[]string{&a.Binaries, &a.URLs, &a.Hosts, &a.Paths, &a.WritePaths, &a.SQL, &a.Decoded} {
		if *f == nil {
			*f = []string{}
		}
	}
	if a.Commands == nil {
		a.Commands = []Command{}
	}
	if a.Packages == nil {
		a.Packages = []Package{}
	}
	if a.Artifacts == nil {
		a.Artifacts = []aarts.Artifact{}
	}
	if a.Findings == nil {
		a.Findings = []Finding{}
	}
	if a.MemoryWrites == nil {
		a.MemoryWrites = []string{}
	}
	for _, f := range []*[]string{&a.Sends, &a.Caveats, &a.Downloads, &a.Executes, &a.MayWrite, &a.RoutineCaveats} {
		if *f = uniq(*f); *f == nil {
			*f = []string{}
		}
	}
}

func uniq(s []string) []string {
	if len(s) == 0 {
		return s
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// walkStrings calls fn with every string in v and the name of the object
// member holding it (the nearest key, for strings in arrays).
func walkStrings(v any, field string, fn func(field, s string)) {
	walkFields(v, field, "", func(field, _, s string) { fn(field, s) })
}

// walkFields calls fn with every string in v, in key order: the name of
// the member holding it (the nearest key, for strings in arrays) and where
// it is (at, then .key and [i] for each step down).
func walkFields(v any, field, at string, fn func(field, at, s string)) {
	switch x := v.(type) {
	case string:
		fn(field, at, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkFields(x[k], k, at+"."+k, fn)
		}
	case []any:
		for i, e := range x {
			walkFields(e, field, fmt.Sprintf("%s[%d]", at, i), fn)
		}
	}
}

var pathFields = map[string]bool{
	"file_path": true, "filepath": true, "path": true, "notebook_path": true, "target_file": true, "filename": true,
	"file": true, "paths": true, "absolute_path": true, "target": true, "destination": true, "source_path": true,
	"dir_path": true, "directory": true,
}

func isPathField(f string) bool { return pathFields[f] }

// resolve cleans p and, when relative and cwd is known, roots it at cwd, so
// that traversal (a/../../etc) is visible as the path it reaches.
func resolve(p, cwd string) string {
	if strings.HasPrefix(p, "~") || strings.Contains(p, "://") {
		return p
	}
	if !strings.HasPrefix(p, "/") && cwd != "" {
		p = cwd + "/" + p
	}
	return path.Clean(p)
}

func looksPath(s string) bool {
	if s == "" || strings.HasPrefix(s, "-") || strings.Contains(s, "://") || strings.ContainsAny(s, "\n") {
		return false
	}
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") ||
		strings.HasPrefix(s, "~/") || strings.HasPrefix(s, ".") && len(s) > 1 && !strings.HasPrefix(s, "..") ||
		strings.Contains(s, "/") && !strings.Contains(s, " ")
}

var urlPattern = regexp.MustCompile(`(?i)\b(?:https?|ftp|wss?)://[^\s'"<>|;)\]}` + "`" + `]+`)

func trimURL(u string) string { return strings.TrimRight(u, ".,:!?") }

// hostOf returns a URL's host, lowercased, without port or trailing dot.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(p.Hostname()), ".")
}

// scpHost returns the host of user@host:path or user@host.
func scpHost(s string) string {
	at := strings.IndexByte(s, '@')
	if at < 0 || strings.Contains(s, "://") {
		return ""
	}
	rest := s[at+1:]
	if i := strings.IndexAny(rest, ":/"); i >= 0 {
		rest = rest[:i]
	}
	if !strings.Contains(rest, ".") {
		return ""
	}
	return strings.ToLower(rest)
}

// networkCommand reports whether c reaches the network with the URLs it
// names: downloaders and senders, package managers, git's remote
// commands, containers, browsers, remote shells and interpreters (a script
// given a URL may fetch it). A URL in any other command's arguments (a
// commit message, a grep pattern, an echo) is text.
func networkCommand(c Command) bool {
	switch {
	case fetchers[c.Binary] || senders[c.Binary] || rawSenders[c.Binary] || dnsTools[c.Binary] || interpreterLang(c.Binary) != "" || shells[c.Binary]:
		return true
	case len(packagesOf(c)) > 0 || installers[c.Binary].manager != "":
		return true
	}
	switch c.Binary {
	case "git":
		sub, _ := gitSub(c.Argv)
		switch sub {
		case "clone", "fetch", "pull", "push", "remote", "ls-remote", "submodule", "archive", "request-pull", "send-email":
			return true
		}
	case "docker", "podman", "nerdctl", "kubectl", "helm", "gh", "glab", "open", "xdg-open", "firefox", "chromium", "google-chrome",
		"w3m", "lynx", "links", "httpie", "xh", "ftp", "lftp", "svn", "hg", "aws", "gcloud", "az", "gsutil", "terraform", "ansible":
		return true
	}
	return false
}

// gitRemote reports whether a git argument is a remote in scp form
// (user@host:path), not an author, an email or a reflog entry.
func gitRemote(arg string) bool {
	at := strings.IndexByte(arg, '@')
	colon := strings.IndexByte(arg, ':')
	return at > 0 && colon > at+1 && !strings.ContainsAny(arg, " <>{}")
}

// privileged wrappers run their command as another user.
var privileged = map[string]bool{"sudo": true, "doas": true, "su": true, "pkexec": true}

var fetchers = map[string]bool{"curl": true, "wget": true, "fetch": true, "http": true, "aria2c": true, "nc": true, "ncat": true}

var interpreters = map[string]bool{"python": true, "python3": true, "perl": true, "ruby": true, "node": true, "php": true, "source": true, ".": true}

// WrittenArgs are the arguments of c that name files it writes: every one
// for most writers, the destination for cp (its sources are read).
func WrittenArgs(c Command) []string {
	switch c.Binary {
	case "dd":
		for _, a := range c.Argv[1:] {
			if v, ok := strings.CutPrefix(a, "of="); ok {
				return []string{v}
			}
		}
		return nil
	case "ssh-keygen":
		// ssh-keygen -t … -f FILE makes a new key pair at FILE (reading an
		// existing key is -y, -l, -e, -p).
		if !slices.ContainsFunc(c.Argv, func(a string) bool { return a == "-y" || a == "-l" || a == "-e" || a == "-p" || a == "-c" || a == "-D" }) {
			for i, a := range c.Argv {
				if a == "-f" && i+1 < len(c.Argv) {
					return []string{c.Argv[i+1], c.Argv[i+1] + ".pub"}
				}
			}
		}
		return nil
	case "install", "rsync", "ditto", "scp":
		// The destination: the last operand (a remote one is no local write).
		if ops := operands(c.Argv); len(ops) >= 2 && remoteHost(ops[len(ops)-1]) == "" {
			return ops[len(ops)-1:]
		}
		return nil
	case "curl", "wget":
		if t := downloadTarget(c); t != "" && !StreamDevice(t) {
			return []string{t}
		}
		return nil
	}
	if !writers[c.Binary] && !(len(c.Argv) > 1 && c.Argv[1] == "cp" && (c.Binary == "docker" || c.Binary == "podman" || c.Binary == "kubectl")) {
		return nil
	}
	if c.Binary == "cp" || (c.Binary == "docker" || c.Binary == "podman" || c.Binary == "kubectl") && len(c.Argv) > 1 && c.Argv[1] == "cp" {
		ops := operands(c.Argv)
		if len(ops) < 2 {
			return ops
		}
		return ops[len(ops)-1:]
	}
	return c.Argv[1:]
}

var writers = map[string]bool{"rm": true, "mv": true, "cp": true, "tee": true, "touch": true, "mkdir": true, "rmdir": true, "chmod": true, "chown": true, "truncate": true, "ln": true, "shred": true}

var dbClients = map[string]bool{"psql": true, "mysql": true, "sqlite3": true, "mongo": true, "mongosh": true, "clickhouse-client": true, "cqlsh": true}

var sqlPattern = regexp.MustCompile(`(?i)^\s*(select|insert|update|delete|drop|create|alter|truncate|grant|revoke|merge|with)\b`)

func looksSQL(s string) bool { return sqlPattern.MatchString(s) }

var b64Pattern = regexp.MustCompile(`[A-Za-z0-9+/]{16,}={0,2}`)

// decodeB64 returns the printable texts that base64 runs in s decode to.
func decodeB64(s string) []string {
	var out []string
	for _, m := range b64Pattern.FindAllString(s, 8) {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
			b, err := enc.DecodeString(m)
			if err != nil || len(b) < 8 || !utf8.Valid(b) || !printable(string(b)) {
				continue
			}
			out = append(out, string(b))
			break
		}
	}
	return out
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// InputArtifacts are the artifacts an adapter reports with a tool call
// (AARTS §6.4): each command, file path and URL of the tool input,
// verbatim, with the field it came from ("tool_input.command",
// "tool_input.edits[0].path"), in field order. Reading them is the
// engine's work (AnalyzeTool); these only name them.
func InputArtifacts(input any) []aarts.Artifact {
	return ToolArtifacts("", input)
}

// ToolArtifacts is InputArtifacts for a call of the tool named native: a
// patch (apply_patch) names the files it writes, not a command.
func ToolArtifacts(native string, input any) []aarts.Artifact {
	if patch, ok := patchOf(native, input); ok {
		out := []aarts.Artifact{}
		for _, f := range patch.Files {
			for _, p := range []string{f.Path, f.MoveTo} {
				if p != "" {
					out = append(out, aarts.Artifact{Type: aarts.ArtifactFilePath, Value: p, SourceField: "tool_input.command"})
				}
			}
		}
		return out
	}
	out := []aarts.Artifact{}
	walkFields(input, "", "tool_input", func(field, at, x string) {
		f := strings.ToLower(field)
		switch {
		case x == "":
		case f == "command" || f == "cmd" || f == "script" || f == "commands":
			out = append(out, aarts.Artifact{Type: aarts.ArtifactCommand, Value: x, SourceField: at})
		case isPathField(f):
			out = append(out, aarts.Artifact{Type: aarts.ArtifactFilePath, Value: x, SourceField: at})
		case f == "url" || f == "uri" || strings.HasPrefix(x, "http://") || strings.HasPrefix(x, "https://"):
			out = append(out, aarts.Artifact{Type: aarts.ArtifactURL, Value: x, SourceField: at})
		}
	})
	return out
}

// canonicalFor is aarts.Canonical refined by the tool's input: a shell command
// that installs packages is package_install.
func canonicalFor(native string, a *Analysis) string {
	t := aarts.Canonical(native)
	if (t == aarts.ToolShell || t == aarts.ToolCodeExec) && a != nil && len(a.Packages) > 0 {
		return aarts.ToolPackageInstall
	}
	return t
}

// StreamDevice reports whether p is a device that discards or passes on
// what is written to it (/dev/null, the standard streams, the terminal, a
// file descriptor, bash's /dev/tcp and /dev/udp, which are network
// connections: see sends): writing there changes no file.
func StreamDevice(p string) bool {
	if strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/") {
		return true
	}
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero":
		return true
	}
	for _, dir := range []string{"/dev/fd/", "/proc/self/fd/"} {
		if n, ok := strings.CutPrefix(p, dir); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// mcpWrites reports whether an MCP tool's name says it writes, moves or
// deletes what its arguments name (filesystem servers' write_file,
// move_file, delete_file, create_directory, edit_file, ...).
func mcpWrites(native string) bool {
	_, tool, _ := strings.Cut(strings.TrimPrefix(native, "mcp__"), "__")
	tool = strings.ToLower(tool)
	for _, v := range []string{"write", "move", "rename", "delete", "remove", "create", "edit", "copy", "upload", "save", "append", "mkdir", "patch"} {
		if strings.HasPrefix(tool, v) || strings.Contains(tool, "_"+v) {
			return true
		}
	}
	return false
}
