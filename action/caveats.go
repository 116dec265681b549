package action

import (
	"cmp"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Caveats: what the reading of an action cannot vouch for. A finding says
// the action does harm; a caveat says the engine cannot see all of what it
// runs (a script file, code on a pipe, a program named by configuration or
// by a variable, a shell started with another PATH, packages' install
// scripts) or that it changes what other programs will run later. An action
// with a caveat is never explicitly allowed: the host's own prompt stays in
// place, and where the host will not prompt the engine asks.

// caveats derives the caveats of an analysed shell call from its commands
// and the raw command lines, and reads the commands that git options and
// configuration, make's standard input and printf escapes carry, so that
// what they run is judged too: it runs before findings, which then judge
// those commands with the rest.
func (a *Analysis) caveats(lines []string, cwd string) {
	add := func(why string) {
		if !slices.Contains(a.Caveats, why) {
			a.Caveats = append(a.Caveats, why)
		}
	}
	addFinding := func(class, subject, detail string, confidence float64) {
		f := Finding{Class: class, Subject: subject, Detail: detail, Confidence: confidence}
		if !slices.Contains(a.Findings, f) {
			a.Findings = append(a.Findings, f)
		}
	}
	for _, line := range lines {
		for _, m := range programVars.FindAllStringSubmatch(line, -1) {
			add("sets " + m[1] + ", which decides what programs run")
		}
	}
	for i := 0; i < len(a.Commands) && i < 256; i++ {
		c := a.Commands[i]
		dir := c.Dir
		if dir == "" {
			dir = cwd
		}
		if slices.ContainsFunc(c.Via, func(w string) bool { return privileged[w] }) {
			add(c.Binary + " runs as another user (" + strings.Join(c.Via, " ") + ")")
		}
		if strings.ContainsAny(c.Argv[0], "$`") {
			add("runs a program named at run time (" + c.Argv[0] + ")")
		}
		if c.Binary == "eval" && slices.ContainsFunc(c.Argv[1:], func(s string) bool { return strings.ContainsAny(s, "$`") }) {
			add("eval runs text built at run time")
		}
		if (shells[c.Binary] || interpreterLang(c.Binary) != "" && interpreterLang(c.Binary) != "awk") && c.Piped && !hasInline(c) && len(Executes(c)) == 0 {
			add(c.Binary + " reads the program it runs from a pipe")
			a.printfToShell(i, cwd)
		}
		for _, p := range Executes(c) {
			if c.Binary == "chmod" {
				continue
			}
			add(c.Binary + " runs " + p + ", whose code is not read")
		}
		if code, lang := inlineCode(c); code != "" && codeCalls(code, lang) {
			add(c.Binary + " runs inline " + lang + " code")
		}
		if flags, ok := otherInterpreters[c.Binary]; ok && slices.ContainsFunc(c.Argv[1:], func(s string) bool { return slices.Contains(flags, s) }) {
			add(c.Binary + " runs inline code")
		}
		for _, t := range c.Redirects {
			if why := cmp.Or(codeFile(resolve(t, dir)), InstructionFile(resolve(t, dir))); why != "" {
				add("writes " + t + " (" + why + ")")
			}
		}
		switch c.Binary {
		case "git":
			a.gitCaveats(c, dir, add, addFinding)
		case "make", "gmake":
			a.makeCaveats(c, dir, add)
		case "go":
			a.goCaveats(c, dir, add)
		case "docker", "podman", "nerdctl":
			containerCaveats(c, add)
		}
		if scriptRunners(c) {
			add(c.Binary + " runs the install scripts of the packages it installs")
		}
	}
	for _, p := range a.WritePaths {
		if why := codeFile(p); why != "" {
			add("writes " + p + " (" + why + ")")
		}
		if why := InstructionFile(p); why != "" {
			add("writes " + p + " (" + why + ")")
		}
	}
}

// InstructionFile says which hosts load p as instructions or memory for
// the agent (CLAUDE.md, AGENTS.md, GEMINI.md, Cursor and Copilot rules,
// the hosts' memory directories), or "". A write there is a memory write.
func InstructionFile(p string) string {
	base := path.Base(p)
	switch {
	case base == "CLAUDE.md" || base == "CLAUDE.local.md" || strings.Contains(p, "/.claude/rules/") || strings.Contains(p, "/.claude/commands/") ||
		strings.Contains(p, "/.claude/agents/") || strings.Contains(p, "/.claude/skills/") || strings.Contains(p, "/.claude/projects/") && strings.Contains(p, "/memory/"):
		return "instructions Claude Code loads"
	case base == "AGENTS.md" || base == "AGENTS.override.md":
		return "instructions Codex and other agents load"
	case base == "GEMINI.md" || strings.Contains(p, "/.gemini/") && strings.HasSuffix(base, ".md"):
		return "instructions Gemini CLI loads"
	case base == ".cursorrules" || strings.Contains(p, "/.cursor/rules/"):
		return "rules Cursor loads"
	case strings.HasSuffix(p, "/.github/copilot-instructions.md") || strings.Contains(p, "/.github/instructions/") || strings.Contains(p, "/.github/prompts/") ||
		strings.Contains(p, "/.github/chatmodes/"):
		return "instructions GitHub Copilot loads"
	case base == ".windsurfrules" || strings.Contains(p, "/.windsurf/rules/") || base == ".clinerules" || strings.Contains(p, "/.clinerules/"):
		return "rules an agent host loads"
	}
	return ""
}

// programVars are assignments of variables that decide which program runs,
// or what it loads: PATH=..., export LD_PRELOAD=..., env GIT_SSH_COMMAND=...
var programVars = regexp.MustCompile(`(?:^|[\s;&|(])(?:export\s+|env\s+(?:-\S+\s+)*)?(PATH|LD_PRELOAD|LD_LIBRARY_PATH|LD_AUDIT|DYLD_\w+|BASH_ENV|ENV|PROMPT_COMMAND|` +
	`GIT_SSH_COMMAND|GIT_SSH|GIT_EXEC_PATH|GIT_CONFIG\w*|GIT_PAGER|GIT_EDITOR|GIT_ASKPASS|GIT_PROXY_COMMAND|GIT_EXTERNAL_DIFF|GIT_TEMPLATE_DIR|` +
	`SSH_ASKPASS|EDITOR|VISUAL|PAGER|LESSOPEN|NODE_OPTIONS|PYTHONSTARTUP|PYTHONPATH|PERL5OPT|PERL5LIB|RUBYOPT|RUBYLIB|MAKEFLAGS|GOFLAGS)\+?=`)

// otherInterpreters run code given inline with one of their flags.
var otherInterpreters = map[string][]string{
	"lua": {"-e"}, "luajit": {"-e"}, "tclsh": {}, "Rscript": {"-e"}, "R": {"-e"}, "julia": {"-e", "--eval"},
	"groovy": {"-e"}, "scala": {"-e"}, "erl": {"-eval"}, "elixir": {"-e"}, "racket": {"-e"}, "guile": {"-c"},
	"sbcl": {"--eval"}, "clojure": {"-e"}, "jshell": {}, "expect": {"-c"}, "vim": {"-c", "+"}, "nvim": {"-c"},
	"emacs": {"--eval"}, "gdb": {"-ex"}, "sqlite3": {".shell", ".system"},
}

// hasInline reports whether c's program text is given inline (-c, -e).
func hasInline(c Command) bool {
	for _, a := range c.Argv[1:] {
		if a == "-c" || a == "-e" || a == "-E" || a == "-r" || a == "-p" || a == "--eval" || a == "--print" ||
			shells[c.Binary] && strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			return true
		}
	}
	return c.Heredoc != ""
}

