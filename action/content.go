package action

import (
	"cmp"
	"encoding/json"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Content written to files that other programs execute is code: a
// makefile's recipes, a package manifest's scripts, a CI workflow's run
// steps, direnv's .envrc, a shell start-up file, a git hook, a script on
// PATH, git configuration that names programs, an editor's tasks. The
// commands it carries are read at the write, whichever tool writes it
// (file tools, or echo, printf and here-documents redirected by a shell),
// and judged like any other command of the call. Content written to files
// hosts load as instructions is kept as a memory write for the policy's
// memory-poisoning rules.

// contentFields are the tool input members that carry what a write puts
// into its file.
var contentFields = map[string]bool{"content": true, "new_string": true, "new_str": true, "file_text": true, "new_source": true,
	"contents": true, "text": true, "fact": true, "code_edit": true, "insert_text": true, "patch": true,
	// opencode's and Kilo's edit and patch tools.
	"newstring": true, "patchtext": true,
	// Cline's editor.
	"new_text": true}

// maxContent bounds how much written text is read.
const maxContent = 256 << 10

// readWrites reads what a call writes into code and instruction files:
// texts are the written contents of a file tool, for its write paths.
func (a *Analysis) readWrites(texts []string, cwd string) {
	for _, p := range a.WritePaths {
		for _, t := range texts {
			a.readWritten(p, t, cwd)
		}
	}
	for _, c := range a.Commands {
		for _, r := range c.Redirects {
			if text := writtenBy(c); text != "" {
				a.readWritten(resolve(r, cmp.Or(c.Dir, cwd)), text, cwd)
			}
		}
	}
}

// writtenBy is the text a command writes to its redirections: its
// here-document, or what echo or printf print.
func writtenBy(c Command) string {
	switch {
	case c.Heredoc != "" && (c.Binary == "cat" || c.Binary == "tee"):
		return c.Heredoc
	case c.Binary == "echo":
		return printed(c.Argv)
	case c.Binary == "printf":
		return unescapePrintf(printed(c.Argv))
	}
	return ""
}

// readWritten reads text written to p.
func (a *Analysis) readWritten(p, text, cwd string) {
	if len(text) > maxContent {
		text = text[:maxContent]
	}
	if InstructionFile(p) != "" && len(a.MemoryWrites) < 16 {
		a.MemoryWrites = append(a.MemoryWrites, text)
	}
	// Source code the session writes runs later (go test, make, an
	// import): what it plainly runs or deletes is judged at the write.
	if lang := sourceLang(p, text); lang != "" || strings.HasSuffix(p, ".sh") || strings.HasPrefix(text, "#!") {
		// Code the session writes runs later: a remote shell, or a
		// credential sent out, is judged at the write.
		a.codeShapes(text, "code written to "+p)
	}
	if lang := sourceLang(p, text); lang != "" {
		paths, writes := len(a.Paths), len(a.WritePaths)
		a.readCode(text, lang, []string{"writes " + p}, cwd, func(class, subject, detail string, confidence float64) {
			if class != FindOpaqueCode { // source is full of escapes and reflection: only what it plainly does counts
				a.addFinding(class, subject, detail, confidence)
			}
		})
		// The files the code names are its own business when it runs,
		// not this call's reads and writes.
		a.Paths, a.WritePaths = a.Paths[:paths], a.WritePaths[:writes]
	}
	// Git configuration is read by its content, wherever it is (a bare
	// repository's config is just "config").
	if gitConfigText.MatchString(text) {
		cmds := gitConfigRuns(text)
		for _, cmd := range cmds {
			if len(a.Commands) < 256 {
				a.addShell(cmd, cwd, 1)
			}
		}
		if len(cmds) > 0 {
			a.Caveats = append(a.Caveats, "writes git configuration that runs "+cmds[0])
		}
	}
	if strings.Contains(p, "/hooks/") {
		a.Caveats = append(a.Caveats, "writes "+p+", a hook a program may run")
	}
	if codeFile(p) == "" && !strings.HasSuffix(p, ".sh") && !strings.HasPrefix(text, "#!") {
		return
	}
	for _, cmd := range commandsIn(p, text) {
		if len(a.Commands) >= 256 {
			return
		}
		a.addShell(cmd, cwd, 1)
	}
}

// gitConfigText matches text that sets a git configuration key naming a
// program (with or without its section header, as an edit writes it).
var gitConfigText = regexp.MustCompile(`(?im)^\s*(?:fsmonitor|sshcommand|gitproxy|askpass|pager|editor|textconv|cmd|command|driver|clean|smudge|process|helper|program|uploadpack|receivepack|alternaterefscommand|packobjectshook|sendmailcmd|hookspath)\s*=`)

// sourceLang is the language of source code written to p whose calls are
// read (Python, JavaScript and TypeScript, Ruby, Perl, PHP, Go, shell by
// its #! line), or "".
func sourceLang(p, text string) string {
	switch ext := strings.ToLower(path.Ext(p)); {
	case ext == ".py":
		return "python"
	case ext == ".js" || ext == ".mjs" || ext == ".cjs" || ext == ".ts" || ext == ".mts" || ext == ".tsx" || ext == ".jsx":
		return "node"
	case ext == ".rb":
		return "ruby"
	case ext == ".pl" || ext == ".pm":
		return "perl"
	case ext == ".php":
		return "php"
	case ext == ".go":
		return "go"
	case strings.HasPrefix(text, "#!") && strings.Contains(firstLine(text), "python"):
		return "python"
	}
	return ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func (a *Analysis) addFinding(class, subject, detail string, confidence float64) {
	if f := (Finding{Class: class, Subject: subject, Detail: detail, Confidence: confidence}); !slices.Contains(a.Findings, f) {
		a.Findings = append(a.Findings, f)
	}
}

// commandsIn returns the command lines text carries when it is written to
// p, by the kind of file p is.
func commandsIn(p, text string) []string {
	base := path.Base(p)
	switch {
	case base == "Makefile" || base == "makefile" || base == "GNUmakefile" || strings.HasSuffix(base, ".mk"):
		return makeLines(text)
	case base == "package.json" || base == "composer.json":
		return scriptValues(text)
	case strings.Contains(p, "/.github/workflows/") || strings.HasSuffix(p, ".gitlab-ci.yml") || strings.Contains(p, "/.circleci/") ||
		base == ".pre-commit-config.yaml" || strings.HasSuffix(base, ".yml") || strings.HasSuffix(base, ".yaml"):
		return yamlRuns(text)
	case strings.Contains(p, "/.vscode/") || strings.Contains(p, "/.devcontainer/"):
		return jsonCommands(text)
	case strings.Contains(p, "/.git/") && base == "config" || base == ".gitconfig" || strings.HasSuffix(p, "/git/config") || base == ".gitmodules":
		return gitConfigRuns(text)
	case base == ".npmrc" || base == ".yarnrc" || base == ".yarnrc.yml":
		return rcRuns(text)
	}
	// .envrc, start-up files, hooks, scripts on PATH, *.sh: shell.
	return []string{text}
}

// makeLines are a makefile's recipe lines, as shell.
func makeLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "\t"):
			l = strings.TrimLeft(l, "\t @+-")
		case strings.Contains(l, ":") && strings.Contains(l, ";") && !strings.HasPrefix(strings.TrimSpace(l), "#"):
			_, l, _ = strings.Cut(l, ";")
		default:
			continue
		}
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, strings.ReplaceAll(l, "$$", "$"))
		}
	}
	return out
}

