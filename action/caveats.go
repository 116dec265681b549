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
	for _, line := range lines {
		for _, name := range programAssignments(line) {
			add("sets " + name + ", which decides what programs run")
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
		for _, e := range c.Env {
			if name, _, _ := strings.Cut(e, "="); !inertVars[name] {
				add(c.Binary + " runs with " + name + " set")
			}
		}
		if !harmlessBuiltin[c.Binary] {
			for _, arg := range c.Argv[1:] {
				if strings.ContainsAny(arg, "$`") && runtimeWord.MatchString(arg) {
					add(c.Binary + " is given an argument built at run time (" + arg + ")")
					break
				}
			}
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
			why := c.Binary + " runs " + p + ", whose code is not read"
			add(why)
			if a.inWorkspace(resolve(p, dir)) {
				a.routine(why) // the project's own script or build wrapper
			}
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
			a.gitCaveats(c, dir, add, a.addFinding)
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
		if installsInto := packageTarget(c); installsInto != "" {
			// pip install --target DIR, npm --prefix DIR: the packages'
			// files land in DIR.
			a.Paths = append(a.Paths, resolve(installsInto, dir)+"/*")
			a.WritePaths = append(a.WritePaths, resolve(installsInto, dir)+"/*")
		}
	}
	for _, p := range a.WritePaths {
		if why := codeFile(p); why != "" {
			add("writes " + p + " (" + why + ")")
			if routineBuildFiles[why] && a.inWorkspace(p) {
				a.routine("writes " + p + " (" + why + ")") // a build file of the project
			}
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
	p = strings.ToLower(p) // CLAUDE.md is claude.md on a case-insensitive file system
	base := path.Base(p)
	switch {
	case base == "claude.md" || base == "claude.local.md" || strings.Contains(p, "/.claude/rules/") || strings.Contains(p, "/.claude/commands/") ||
		strings.Contains(p, "/.claude/agents/") || strings.Contains(p, "/.claude/skills/") || strings.Contains(p, "/.claude/projects/") && strings.Contains(p, "/memory/"):
		return "instructions Claude Code loads"
	case base == "agents.md" || base == "agents.override.md":
		return "instructions Codex and other agents load"
	case base == "gemini.md" || strings.Contains(p, "/.gemini/") && strings.HasSuffix(base, ".md"):
		return "instructions Gemini CLI loads"
	case base == ".cursorrules" || strings.Contains(p, "/.cursor/rules/"):
		return "rules Cursor loads"
	case base == "copilot-instructions.md" || strings.Contains(p, "/.github/instructions/") || strings.Contains(p, "/.github/prompts/") ||
		strings.Contains(p, "/.github/chatmodes/") || strings.Contains(p, "/.copilot/instructions/"):
		return "instructions GitHub Copilot loads"
	case base == ".windsurfrules" || strings.Contains(p, "/.windsurf/rules/") || base == ".clinerules" || strings.Contains(p, "/.clinerules/"):
		return "rules an agent host loads"
	}
	return ""
}

// programVarNames are variables that decide which program runs, what it
// loads or which configuration it reads; programVarPrefixes name families
// of them.
var programVarNames = map[string]bool{"PATH": true, "BASH_ENV": true, "ENV": true, "PROMPT_COMMAND": true, "HOME": true, "SSH_ASKPASS": true,
	"EDITOR": true, "VISUAL": true, "PAGER": true, "LESSOPEN": true, "NODE_OPTIONS": true, "RUBYOPT": true, "RUBYLIB": true,
	"MAKEFLAGS": true, "GNUMAKEFLAGS": true, "MAKEFILES": true, "GOFLAGS": true, "GOROOT": true, "GOENV": true, "GOBIN": true,
	"GOTOOLCHAIN": true, "GOPROXY": true, "GOCACHEPROG": true, "GOAUTH": true, "PKG_CONFIG": true, "CC": true, "CXX": true}

var programVarPrefixes = []string{"LD_", "DYLD_", "GIT_", "XDG_", "PYTHON", "PERL5", "CGO_"}

// programAssignments are the program-deciding variables a command line
// assigns (PATH=..., export LD_PRELOAD=..., env GIT_SSH_COMMAND=...,
// 'GOFLAGS=...' as an argument), in order.
func programAssignments(line string) []string {
	var out []string
	for i := strings.IndexByte(line, '='); i > 0; {
		j := i
		if line[j-1] == '+' {
			j-- // NAME+=
		}
		k := j
		for k > 0 && (line[k-1] == '_' || line[k-1] >= 'A' && line[k-1] <= 'Z' || line[k-1] >= 'a' && line[k-1] <= 'z' || line[k-1] >= '0' && line[k-1] <= '9') {
			k--
		}
		if name := line[k:j]; name != "" && (k == 0 || strings.IndexByte(" \t\n;&|('\"", line[k-1]) >= 0) &&
			(programVarNames[name] || slices.ContainsFunc(programVarPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })) {
			out = append(out, name)
		}
		next := strings.IndexByte(line[i+1:], '=')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return out
}

// inertVars are environment variables a command may run with and still be
// explicitly allowed: they change what it does, not which programs run or
// which configuration they read.
var inertVars = map[string]bool{"GOOS": true, "GOARCH": true, "GOARM": true, "GOAMD64": true, "GO386": true, "CGO_ENABLED": true,
	"GOMAXPROCS": true, "GOGC": true, "GOTRACEBACK": true, "NODE_ENV": true, "CI": true, "DEBUG": true, "LANG": true, "LC_ALL": true,
	"LC_CTYPE": true, "LC_MESSAGES": true, "TZ": true, "TERM": true, "NO_COLOR": true, "FORCE_COLOR": true, "COLUMNS": true,
	"RUST_LOG": true, "RUST_BACKTRACE": true, "PYTHONUNBUFFERED": true, "PYTHONDONTWRITEBYTECODE": true}

// harmlessBuiltin are builtins whose arguments are only printed or
// compared.
var harmlessBuiltin = map[string]bool{"echo": true, "printf": true, "test": true, "[": true, "[[": true, "true": true, "false": true, ":": true, "cd": true}

// runtimeWord matches an argument the shell completes at run time: a
// variable, a command substitution, a backquote.
var runtimeWord = regexp.MustCompile("\\$[A-Za-z_{(]|`")

// otherInterpreters run code given inline with one of their flags.
var otherInterpreters = map[string][]string{
	"lua": {"-e"}, "luajit": {"-e"}, "Rscript": {"-e"}, "R": {"-e"}, "julia": {"-e", "--eval"},
	"groovy": {"-e"}, "scala": {"-e"}, "erl": {"-eval"}, "elixir": {"-e"}, "racket": {"-e"}, "guile": {"-c"},
	"sbcl": {"--eval"}, "clojure": {"-e"}, "expect": {"-c"}, "vim": {"-c", "+"}, "nvim": {"-c"},
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
	text := unescapePrintf(printed(c.Argv))
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

// makeCaveats: make reading its rules from standard input or --eval runs
// what they say (read here where the text is on the line); make -f FILE
// and plain make run the makefile's recipes (in -C's directory); variable
// overrides that name programs or hold code change what every recipe runs.
// Options may be stuck to their value (-Cdir, -fFILE, -E'...') or long
// ones abbreviated (--ev=, --dir=), as make allows.
func (a *Analysis) makeCaveats(c Command, dir string, add func(string)) {
	stdin, named := false, ""
	for i := 1; i < len(c.Argv); i++ {
		arg := c.Argv[i]
		opt, value, ok := makeOption(c.Argv, &i)
		switch {
		case !ok && strings.Contains(arg, "=") && !strings.HasPrefix(arg, "-"):
			k, v, _ := strings.Cut(arg, "=")
			k = strings.TrimRight(k, ":+?! ")
			if makeProgramVars[k] || strings.ContainsAny(v, "$`;|&") {
				add("make " + k + "= changes what make's recipes run")
			}
		case opt == "file":
			if value == "-" || strings.HasPrefix(value, "/dev/") || strings.HasPrefix(value, "<(") {
				stdin = true
			} else {
				named = value
			}
		case opt == "directory":
			dir = resolve(value, dir)
		case opt == "eval":
			add("make --eval runs rules given on the command line")
			a.makeRecipes(unescapePrintf(value), dir)
		case opt == "include-dir":
			add("make -I reads makefiles from " + value)
		case opt == "environment":
			add("make -e lets the environment override the makefile's variables")
		}
	}
	if a.Cwd != "" && !strings.HasPrefix(dir, a.Cwd) || named != "" && !strings.HasPrefix(resolve(named, dir), a.Cwd) {
		add("make runs a makefile outside the working directory")
	}
	if stdin || c.Heredoc != "" {
		add("make reads its rules from standard input")
		text := c.Heredoc
		if i := slices.IndexFunc(a.Commands, func(x Command) bool { return slices.Equal(x.Argv, c.Argv) && x.Stage == c.Stage }); text == "" && i > 0 && c.Piped {
			if p := a.Commands[i-1]; p.Stage == c.Stage-1 && (p.Binary == "printf" || p.Binary == "echo") {
				text = unescapePrintf(printed(p.Argv))
			}
		}
		a.makeRecipes(text, dir)
		return
	}
	if named != "" {
		a.Executes = append(a.Executes, resolve(named, dir))
		return
	}
	for _, f := range []string{"GNUmakefile", "makefile", "Makefile"} {
		a.Executes = append(a.Executes, resolve(f, dir))
	}
}

// makeProgramVars are make variables that name the programs recipes run.
var makeProgramVars = map[string]bool{"SHELL": true, ".SHELLFLAGS": true, "CC": true, "CXX": true, "CPP": true, "LD": true, "AR": true,
	"AS": true, "MAKE": true, "MAKEFLAGS": true, "GNUMAKEFLAGS": true, "MAKEFILES": true, "MAKESHELL": true, "FC": true, "GO": true,
	"PYTHON": true, "NPM": true, "DOCKER": true, "INSTALL": true, "RM": true}

// makeOptions are make's options that take a value, by short letter and
// long name.
var makeOptions = []struct {
	short      byte
	long, name string
}{
	{'f', "--file", "file"}, {'f', "--makefile", "file"}, {'C', "--directory", "directory"}, {'E', "--eval", "eval"},
	{'I', "--include-dir", "include-dir"}, {'o', "--old-file", ""}, {'W', "--what-if", ""}, {'j', "--jobs", ""}, {'l', "--load-average", ""},
}

// makeOption reads the option at argv[*i] when it takes a value: its
// name and the value (stuck, after =, or the next argument, which *i then
// skips). ok is false for anything else.
func makeOption(argv []string, i *int) (name, value string, ok bool) {
	arg := argv[*i]
	next := func() string {
		if *i+1 < len(argv) {
			*i++
			return argv[*i]
		}
		return ""
	}
	if strings.HasPrefix(arg, "--") {
		long, v, hasValue := strings.Cut(arg, "=")
		for _, o := range makeOptions {
			if len(long) >= 3 && strings.HasPrefix(o.long, long) {
				if !hasValue && o.short != 'j' && o.short != 'l' {
					v = next()
				}
				return o.name, v, true
			}
		}
		return "", "", false
	}
	if len(arg) < 2 || arg[0] != '-' {
		return "", "", false
	}
	// A cluster of flags (-sE '...', -sCdir): the first that takes a value
	// takes the rest of the cluster, or the next argument.
	for j := 1; j < len(arg); j++ {
		for _, o := range makeOptions {
			if arg[j] != o.short {
				continue
			}
			if o.short == 'j' || o.short == 'l' {
				return "", "", true // a number, if anything
			}
			if j+1 < len(arg) {
				return o.name, arg[j+1:], true
			}
			return o.name, next(), true
		}
		if arg[j] == 'e' {
			return "environment", "", true
		}
	}
	return "", "", false
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

// goCaveats: go run of a module at a version runs downloaded code, and of
// a directory or file the session may have written; go generate runs the
// commands source files name; -exec, -toolexec and -vettool (one dash or
// two) run another program; go tool runs a tool that may not be Go's own;
// go env -w changes every later go command; -o writes a file.
func (a *Analysis) goCaveats(c Command, dir string, add func(string)) {
	if len(c.Argv) < 2 {
		return
	}
	switch c.Argv[1] {
	case "run":
		runDir := dir
		for i := 2; i+1 < len(c.Argv); i++ {
			if c.Argv[i] == "-C" {
				runDir = resolve(c.Argv[i+1], dir)
			}
		}
		if ops := goOperands(c.Argv[2:]); len(ops) > 0 {
			switch op := ops[0]; {
			case strings.Contains(op, "@"):
				add("go run " + op + " runs downloaded code")
			case strings.HasSuffix(op, ".go") || strings.HasPrefix(op, ".") || strings.HasPrefix(op, "/"):
				a.Executes = append(a.Executes, resolve(op, runDir)) // known to run code the session wrote, if it did
			default:
				a.Executes = append(a.Executes, "**/*.go") // a package by its import path: any Go file the session wrote
			}
		}
	case "generate":
		add("go generate runs the commands its source files name")
	case "env":
		if slices.ContainsFunc(c.Argv[2:], func(a string) bool { return strings.HasPrefix(a, "-w") || strings.HasPrefix(a, "--w") }) {
			add("go env -w changes what every later go command does")
		}
	case "install":
		// go install writes $GOBIN (or ~/go/bin)/<package name>.
		for _, op := range goOperands(c.Argv[2:]) {
			name, _, _ := strings.Cut(path.Base(strings.TrimSuffix(op, "/...")), "@")
			if name != "" && name != "." && name != "..." {
				a.Paths = append(a.Paths, "~/go/bin/"+name)
				a.WritePaths = append(a.WritePaths, "~/go/bin/"+name)
			}
		}
	case "tool":
		if ops := operands(c.Argv[1:]); len(ops) > 0 && !goTools[ops[0]] {
			add("go tool " + ops[0] + " runs a tool that is not Go's own")
		}
	}
	for i := 2; i < len(c.Argv); i++ {
		flag, value, hasValue := strings.Cut(strings.TrimPrefix(c.Argv[i], "-"), "=")
		if !strings.HasPrefix(c.Argv[i], "-") {
			continue
		}
		switch strings.TrimPrefix(flag, "-") {
		case "exec", "toolexec", "vettool", "overlay":
			add("go " + c.Argv[1] + " -" + strings.TrimPrefix(flag, "-") + " runs another program")
		case "o", "outputdir":
			if !hasValue && i+1 < len(c.Argv) {
				value = c.Argv[i+1]
				i++
			}
			if value == "" {
				continue
			}
			out := resolve(value, dir)
			switch {
			case strings.TrimPrefix(flag, "-") == "outputdir":
				out += "/*" // the profiles, by whatever names they are given
			case strings.HasSuffix(value, "/"):
				// A directory: go names the file after the package.
				out += "/*"
				for _, op := range goOperands(c.Argv[i+1:]) {
					out = resolve(value, dir) + "/" + path.Base(op)
				}
			}
			a.Paths = append(a.Paths, out)
			a.WritePaths = append(a.WritePaths, out)
		}
	}
}

// goValueFlags are go build and test flags that take a value.
var goValueFlags = map[string]bool{"C": true, "o": true, "p": true, "tags": true, "ldflags": true, "gcflags": true, "asmflags": true,
	"mod": true, "modfile": true, "overlay": true, "pgo": true, "pkgdir": true, "toolexec": true, "exec": true, "covermode": true,
	"coverpkg": true, "buildmode": true, "compiler": true, "installsuffix": true, "gccgoflags": true, "run": true, "bench": true,
	"count": true, "timeout": true, "cpu": true, "parallel": true, "outputdir": true, "coverprofile": true, "cpuprofile": true,
	"memprofile": true, "blockprofile": true, "mutexprofile": true, "trace": true, "vettool": true, "skip": true, "fuzz": true,
	"fuzztime": true, "benchtime": true, "shuffle": true, "json": false, "v": false, "race": false, "x": false, "n": false}

// goOperands are a go command's operands (packages, files): its arguments
// less flags and their values.
func goOperands(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue && goValueFlags[name] {
			i++
		}
	}
	return out
}

// goTools are the tools of Go's own distribution.
var goTools = map[string]bool{"addr2line": true, "asm": true, "buildid": true, "cgo": true, "compile": true, "covdata": true, "cover": true,
	"dist": true, "distpack": true, "doc": true, "fix": true, "link": true, "nm": true, "objdump": true, "pack": true, "pprof": true,
	"preprofile": true, "test2json": true, "trace": true, "vet": true}

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

// packageTarget is the directory an installer is told to install into
// (pip --target/-t/--prefix/--root, npm/pnpm --prefix, gem --install-dir),
// or "".
func packageTarget(c Command) string {
	if len(c.Argv) < 2 || len(packagesOf(c)) == 0 && !scriptRunners(c) {
		return ""
	}
	for i := 1; i < len(c.Argv); i++ {
		flag, value, hasValue := strings.Cut(c.Argv[i], "=")
		switch flag {
		case "--target", "-t", "--prefix", "--root", "--install-dir", "-i", "--global-dir":
			if c.Binary == "npm" && flag == "-i" || (c.Binary == "pip" || c.Binary == "pip3") && flag == "-i" {
				continue // an index, or npm's install alias
			}
			if !hasValue && i+1 < len(c.Argv) {
				value = c.Argv[i+1]
			}
			return value
		}
	}
	return ""
}

// codeFile says why writing p changes what other programs run — a
// makefile, a package manifest's scripts, a CI workflow, direnv's .envrc,
// git's configuration and hooks, a shell start-up file, an editor's tasks,
// a directory on PATH — or "".
func codeFile(p string) string {
	orig := p
	p = strings.ToLower(p) // case-insensitive file systems (macOS) open MAKEFILE as Makefile
	base := path.Base(p)
	switch {
	case base == ".git" || strings.Contains(p, "/.git/") || strings.HasPrefix(p, ".git/"):
		return "git's own files (configuration, hooks, attributes), which name programs git runs"
	case base == ".mcp.json" || base == "mcp.json" && (strings.Contains(p, "/.cursor/") || strings.Contains(p, "/.vscode/") || strings.Contains(p, "/.gemini/")) ||
		base == ".claude.json":
		return "MCP servers a host starts"
	case strings.Contains(p, "/.github/actions/") || strings.Contains(p, "/.githooks/"):
		return "code CI or git runs"
	case base == "makefile" || base == "gnumakefile" || strings.HasSuffix(base, ".mk"):
		return "a makefile make runs"
	case base == "package.json" || base == "pyproject.toml" || base == "setup.py" || base == "setup.cfg" || base == "cargo.toml" ||
		base == "build.rs" || base == "composer.json" || base == "rakefile" || base == "gemfile" || base == "build.gradle" ||
		base == "build.gradle.kts" || base == "pom.xml" || base == "cmakelists.txt" || base == "meson.build" || base == "justfile" ||
		base == "taskfile.yml" || base == "taskfile.yaml" || base == "noxfile.py" || base == "tox.ini" ||
		base == "conftest.py" || base == ".pre-commit-config.yaml" || base == "lefthook.yml" || base == ".lefthook.yml" || base == "go.mod" ||
		base == "makefile.am" || base == "makefile.in" || base == "configure.ac" || base == "procfile" || strings.HasPrefix(base, "requirements") && strings.HasSuffix(base, ".txt") ||
		strings.HasSuffix(p, "/.cargo/config.toml") || strings.HasSuffix(p, "/.cargo/config"):
		return "a build or package file whose scripts run"
	case base == "dockerfile" || base == "containerfile" || strings.HasSuffix(base, ".dockerfile") || strings.HasPrefix(base, "dockerfile.") ||
		base == "compose.yml" || base == "compose.yaml" || strings.HasPrefix(base, "docker-compose") && (strings.HasSuffix(base, ".yml") || strings.HasSuffix(base, ".yaml")):
		return "a container build or compose file whose commands run"
	case strings.Contains(p, "/.github/workflows/") || strings.HasSuffix(p, "/.gitlab-ci.yml") || strings.Contains(p, "/.circleci/") ||
		base == "jenkinsfile" || base == "azure-pipelines.yml" || base == ".travis.yml" || strings.Contains(p, "/.buildkite/") ||
		base == "bitbucket-pipelines.yml" || base == "action.yml" || base == "action.yaml":
		return "a CI workflow"
	case base == ".envrc" || base == ".env.sh" || base == ".tool-versions" || base == ".npmrc" || base == ".yarnrc" || base == ".yarnrc.yml" || base == "pip.conf":
		return "configuration a tool loads and runs by itself"
	case strings.Contains(p, "/.git/") && (strings.Contains(p, "/.git/hooks/") || base == "config") || base == ".gitconfig" ||
		strings.HasSuffix(p, "/.config/git/config") || base == ".gitattributes" || base == ".gitmodules":
		return "git configuration, which can name programs git runs"
	case persistencePath(orig) != "":
		return persistencePath(orig)
	case strings.Contains(p, "/.vscode/") || strings.Contains(p, "/.idea/") || strings.Contains(p, "/.devcontainer/") || strings.Contains(p, "/.zed/"):
		return "editor configuration that can run tasks"
	case strings.Contains(p, "/.local/bin/") || strings.Contains(p, "/bin/") && (strings.HasPrefix(p, "~") || strings.HasPrefix(p, "/home/") ||
		strings.HasPrefix(p, "/Users/") || strings.HasPrefix(p, "/usr/local/") || strings.HasPrefix(p, "/root/")) || strings.Contains(p, "/node_modules/.bin/"):
		return "a directory on PATH"
	}
	return ""
}

// routineBuildFiles are the kinds of code files (codeFile's reasons) whose
// edit inside the workspace is the project's ordinary work: build and
// package manifests, makefiles, container builds. CI workflows, git's
// files, hooks and tool configuration that runs by itself are not.
var routineBuildFiles = map[string]bool{"a build or package file whose scripts run": true, "a makefile make runs": true,
	"a container build or compose file whose commands run": true}

// inWorkspace reports whether p (resolved) is inside the working directory
// the call was read against.
func (a *Analysis) inWorkspace(p string) bool {
	return a.Cwd != "" && a.Cwd != "/" && strings.HasPrefix(p, strings.TrimSuffix(a.Cwd, "/")+"/") && !strings.Contains(p, "/../")
}

// routine marks a caveat as the project's ordinary work: the project's own
// scripts and build wrappers run (./gradlew, ./mvnw, ./scripts/gen.sh),
// its build files edited. It stays a caveat — never explicitly allowed —
// but the engine does not ask about it where the host will not prompt.
func (a *Analysis) routine(why string) {
	if !slices.Contains(a.RoutineCaveats, why) {
		a.RoutineCaveats = append(a.RoutineCaveats, why)
	}
}