// codeCalls reports whether inline code does more than compute and print:
// it calls something (for awk: runs, pipes or writes).
func codeCalls(code, lang string) bool {
	if lang == "awk" {
		return strings.Contains(code, "system") || strings.Contains(code, "|") || strings.Contains(code, ">") || strings.Contains(code, "getline")
	}
	return lang == "powershell" || lang == "osascript" || strings.ContainsAny(code, "(`\\")
}

// printfToShell reads the text an echo or printf pipes straight into a
// shell, with its escapes (\NNN octal, \xHH, \n, \t) applied, as the
// commands it is.
func (a *Analysis) printfToShell(i int, cwd string) {
	if i == 0 {
		return
	}
	c := a.Commands[i-1] // a pipeline's commands are read in order
	if c.Stage != a.Commands[i].Stage-1 || c.Binary != "printf" && c.Binary != "echo" {
		return
	}
	text := unescapePrintf(strings.Join(operands(c.Argv), " "))
	if text != "" && !slices.Contains(a.Decoded, text) && len(a.Decoded) < 16 {
		a.Decoded = append(a.Decoded, text)
		a.addShell(text, cwd, 1)
	}
}

// unescapePrintf applies the backslash escapes printf (and echo -e) apply.
func unescapePrintf(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; {
		case c == 'n':
			b.WriteByte('\n')
		case c == 't':
			b.WriteByte('\t')
		case c == 'x':
			v, n := 0, 0
			for n < 2 && i+1 < len(s) && hexDigit(s[i+1]) >= 0 {
				v = v*16 + hexDigit(s[i+1])
				i++
				n++
			}
			b.WriteByte(byte(v))
		case c >= '0' && c <= '7':
			v, n := int(c-'0'), 1
			if c == '0' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '7' {
				v, n = 0, 0 // \0NNN
			}
			for n < 3 && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '7' {
				v = v*8 + int(s[i+1]-'0')
				i++
				n++
			}
			b.WriteByte(byte(v))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// gitProgramKeys are git configuration keys whose value is a program or
// command line git runs (an alias runs one when it starts with !).
var gitProgramKeys = regexp.MustCompile(`(?i)^(?:core\.(?:fsmonitor|sshcommand|pager|editor|askpass|gitproxy)|` +
	`diff\.external|diff\.[^.]+\.(?:textconv|command)|merge\.[^.]+\.driver|filter\.[^.]+\.(?:clean|smudge|process)|credential(?:\.[^=]*)?\.helper|` +
	`gpg(?:\.[^.]+)?\.program|sequence\.editor|pager\.[^.]+|alias\.[^.]+|uploadpack\.packobjectshook|remote\.[^.]+\.(?:uploadpack|receivepack|proxy))$`)

// gitPathKeys are git configuration keys whose value decides what git
// loads or runs without being a command itself: hooks, includes,
// templates, attribute files (which name filters and drivers), URL
// rewrites.
var gitPathKeys = regexp.MustCompile(`(?i)^(?:core\.(?:hookspath|attributesfile)|include\.path|includeif\..*\.path|init\.templatedir|url\..*\.insteadof|protocol\.[^.]+\.allow|ssh\.variant)$`)

// gitRuns returns the command line a git configuration value makes git
// run, or "" when it names none.
func gitRuns(key, value string) string {
	if strings.HasPrefix(strings.ToLower(key), "alias.") {
		cmd, ok := strings.CutPrefix(value, "!")
		if !ok {
			return ""
		}
		return cmd
	}
	if gitProgramKeys.MatchString(key) {
		return value
	}
	return ""
}

// gitCaveats reads what a git command makes git run: -c KEY=VALUE and git
// config KEY VALUE for keys that name programs, --upload-pack and friends,
// and commands git runs for you (submodule foreach, bisect run, rebase
// --exec, filter-branch); and what it removes (git clean, git stash -u).
func (a *Analysis) gitCaveats(c Command, dir string, add func(string), addFinding func(string, string, string, float64)) {
	config := func(how, key, value string) {
		if cmd := gitRuns(key, value); cmd != "" {
			add("git runs " + cmd + " (" + how + " " + key + ")")
			if len(a.Commands) < 256 {
				a.addShell(cmd, dir, 1)
			}
		} else if gitPathKeys.MatchString(key) {
			add(how + " " + key + " changes what git loads and runs")
		}
	}
	runs := func(why, cmd string) {
		add("git runs " + cmd + " (" + why + ")")
		if cmd != "" && len(a.Commands) < 256 {
			a.addShell(cmd, dir, 1)
		}
	}
	for i := 1; i < len(c.Argv); i++ {
		arg := c.Argv[i]
		switch {
		case arg == "-c" && i+1 < len(c.Argv):
			if k, v, ok := strings.Cut(c.Argv[i+1], "="); ok {
				config("git -c", k, v)
			}
			i++
		case arg == "-C" && i+1 < len(c.Argv):
			dir = resolve(c.Argv[i+1], dir)
			i++
		case strings.HasPrefix(arg, "--upload-pack=") || strings.HasPrefix(arg, "--receive-pack=") || strings.HasPrefix(arg, "--exec="):
			k, v, _ := strings.Cut(arg, "=")
			runs(k, v)
		case (arg == "--upload-pack" || arg == "--receive-pack" || arg == "-u" || arg == "--exec" || arg == "-x") && i+1 < len(c.Argv):
			sub, _ := gitSub(c.Argv)
			if arg == "-u" && sub != "clone" && sub != "fetch" && sub != "ls-remote" || arg == "-x" && sub != "rebase" {
				continue
			}
			runs(arg, c.Argv[i+1])
			i++
		case strings.HasPrefix(arg, "--config=") || arg == "--config" && i+1 < len(c.Argv):
			kv := strings.TrimPrefix(arg, "--config=")
			if arg == "--config" {
				kv = c.Argv[i+1]
				i++
			}
			if k, v, ok := strings.Cut(kv, "="); ok {
				config("git --config", k, v)
			}
		}
	}
	sub, args := gitSub(c.Argv)
	ops := operands(append([]string{"git"}, args...))
	switch sub {
	case "config":
		if len(ops) >= 2 && !slices.Contains(args, "--get") && !slices.Contains(args, "--unset") && !slices.Contains(args, "--get-all") {
			value := strings.Join(ops[1:], " ")
			config("git config", ops[0], value)
			if cmd := gitRuns(ops[0], value); cmd != "" {
				addFinding(FindPersistence, ops[0], "git config "+ops[0]+" makes git run "+cmd+" later", 0.6)
			}
		}
	case "submodule":
		if len(ops) >= 2 && ops[0] == "foreach" {
			runs("submodule foreach", strings.Join(ops[1:], " "))
		}
	case "bisect":
		if len(ops) >= 2 && ops[0] == "run" {
			runs("bisect run", strings.Join(ops[1:], " "))
		}
	case "filter-branch", "filter-repo":
		add("git " + sub + " runs the filters it is given")
	case "hook":
		add("git hook runs the repository's hooks")
	case "clean":
		force := slices.ContainsFunc(args, func(s string) bool {
			return s == "--force" || strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.Contains(s, "f")
		})
		dry := slices.ContainsFunc(args, func(s string) bool {
			return s == "--dry-run" || s == "-n" || strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.Contains(s, "n")
		})
		if !force || dry {
			return
		}
		add("git clean deletes untracked files (the project's own hook configuration may be among them)")
		if what := dangerousTarget(dir, ""); what != "" && what != "the working directory" {
			addFinding(FindDestructive, "git clean", "git clean in "+dir+" deletes every untracked file of "+what, 1)
		}
	case "stash":
		if slices.ContainsFunc(args, func(s string) bool {
			return s == "-u" || s == "--include-untracked" || s == "-a" || s == "--all"
		}) {
			add("git stash takes untracked files away (the project's own hook configuration may be among them)")
		}
	}
}

// makeCaveats: make reading its rules from standard input or --eval runs
// what they say (read here where the text is on the line); make -f FILE
// and plain make run the makefile's recipes.
func (a *Analysis) makeCaveats(c Command, dir string, add func(string)) {
	stdin := false
	for i := 1; i < len(c.Argv); i++ {
		arg := c.Argv[i]
		switch {
		case (arg == "-f" || arg == "--file" || arg == "--makefile") && i+1 < len(c.Argv):
			f := c.Argv[i+1]
			if f == "-" || strings.HasPrefix(f, "/dev/") || strings.HasPrefix(f, "<(") {
				stdin = true
			} else {
				a.Executes = append(a.Executes, resolve(f, dir))
			}
			i++
		case strings.HasPrefix(arg, "--file=") || strings.HasPrefix(arg, "--makefile="):
			_, f, _ := strings.Cut(arg, "=")
			if f == "-" || strings.HasPrefix(f, "/dev/") {
				stdin = true
			}
		case strings.HasPrefix(arg, "--eval=") || arg == "-E" && i+1 < len(c.Argv) || arg == "--eval" && i+1 < len(c.Argv):
			text := strings.TrimPrefix(arg, "--eval=")
			if !strings.HasPrefix(arg, "--eval=") {
				text = c.Argv[i+1]
				i++
			}
			add("make --eval runs rules given on the command line")
			a.makeRecipes(unescapePrintf(text), dir)
		case strings.Contains(arg, "=") && !strings.HasPrefix(arg, "-"):
			if k, v, _ := strings.Cut(arg, "="); k == "SHELL" || k == ".SHELLFLAGS" || strings.Contains(v, "$(shell") {
				add("make " + k + "= changes what make runs")
			}
		}
	}
	if stdin || c.Heredoc != "" {
		add("make reads its rules from standard input")
		text := c.Heredoc
		if i := slices.IndexFunc(a.Commands, func(x Command) bool { return slices.Equal(x.Argv, c.Argv) && x.Stage == c.Stage }); text == "" && i > 0 && c.Piped {
			if p := a.Commands[i-1]; p.Stage == c.Stage-1 && (p.Binary == "printf" || p.Binary == "echo") {
				text = unescapePrintf(strings.Join(operands(p.Argv), " "))
			}
		}
		a.makeRecipes(text, dir)
		return
	}
	if !slices.ContainsFunc(c.Argv[1:], func(s string) bool {
		return s == "-f" || strings.HasPrefix(s, "--file") || strings.HasPrefix(s, "--makefile")
	}) {
		a.Executes = append(a.Executes, resolve("Makefile", dir))
	}
}

// makeRecipes reads the recipe lines of makefile text (tab-indented, or
// after a ';' on a rule line) as the shell commands they are.
func (a *Analysis) makeRecipes(text, dir string) {
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "\t"):
			l = strings.TrimLeft(l, "\t @+-")
		case strings.Contains(l, ":") && strings.Contains(l, ";"):
			_, l, _ = strings.Cut(l, ";")
		default:
			continue
		}
		if l = strings.TrimSpace(l); l != "" && len(a.Commands) < 256 {
			a.addShell(strings.ReplaceAll(l, "$$", "$"), dir, 1)
		}
	}
}