// scriptKey is a package.json member that holds a script: the lifecycle
// scripts and the common ones (a fragment of the file, as an edit writes
// it, is read by its keys).
var scriptPair = regexp.MustCompile(`"((?:pre|post)?(?:install|uninstall|prepare|publish|publishOnly|pack|test|build|start|dev|lint|serve|ci|version|restart|stop|shrinkwrap|deploy|release|setup|format|check|typecheck|watch))"\s*:\s*"((?:[^"\\]|\\.)*)"`)

// scriptValues are the scripts of a package manifest: every member of
// "scripts" when the text is a whole JSON object, else the members named
// like scripts.
func scriptValues(text string) []string {
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal([]byte(text), &pkg) == nil && len(pkg.Scripts) > 0 {
		out := make([]string, 0, len(pkg.Scripts))
		for _, k := range slices.Sorted(maps.Keys(pkg.Scripts)) {
			out = append(out, pkg.Scripts[k])
		}
		return out
	}
	var out []string
	for _, m := range scriptPair.FindAllStringSubmatch(text, -1) {
		var v string
		if json.Unmarshal([]byte(`"`+m[2]+`"`), &v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// yamlRuns are the commands of a CI definition: run: steps (one line, or
// a | or > block), script:/before_script:/after_script: lists, entry:
// of pre-commit hooks, command: members.
func yamlRuns(text string) []string {
	var out []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimLeft(strings.TrimPrefix(strings.TrimSpace(l), "- "), " ")
		key, value, ok := strings.Cut(t, ":")
		if !ok {
			continue
		}
		switch key {
		case "run", "script", "before_script", "after_script", "entry", "command", "cmd", "shell":
		default:
			continue
		}
		value = strings.TrimSpace(value)
		indent := len(l) - len(strings.TrimLeft(l, " "))
		switch {
		case value == "|" || value == ">" || strings.HasPrefix(value, "|") || strings.HasPrefix(value, ">") || value == "":
			var block []string
			for i+1 < len(lines) {
				next := lines[i+1]
				if strings.TrimSpace(next) != "" && len(next)-len(strings.TrimLeft(next, " ")) <= indent {
					break
				}
				i++
				item := strings.TrimSpace(next)
				if value == "" {
					item = strings.TrimPrefix(item, "- ")
				}
				block = append(block, item)
			}
			if len(block) > 0 {
				out = append(out, strings.Join(block, "\n"))
			}
		default:
			out = append(out, strings.Trim(value, `'"`))
		}
	}
	return out
}

// jsonCommands are the "command" members (with their "args") of an
// editor's task or dev container file, and its lifecycle commands.
var jsonCommand = regexp.MustCompile(`"(command|postCreateCommand|postStartCommand|postAttachCommand|onCreateCommand|initializeCommand|updateContentCommand)"\s*:\s*"((?:[^"\\]|\\.)*)"`)

func jsonCommands(text string) []string {
	var out []string
	for _, m := range jsonCommand.FindAllStringSubmatch(text, -1) {
		var v string
		if json.Unmarshal([]byte(`"`+m[2]+`"`), &v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// gitConfigRuns are the commands git configuration text makes git run
// (section.key = value lines whose key names a program).
func gitConfigRuns(text string) []string {
	var out []string
	section := ""
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "["):
			s := strings.Trim(l, "[]")
			name, sub, ok := strings.Cut(s, " ")
			if ok {
				s = name + "." + strings.Trim(sub, `"`)
			}
			section = s
		case strings.Contains(l, "="):
			k, v, _ := strings.Cut(l, "=")
			sec := section
			if sec == "" {
				sec = "core" // an edit's fragment: the key as core's
			}
			key := sec + "." + strings.TrimSpace(k)
			if strings.Count(key, ".") == 1 && sec != "core" && sec != "alias" {
				key = sec + ".x." + strings.TrimSpace(k) // [filter "x"] written as [filter]
			}
			if cmd := gitRuns(key, strings.Trim(strings.TrimSpace(v), `"`)); cmd != "" {
				out = append(out, cmd)
			}
		}
	}
	return out
}

// rcRuns are the programs a package manager's rc file names
// (script-shell, node-options with --require, ...): their values.
func rcRuns(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			k, v, ok = strings.Cut(l, ":")
		}
		if ok && (strings.Contains(k, "script-shell") || strings.Contains(k, "shell") || strings.Contains(k, "node-options") || strings.Contains(k, "git")) {
			out = append(out, strings.Trim(strings.TrimSpace(v), `'"`))
		}
	}
	return out
}