// goCaveats: go run of a module at a version runs downloaded code; go
// generate runs the commands source files name; -exec and -toolexec run
// another program; go env -w changes every later go command.
func (a *Analysis) goCaveats(c Command, dir string, add func(string)) {
	if len(c.Argv) < 2 {
		return
	}
	switch c.Argv[1] {
	case "run":
		for _, op := range operands(c.Argv[1:]) {
			switch {
			case strings.Contains(op, "@"):
				add("go run " + op + " runs downloaded code")
			case strings.HasSuffix(op, ".go"):
				a.Executes = append(a.Executes, resolve(op, dir)) // known to run code the session wrote, if it did
			}
		}
	case "generate":
		add("go generate runs the commands its source files name")
	case "env":
		if slices.Contains(c.Argv, "-w") {
			add("go env -w changes what every later go command does")
		}
	}
	for _, a := range c.Argv[2:] {
		if a == "-exec" || a == "-toolexec" || strings.HasPrefix(a, "-exec=") || strings.HasPrefix(a, "-toolexec=") {
			add("go " + c.Argv[1] + " " + a + " runs another program")
		}
	}
}

// containerCaveats: a container with the host's root, its Docker socket
// or full privileges can do anything the host can.
func containerCaveats(c Command, add func(string)) {
	if len(c.Argv) < 2 || c.Argv[1] != "run" && c.Argv[1] != "create" && c.Argv[1] != "exec" {
		return
	}
	for i, a := range c.Argv[2:] {
		v := a
		if (a == "-v" || a == "--volume" || a == "--mount") && i+3 < len(c.Argv) {
			v = c.Argv[i+3]
		}
		switch {
		case a == "--privileged" || strings.HasPrefix(a, "--pid=host") || strings.HasPrefix(a, "--net=host") || strings.HasPrefix(a, "--network=host") || strings.HasPrefix(a, "--cap-add"):
			add(c.Binary + " " + c.Argv[1] + " " + a + " gives the container the host's privileges")
		case strings.HasPrefix(v, "/:") || strings.Contains(v, "docker.sock") || strings.Contains(v, "source=/,") || homeRe.MatchString(strings.SplitN(v, ":", 2)[0]) && strings.Contains(v, ":"):
			add(c.Binary + " " + c.Argv[1] + " mounts " + strings.SplitN(v, ":", 2)[0] + " of the host")
		}
	}
}