// printed is the text echo or printf prints from argv: its arguments
// after echo's own flags (-n, -e, -E, alone or together), which stop at
// the first other word: echo rm -rf ~ prints "rm -rf ~".
func printed(argv []string) string {
	if base(argv[0]) == "printf" {
		return printfText(argv[1:])
	}
	i := 1
	for i < len(argv) && len(argv[i]) > 1 && argv[i][0] == '-' && strings.Trim(argv[i][1:], "neE") == "" && argv[0] != "printf" {
		i++
	}
	if argv[0] == "printf" && i < len(argv) && argv[i] == "--" {
		i++
	}
	return strings.Join(argv[i:], " ")
}

// printfText is what printf prints of its arguments when its format only
// places them (%s, %b, and text around them), the format reused for the
// arguments left as printf does; any other format is printed as written,
// followed by its arguments.
func printfText(args []string) string {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return ""
	}
	format, rest := unescapePrintf(args[0]), args[1:]
	n := strings.Count(format, "%s") + strings.Count(format, "%b")
	if directives := strings.Count(format, "%") - strings.Count(format, "%%")*2; directives == 0 {
		return strings.ReplaceAll(format, "%%", "%") // no conversions: the format alone is printed
	} else if n == 0 || directives != n {
		return strings.Join(args, " ")
	}
	var b strings.Builder
	for first := true; first || len(rest) > 0; first = false {
		f := format
		for strings.Contains(f, "%s") || strings.Contains(f, "%b") {
			i := strings.Index(f, "%s")
			if j := strings.Index(f, "%b"); i < 0 || j >= 0 && j < i {
				i = j
			}
			b.WriteString(f[:i])
			if len(rest) > 0 {
				b.WriteString(rest[0])
				rest = rest[1:]
			}
			f = f[i+2:]
		}
		b.WriteString(f)
	}
	return strings.ReplaceAll(b.String(), "%%", "%")
}