// scriptRunners reports whether c installs packages whose own install
// scripts run (npm and friends without --ignore-scripts, pip, gem).
func scriptRunners(c Command) bool {
	if len(c.Argv) < 2 {
		return false
	}
	switch c.Binary {
	case "npm", "pnpm", "yarn", "bun":
		if slices.Contains(c.Argv, "--ignore-scripts") {
			return false
		}
		return slices.Contains([]string{"install", "i", "add", "ci", "isntall"}, c.Argv[1]) || c.Binary == "yarn" && len(operands(c.Argv)) == 0
	case "pip", "pip3", "pipx", "gem":
		return c.Argv[1] == "install"
	case "python", "python3":
		return len(c.Argv) > 3 && c.Argv[1] == "-m" && c.Argv[2] == "pip" && c.Argv[3] == "install"
	}
	return false
}

// codeFile says why writing p changes what other programs run — a
// makefile, a package manifest's scripts, a CI workflow, direnv's .envrc,
// git's configuration and hooks, a shell start-up file, an editor's tasks,
// a directory on PATH — or "".
func codeFile(p string) string {
	base := path.Base(p)
	switch {
	case base == "Makefile" || base == "makefile" || base == "GNUmakefile" || strings.HasSuffix(base, ".mk"):
		return "a makefile make runs"
	case base == "package.json" || base == "pyproject.toml" || base == "setup.py" || base == "setup.cfg" || base == "Cargo.toml" ||
		base == "build.rs" || base == "composer.json" || base == "Rakefile" || base == "Gemfile" || base == "build.gradle" ||
		base == "build.gradle.kts" || base == "pom.xml" || base == "CMakeLists.txt" || base == "meson.build" || base == "justfile" ||
		base == "Justfile" || base == "Taskfile.yml" || base == "Taskfile.yaml" || base == "noxfile.py" || base == "tox.ini" ||
		base == "conftest.py" || base == ".pre-commit-config.yaml" || base == "lefthook.yml" || base == ".lefthook.yml" || base == "go.mod":
		return "a build or package file whose scripts run"
	case strings.Contains(p, "/.github/workflows/") || strings.HasSuffix(p, "/.gitlab-ci.yml") || strings.Contains(p, "/.circleci/") ||
		base == "Jenkinsfile" || base == "azure-pipelines.yml" || base == ".travis.yml" || strings.Contains(p, "/.buildkite/"):
		return "a CI workflow"
	case base == ".envrc" || base == ".env.sh" || base == ".tool-versions" || base == ".npmrc" || base == ".yarnrc" || base == ".yarnrc.yml" || base == "pip.conf":
		return "configuration a tool loads and runs by itself"
	case strings.Contains(p, "/.git/") && (strings.Contains(p, "/.git/hooks/") || base == "config") || base == ".gitconfig" ||
		strings.HasSuffix(p, "/.config/git/config") || base == ".gitattributes" || base == ".gitmodules":
		return "git configuration, which can name programs git runs"
	case persistencePath(p) != "":
		return persistencePath(p)
	case strings.Contains(p, "/.vscode/") || strings.Contains(p, "/.idea/") || strings.Contains(p, "/.devcontainer/"):
		return "editor configuration that can run tasks"
	case strings.Contains(p, "/.local/bin/") || strings.Contains(p, "/bin/") && (strings.HasPrefix(p, "~") || strings.HasPrefix(p, "/home/") ||
		strings.HasPrefix(p, "/Users/") || strings.HasPrefix(p, "/usr/local/") || strings.HasPrefix(p, "/root/")) || strings.Contains(p, "/node_modules/.bin/"):
		return "a directory on PATH"
	}
	return ""
}
