package action

import (
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Finding is something the engine's reading of an action found that a
// policy should weigh: the class of attack it belongs to, what it concerns,
// and how sure the reading is (1: the action certainly does this; lower:
// the code could not be read with confidence).
type Finding struct {
	Class      string  `json:"class"`
	Subject    string  `json:"subject"`
	Detail     string  `json:"detail"`
	Confidence float64 `json:"confidence"`
}

// Finding classes.
const (
	// FindDestructive: a recursive delete (rm -r, find -delete, rmtree,
	// rsync --delete, ...) of the file system root, a home directory, the
	// workspace root, a .git directory or a system directory, in any
	// spelling.
	FindDestructive = "destructive_delete"
	// FindDownloadExec: running, sourcing or making executable a file the
	// same command line downloaded.
	FindDownloadExec = "download_exec"
	// FindExfiltration: environment dumps or secrets sent to a network
	// host (allowed domains included).
	FindExfiltration = "exfiltration"
	// FindSecretDiscovery: a search whose purpose is finding credentials.
	FindSecretDiscovery = "secret_discovery"
	// FindSecretRead: a read of a well-known credential store.
	FindSecretRead = "secret_read"
	// FindPersistence: a change that makes code run later on its own
	// (shell start-up files, authorized_keys, cron, systemd, launchd, git
	// hooks, editor auto-run tasks).
	FindPersistence = "persistence"
	// FindForcePush: a git push that overwrites remote history (--force,
	// -f, +refspec; --force-with-lease and --force-if-includes are not).
	FindForcePush = "force_push"
	// FindPackageSource: a package installed from outside its ecosystem's
	// registry (a URL, a git repository, another index).
	FindPackageSource = "package_source"
	// FindOpaqueCode: inline interpreter code the engine cannot read with
	// confidence (eval, exec, decoding, dynamic imports, a command built at
	// run time).
	FindOpaqueCode = "opaque_code"
)

// findings derives the findings of an analysed tool call from its
// commands and paths. It may add commands it uncovers (the commands inline
// interpreter code runs, what find -exec runs), so it runs before finish.
func (a *Analysis) findings(cwd string) {
	add := a.addFinding
	// Commands hidden one level down: interpreter code, find -exec and
	// -delete, tar's checkpoint actions, git aliases, decoded pipelines.
	for i := 0; i < len(a.Commands) && i < 256; i++ {
		c := a.Commands[i]
		a.uncover(c, cwd, add)
	}
	a.argumentCommands(cwd)
	a.usedContent(cwd)
	a.effects(cwd)
	a.libraryLoads()
	a.processMemory()
	downloaded := map[string]string{}
	for _, c := range a.Commands {
		cwd := cmp.Or(c.Dir, cwd)
		destructive(c, cwd, add)
		a.downloadExec(c, cwd, downloaded, add)
		exfiltration(c, a.Commands, add)
		secretDiscovery(c, add)
		persistenceCommand(c, add)
		forcePush(c, add)
		packageSource(c, add)
		a.opaque(c, cwd, add)
		discardsWork(c, add)
		takesConfig(c, add)
		teardown(c, add)
	}
	created := map[string]bool{}
	for _, c := range a.Commands {
		if c.Binary == "ssh-keygen" {
			for _, w := range WrittenArgs(c) {
				created[resolve(w, cmp.Or(c.Dir, cwd))] = true // a new key, not a read of one
			}
		}
	}
	for _, p := range a.Paths {
		if secretStore(p) && !created[p] {
			add(FindSecretRead, p, p+" holds credentials", 1)
		}
	}
	a.credentialDirs(cwd, add)
	for _, q := range a.SQL {
		if m := teardownSQL.FindString(q); m != "" && len(a.Commands) == 0 {
			add(FindTeardown, q, a.ToolNative+" runs "+m+", which destroys data", 0.6) // a database tool, an MCP query
		}
	}
	if a.MCPServer != "" && mcpDeletes(a.ToolNative) {
		for _, p := range a.Paths {
			if what := dangerousTarget(p, ""); what != "" {
				add(FindDestructive, p, a.ToolNative+" deletes "+p+" ("+what+")", 1)
			} else if what := valuableTarget(p, ""); what != "" {
				add(FindDestructive, p, a.ToolNative+" deletes "+p+" ("+what+")", 0.8)
			}
		}
	}
	for _, p := range a.WritePaths {
		if r := persistencePath(p); r != "" {
			add(FindPersistence, p, "writes "+p+" ("+r+")", persistenceConfidence(p, r))
		}
	}
	for _, p := range a.MayWrite {
		if slices.Contains(a.WritePaths, p) {
			continue
		}
		if r := persistencePath(p); r != "" {
			add(FindPersistence, p, "may write "+p+" ("+r+"): the program is not known only to read what it names", 0.6)
		} else if r := InstructionFile(p); r != "" {
			add(FindPersistence, p, "may write "+p+" ("+r+"): the program is not known only to read what it names", 0.6)
		}
	}
	for _, c := range a.Commands {
		for _, target := range c.Redirects {
			if why := persistencePath(target); why != "" {
				add(FindPersistence, target, "writes "+target+" ("+why+")", 1)
			} else if why := persistencePath(resolve(target, cwd)); why != "" {
				add(FindPersistence, resolve(target, cwd), "writes "+resolve(target, cwd)+" ("+why+")", 1)
			}
		}
	}
}

// uncover adds the commands that c runs indirectly.
func (a *Analysis) uncover(c Command, cwd string, add func(string, string, string, float64)) {
	via := append(clone(c.Via), c.Binary)
	switch {
	case c.Binary == "find":
		roots := findRoots(c.Argv)
		for i := 1; i < len(c.Argv); i++ {
			switch arg := c.Argv[i]; arg {
			case "-delete":
				if narrowed(c.Argv) {
					continue // deletes what matches, not the tree
				}
				for _, r := range roots {
					a.Commands = append(a.Commands, Command{Binary: "rm", Argv: []string{"rm", "-rf", r}, Via: append(clone(via), "-delete")})
				}
			case "-exec", "-execdir", "-ok", "-okdir":
				j := i + 1
				for j < len(c.Argv) && c.Argv[j] != ";" && c.Argv[j] != "+" {
					j++
				}
				sub := c.Argv[i+1 : j]
				if len(sub) == 0 {
					continue
				}
				for _, r := range roots {
					// With tests (-name, -type, ...) {} is what matches
					// under the root, not the root itself; with -name NAME
					// alone, it is a NAME under the root.
					each := r
					if name := findName(c.Argv); name != "" {
						each = strings.TrimSuffix(r, "/") + "/" + name
					} else if narrowed(c.Argv) {
						each = strings.TrimSuffix(r, "/") + "/{}"
					}
					argv := make([]string, len(sub))
					for k, s := range sub {
						argv[k] = strings.ReplaceAll(s, "{}", each)
					}
					a.addSub(argv, append(clone(via), arg), cwd)
				}
				i = j
			}
		}
	case c.Binary == "tar":
		for _, arg := range c.Argv[1:] {
			for _, p := range []string{"--checkpoint-action=exec=", "--to-command=", "--use-compress-program=", "--info-script=", "--new-volume-script="} {
				if cmd, ok := strings.CutPrefix(arg, p); ok {
					a.addShell(strings.Trim(cmd, `'"`), cwd, 1)
				}
			}
		}
	case c.Binary == "git":
		for i := 1; i+1 < len(c.Argv); i++ {
			if c.Argv[i] == "-c" {
				if _, v, ok := strings.Cut(c.Argv[i+1], "="); ok && strings.HasPrefix(v, "!") {
					a.addShell(v[1:], cwd, 1) // an alias that runs a shell command
				}
			}
		}
	}
	if code, lang := inlineCode(c); code != "" {
		a.readCode(code, lang, via, cwd, add)
	}
	// A program that is the output of a command substitution (sh -c
	// "$(...)", eval "$(...)", "$(...)" alone): decode what it prints.
	if inner, ok := strings.CutPrefix(c.Argv[0], "$("); ok && strings.HasSuffix(inner, ")") {
		p := ParseShell(strings.TrimSuffix(inner, ")"))
		if len(p) >= 2 && (p[0].Binary == "echo" || p[0].Binary == "printf") {
			if d := decodeThrough(printed(p[0].Argv), p[1:]); d != "" {
				a.Decoded = append(a.Decoded, d)
				a.addShell(d, cwd, 1)
			}
		}
	}
	// bash <(curl ...), source <(curl ...), sh -c "$(curl ...)", eval
	// "$(wget -O- ...)": downloaded code run by a shell.
	if shells[c.Binary] || interpreterLang(c.Binary) != "" || c.Binary == "source" || c.Binary == "." || c.Binary == "eval" {
		for _, arg := range c.Argv[1:] {
			if fetchedCode.MatchString(arg) {
				a.PipedToShell = true
			}
		}
	}
	// deno run https://…, bun https://…: an interpreter running code it
	// fetches.
	if interpreterLang(c.Binary) != "" || shells[c.Binary] {
		if code, _ := inlineCode(c); code == "" {
			ops := operands(c.Argv)
			if len(ops) > 1 && ops[0] == "run" {
				ops = ops[1:] // deno run URL
			}
			if len(ops) > 0 && (strings.HasPrefix(ops[0], "http://") || strings.HasPrefix(ops[0], "https://")) {
				add(FindDownloadExec, ops[0], c.Binary+" runs code it downloads from "+ops[0], 1)
			}
		}
	}
	// sed -i and perl -i edit the files they name; sed's w command writes
	// the file it names.
	if (c.Binary == "sed" || c.Binary == "perl") && InPlace(c) {
		ops := operands(c.Argv)
		if len(ops) > 1 {
			for _, f := range ops[1:] {
				a.WritePaths = append(a.WritePaths, resolve(f, cwd))
			}
		}
	}
	if c.Binary == "sed" {
		for _, f := range SedWrites(c) {
			a.Paths = append(a.Paths, resolve(f, cwd))
			a.WritePaths = append(a.WritePaths, resolve(f, cwd))
		}
	}
}

// InPlace reports whether a sed or perl command edits its files in place
// (-i, alone, with a suffix, or in a cluster such as -ni; --in-place).
func InPlace(c Command) bool {
	return slices.ContainsFunc(c.Argv[1:], func(x string) bool {
		return strings.HasPrefix(x, "--in-place") || strings.HasPrefix(x, "-") && !strings.HasPrefix(x, "--") && strings.Contains(strings.SplitN(x, "=", 2)[0], "i")
	})
}

// sedWrite matches sed's w and W commands, and the s command's w flag,
// with the file they write.
var sedWrite = regexp.MustCompile(`(?:^|[;{}\s/0-9$]|\d)[wW]\s+(\S+)`)

// SedWrites are the files a sed script writes with w, W or s///w.
func SedWrites(c Command) []string {
	var out []string
	for i, arg := range c.Argv[1:] {
		script := arg
		if strings.HasPrefix(arg, "-") {
			if (arg == "-e" || arg == "--expression") && i+2 < len(c.Argv) {
				script = c.Argv[i+2]
			} else {
				continue
			}
		}
		for _, m := range sedWrite.FindAllStringSubmatch(script, 4) {
			out = append(out, m[1])
		}
		if !strings.HasPrefix(arg, "-") {
			break // the first operand is the script
		}
	}
	return out
}

// fetchedCode matches a word that is what a downloader prints: <(curl
// …), $(wget -O- …), `curl …`.
var fetchedCode = regexp.MustCompile("(?:<\\(|\\$\\(|`)\\s*(?:\\S*/)?(?:curl|wget|fetch|aria2c)\\s")

// fetcherNames are the downloaders, for text that names them.
var fetcherNames = []string{"curl", "wget", "fetch", "aria2c"}

// addSub adds a command found as the arguments of another.
func (a *Analysis) addSub(argv []string, via []string, cwd string) {
	if len(argv) == 0 {
		return
	}
	before := len(a.Commands)
	emit(tokensOf(argv), 0, false, via, 1, &a.Commands)
	for _, c := range a.Commands[before:] {
		a.Binaries = append(a.Binaries, c.Binary)
		for _, arg := range c.Argv[1:] {
			if looksPath(arg) {
				a.Paths = append(a.Paths, resolve(arg, cwd))
			}
		}
		for _, arg := range WrittenArgs(c) {
			if looksPath(arg) {
				a.WritePaths = append(a.WritePaths, resolve(arg, cwd))
			}
		}
	}
}

func tokensOf(argv []string) []token {
	t := make([]token, len(argv))
	for i, s := range argv {
		t[i] = token{text: s}
	}
	return t
}

// narrowed reports whether a find expression selects files by name, path,
// time, size or owner, rather than taking every file of the tree.
func narrowed(argv []string) bool {
	return slices.ContainsFunc(argv, func(a string) bool {
		switch a {
		case "-name", "-iname", "-path", "-ipath", "-wholename", "-regex", "-iregex", "-mtime", "-mmin", "-atime", "-amin", "-ctime",
			"-cmin", "-size", "-empty", "-perm", "-user", "-group", "-nouser", "-links", "-inum", "-samefile", "-newer", "-lname":
			return true
		}
		return strings.HasPrefix(a, "-newer")
	})
}

// findRoots are the paths find starts from: its arguments before the first
// expression.
func findRoots(argv []string) []string {
	var roots []string
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" {
			break
		}
		roots = append(roots, a)
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	return roots
}

// Inline interpreter code.

// inlineCode returns the program text c runs inline, and its language.
// inlineFlags are the flags that give each language its code inline.
var inlineFlags = map[string][]string{
	"python": {"-c"}, "node": {"-e", "-p", "--eval", "--print"}, "perl": {"-e", "-E"}, "ruby": {"-e"},
	"php": {"-r"}, "osascript": {"-e"}, "powershell": {"-Command", "-command", "-c"}, "deno": {"eval"}, "bun": {"-e", "--eval"},
}

func inlineCode(c Command) (code, lang string) {
	flags := inlineFlags
	l := interpreterLang(c.Binary)
	switch l {
	case "":
		return "", ""
	case "awk":
		for i := 1; i < len(c.Argv); i++ {
			a := c.Argv[i]
			if a == "-F" || a == "-v" || a == "-f" {
				i++
				continue
			}
			if strings.HasPrefix(a, "-") {
				continue
			}
			return a, l
		}
		return "", ""
	}
	var parts []string
	for i := 1; i+1 < len(c.Argv); i++ {
		if slices.Contains(flags[l], c.Argv[i]) {
			parts = append(parts, c.Argv[i+1])
			i++
		}
	}
	if c.Heredoc != "" {
		parts = append(parts, c.Heredoc)
	}
	return strings.Join(parts, "\n"), l
}

// interpreterLang names the language of an interpreter binary.
func interpreterLang(bin string) string {
	switch {
	case strings.HasPrefix(bin, "python") || bin == "pypy" || bin == "pypy3":
		return "python"
	case bin == "node" || bin == "nodejs":
		return "node"
	case bin == "deno" || bin == "bun":
		return bin
	case bin == "perl" || bin == "ruby" || bin == "php" || bin == "osascript":
		return bin
	case bin == "pwsh" || bin == "powershell":
		return "powershell"
	case bin == "awk" || bin == "gawk" || bin == "mawk" || bin == "nawk":
		return "awk"
	}
	return ""
}

// codeRunners are calls that run a command line (their first string
// argument, or the strings of a list).
var codeRunners = regexp.MustCompile(`\b(?:exec\.Command(?:Context)?|os\.system|os\.popen|os\.exec\w*|subprocess\.\w+|commands\.getoutput|pty\.spawn|` +
	`child_process\.\w+|execSync|execFileSync|spawnSync|spawn|exec|execFile|shell_exec|passthru|proc_open|popen|system|` +
	`Open3\.\w+|IO\.popen|Deno\.run|Bun\.spawn|do shell script|Start-Process|Invoke-Expression|iex)\s*\(?\s*`)

// codeDeleters remove files or trees: their first string argument is the
// target, and recursive ones delete like rm -r.
var codeDeleters = regexp.MustCompile(`(?:\b|\.)(?:(shutil\.rmtree|rmtree|remove_tree|rmSync|rm|promises\.rm|rimraf\w*|FileUtils\.rm_rf|FileUtils\.rm_r|FileUtils\.remove_dir|Remove-Item|os\.RemoveAll|RemoveAll)|` +
	`(os\.remove|os\.unlink|os\.rmdir|os\.removedirs|unlinkSync|rmdirSync|unlink|rmdir|File\.delete|FileUtils\.rm))\s*\(\s*`)

// opaqueCode is what makes code unreadable: it builds or decodes what it
// runs at run time.
var opaqueCode = regexp.MustCompile(`\b(?:eval|exec|compile|__import__|importlib|getattr|b64decode|base64|fromCharCode|Function|atob|` +
	`codecs\.decode|marshal|pickle\.loads|bytes\.fromhex|unhexlify|Buffer\.from)\s*\(|\\x[0-9a-fA-F]{2}`)

// mayWrite returns the matches of codeFileWrites in code, looking only
// when a word of one of them is there.
func mayWrite(code string) [][]string {
	if holdsAny(code, "open(", "rite", "print", "File", "Set-Content", "put_contents") {
		return codeFileWrites.FindAllStringSubmatch(code, 16)
	}
	return nil
}

// codeFileWrites are calls that write a file named by a string literal.
var codeFileWrites = regexp.MustCompile(`\bprint[^>\n]*>>?\s*"([^"]+)"|\bopen\(\s*["']([^"']+)["']\s*,\s*["'][wax+]|(?:writeFileSync|appendFileSync|writeFile|appendFile|createWriteStream|file_put_contents)\(\s*["']([^"']+)["']|` +
	`\bFile\.(?:write|open)\(\s*["']([^"']+)["']\s*(?:,\s*["'][wa])?|Path\(\s*["']([^"']+)["']\s*\)\.write_(?:text|bytes)|Set-Content\s+(?:-Path\s+)?["']?([^"'\s]+)`)

// fetchEval is code that evaluates what it fetches: eval of a download,
// exec of urlopen's text, Function of fetch's.
var fetchEval = regexp.MustCompile(`\b(?:eval|exec|instance_eval|Function)\b\s*\(?\s*(?:URI\.open|open\(\s*["']https?:|get\(\s*["']https?:|LWP::Simple::get|urlopen|urllib\.request|requests\.get|httpx\.get|Net::HTTP\.get|file_get_contents\(\s*["']https?:|await\s+fetch|fetch\()`)

// credentialCode is code that reads a credential store through a library:
// the system keyring, a browser's cookie jar.
var credentialCode = regexp.MustCompile(`\bkeyring\.get_(?:password|credential)|browser_cookie3|pycookiecheat|keytar\.(?:getPassword|findCredentials)|SecKeychainFind|SecItemCopyMatching`)

// envDump is code that reads the whole environment.
var envDump = regexp.MustCompile(`\bos\.environ\b(?:\.copy\(\)|\)|\s*$|\.items\(\))|dict\(os\.environ\)|JSON\.stringify\(process\.env\)|\bprocess\.env\b\s*[),]|\bENV\.to_h\b|%ENV\b|getenv\(\)`)

// readCode reads inline interpreter code as the shell actions it takes.
func (a *Analysis) readCode(code, lang string, via []string, cwd string, add func(string, string, string, float64)) {
	via = append(clone(via), lang+" code")
	code = foldCode(code)
	for _, m := range mayWrite(code) {
		for _, p := range m[1:] {
			if p != "" {
				a.Paths = append(a.Paths, resolve(p, cwd))
				a.WritePaths = append(a.WritePaths, resolve(p, cwd))
			}
		}
	}
	if lang != "powershell" && lang != "osascript" && !strings.ContainsAny(code, "(`\\") && !codeRunners.MatchString(code) {
		return // no call at all: print 1, $1, ...
	}
	for _, m := range codeRunners.FindAllStringIndex(code, -1) {
		if args := stringArgs(code[m[1]:]); len(args) > 0 {
			line := strings.Join(args, " ")
			if len(args) >= 3 && shells[base(args[0])] && args[1] == "-c" {
				line = args[2] // ("sh", "-c", "a | b"): the line the shell runs
			}
			before := len(a.Commands)
			parseShell(line, via, 1, &a.Commands)
			fetched := false
			for _, c := range a.Commands[before:] {
				if c.Stage == 0 {
					fetched = fetchers[c.Binary]
				} else if c.Piped && fetched && (shells[c.Binary] || interpreters[c.Binary]) {
					a.PipedToShell = true // the code runs curl … | sh
				}
				a.Binaries = append(a.Binaries, c.Binary)
				for _, arg := range c.Argv[1:] {
					if looksPath(arg) {
						a.Paths = append(a.Paths, resolve(arg, cwd))
					}
				}
			}
		} else {
			add(FindOpaqueCode, strings.TrimSpace(code[m[0]:m[1]]), "inline "+lang+" code runs a command built at run time", 0.5)
		}
	}
	for _, m := range codeDeleters.FindAllStringSubmatchIndex(code, -1) {
		args := stringArgs(code[m[1]:])
		recursive := m[2] >= 0
		if len(args) == 0 {
			add(FindOpaqueCode, strings.TrimSpace(code[m[0]:m[1]]), "inline "+lang+" code deletes a path built at run time", 0.5)
			continue
		}
		flag := "-f"
		if recursive {
			flag = "-rf"
		}
		a.Commands = append(a.Commands, Command{Binary: "rm", Argv: []string{"rm", flag, args[0]}, Via: via})
		a.Paths = append(a.Paths, resolve(args[0], cwd))
		a.WritePaths = append(a.WritePaths, resolve(args[0], cwd))
	}
	if loc := opaqueCode.FindStringIndex(code); loc != nil {
		add(FindOpaqueCode, strings.TrimSpace(code[loc[0]:loc[1]]), "inline "+lang+" code builds or decodes what it runs", 0.5)
	}
	if holdsAny(code, "eval", "exec", "Function") && fetchEval.MatchString(code) {
		add(FindDownloadExec, lang+" code", "inline "+lang+" code runs what it downloads", 1)
	}
	if holdsAny(code, "keyring", "cookie", "keytar", "Sec") && credentialCode.MatchString(code) {
		add(FindSecretRead, lang+" code", "inline "+lang+" code reads a keyring or a browser's cookies", 0.8)
	}
	if envDump.MatchString(code) && (len(urlPattern.FindAllString(code, 1)) > 0 || strings.Contains(code, "socket")) {
		add(FindExfiltration, lang+" code", "inline "+lang+" code sends the environment over the network", 0.9)
	}
}

// stringArgs reads the string literals at the start of an argument list:
// one string, or the strings of a list ([...] or a list of arguments).
func stringArgs(s string) []string {
	s = strings.TrimLeft(s, " \t(")
	var out []string
	inList := strings.HasPrefix(s, "[") || strings.HasPrefix(s, "%w[")
	s = strings.TrimLeft(s, "%w[ \t")
	for len(s) > 0 {
		q := s[0]
		if q != '"' && q != '\'' && q != '`' {
			break
		}
		end := 1
		for end < len(s) && s[end] != q {
			if s[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(s) {
			break
		}
		out = append(out, strings.NewReplacer(`\"`, `"`, `\'`, `'`, `\\`, `\`).Replace(s[1:end]))
		s = strings.TrimLeft(s[end+1:], " \t")
		if !inList && !strings.HasPrefix(s, ",") {
			break
		}
		s = strings.TrimLeft(s, ", \t")
		if len(out) > 32 {
			break
		}
	}
	return out
}

// Destructive targets.

// systemDirs are directories whose recursive deletion breaks the machine.
var systemDirs = []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/var", "/boot", "/opt", "/sys", "/proc", "/dev", "/srv", "/snap", "/System", "/Library", "/Applications",
	"/home", "/Users", "/private"}

// destructive finds recursive deletion of what must not be deleted.
func destructive(c Command, cwd string, add func(string, string, string, float64)) {
	var targets []string
	switch c.Binary {
	case "rm":
		recursive := false
		for _, a := range c.Argv[1:] {
			if a == "--recursive" || a == "-r" || a == "-R" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR") {
				recursive = true
			}
		}
		if !recursive {
			return
		}
		targets = operands(c.Argv)
	case "shred", "unlink", "truncate":
		// Through find -exec, over every file of a tree.
		if !slices.ContainsFunc(c.Via, func(v string) bool { return strings.HasPrefix(v, "-exec") || strings.HasPrefix(v, "-ok") }) {
			return
		}
		targets = operands(c.Argv)
	case "tar":
		if !slices.Contains(c.Argv, "--remove-files") {
			return
		}
		targets = tarMembers(c.Argv) // tar --remove-files deletes what it archives
	case "chown", "chmod":
		// Taking a home or system tree away from its owner, recursively.
		if !slices.ContainsFunc(c.Argv[1:], func(a string) bool { return a == "-R" || a == "--recursive" }) {
			return
		}
		if ops := operands(c.Argv); len(ops) > 1 {
			for _, t := range ops[1:] {
				if what := dangerousTarget(t, cwd); what != "" && what != "the working directory" && what != "the workspace root" &&
					!(c.Binary == "chmod" && strings.Trim(t, "/") == "") { // chmod -R … / is forbidden outright (the policy's own pattern)
					add(FindDestructive, t, c.Binary+" -R changes who owns or may use "+t+" ("+what+")", 0.8)
				}
			}
		}
		return
	case "wipefs", "sgdisk", "blkdiscard":
		add(FindDestructive, strings.Join(c.Argv, " "), c.Binary+" erases a disk's data or partitions", 1)
		return
	case "diskutil":
		if len(c.Argv) > 1 && (strings.HasPrefix(c.Argv[1], "erase") || c.Argv[1] == "zeroDisk" || c.Argv[1] == "randomDisk" || c.Argv[1] == "secureErase") {
			add(FindDestructive, strings.Join(c.Argv, " "), "diskutil erases a disk", 1)
		}
		return
	case "tmutil":
		if len(c.Argv) > 1 && (c.Argv[1] == "delete" || c.Argv[1] == "deletelocalsnapshots" || c.Argv[1] == "disable") {
			add(FindDestructive, strings.Join(c.Argv, " "), "tmutil deletes or disables backups", 0.8)
		}
		return
	case "kill":
		if slices.Contains(c.Argv, "-1") && slices.ContainsFunc(c.Argv, func(a string) bool { return a == "-9" || a == "-KILL" || a == "-s" || a == "-TERM" }) {
			add(FindDestructive, strings.Join(c.Argv, " "), "kill -1 signals every process the user may", 1)
		}
		return
	case "rmdir":
		return
	case "rimraf", "del-cli", "trash", "trash-put", "rmtrash", "gio":
		targets = operands(c.Argv) // recursive deletes by another name
		if c.Binary == "gio" && (len(targets) == 0 || targets[0] != "trash" && targets[0] != "remove") {
			return
		} else if c.Binary == "gio" {
			targets = targets[1:]
		}
	case "npx", "pnpx", "bunx":
		if ops := operands(c.Argv); len(ops) > 1 && (ops[0] == "rimraf" || ops[0] == "del-cli" || ops[0] == "trash-cli") {
			targets = ops[1:]
		} else {
			return
		}
	case "rsync":
		if !slices.ContainsFunc(c.Argv, func(a string) bool { return strings.HasPrefix(a, "--delete") }) {
			return
		}
		if ops := operands(c.Argv); len(ops) > 1 {
			targets = ops[len(ops)-1:]
		}
	default:
		return
	}
	for _, t := range targets {
		judgeIn := cwd
		if c.Dir != "" && (t == "*" || t == "." || t == ".*" || t == "./*" || t == "./") {
			// After a cd, * is the contents of where the cd went: harm only
			// when that is what must not be deleted (a home, /, a system
			// directory, a repository), not because it is where one works.
			t, judgeIn = c.Dir, ""
		}
		if what := dangerousTarget(t, judgeIn); what != "" {
			add(FindDestructive, t, c.Binary+" deletes "+t+" ("+what+")", 1)
		} else if what := valuableTarget(t, cwd); what != "" {
			add(FindDestructive, t, c.Binary+" deletes "+t+" ("+what+")", 0.8)
		}
	}
}

// userDataDirs are the directories of a home that hold a person's own
// files.
var userDataDirs = map[string]bool{"Documents": true, "Desktop": true, "Downloads": true, "Pictures": true, "Music": true, "Movies": true,
	"Videos": true, "Library": true, "Dropbox": true, "OneDrive": true, "Public": true, "Templates": true, ".local": true, ".config": true,
	"src": true, "code": true, "Code": true, "projects": true, "Projects": true, "repos": true, "workspace": true, "work": true, "git": true, "go": true}

// valuableTarget says what t is when deleting it recursively loses what
// no build recreates — a person's data directory in a home, a directory
// inside a system directory (a database's data, a program's installation),
// the objects or refs of a git repository — or "".
func valuableTarget(t, cwd string) string {
	p := strings.TrimRight(strings.TrimSpace(t), "/")
	if strings.HasPrefix(p, "/") {
		p = path.Clean(p)
	} else if cwd != "" && !strings.HasPrefix(p, "~") && !strings.HasPrefix(p, "$") {
		p = resolve(p, cwd)
	}
	switch {
	case strings.HasSuffix(p, "/.git/objects") || strings.HasSuffix(p, "/.git/refs") || p == ".git/objects" || p == ".git/refs":
		return "a git repository's history"
	}
	if dir, name := path.Split(p); userDataDirs[name] && homeRe.MatchString(strings.TrimSuffix(dir, "/")) {
		return "a person's data directory"
	}
	for _, sys := range systemDirs {
		if sys == "/home" || sys == "/Users" || sys == "/private" || sys == "/srv" {
			continue // people's and services' own directories: their homes and projects live there
		}
		if rest, ok := strings.CutPrefix(p, sys+"/"); ok && strings.Count(rest, "/") <= 1 && !strings.HasPrefix(p, "/var/tmp") &&
			!strings.HasPrefix(p, "/var/cache") && !strings.HasPrefix(p, "/var/folders") && !strings.HasPrefix(p, "/dev/shm") {
			return "inside a system directory"
		}
	}
	return ""
}

// operands are a command's arguments that are not options.
func operands(argv []string) []string {
	var out []string
	opts := true
	for _, a := range argv[1:] {
		if opts && a == "--" {
			opts = false
			continue
		}
		if opts && strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		out = append(out, a)
	}
	return out
}

// homeRe matches home directories however they are spelt.
var homeRe = regexp.MustCompile(`^(?:~[A-Za-z0-9._-]*|\$HOME|\$\{HOME\}|/home/[^/]+|/Users/[^/]+|/root)$`)

// dangerousTarget says what t is when deleting it recursively is
// destructive: the root, a home directory, the workspace root, a .git
// directory, a system directory (or a glob of one's contents); "" else.
func dangerousTarget(t, cwd string) string {
	t = strings.TrimRight(strings.TrimSpace(t), "/")
	glob := false
	for _, suffix := range []string{"/*", "/.*", "/{*,.*}"} {
		if s, ok := strings.CutSuffix(t, suffix); ok {
			t, glob = s, true
			break
		}
	}
	t = strings.TrimRight(t, "/")
	if strings.HasPrefix(t, "/") && strings.Contains(t, "/.") {
		t = strings.TrimRight(path.Clean(t), "/") // /home/dev/.. is /home
	}
	what := ""
	switch {
	case t == "":
		what = "the file system root"
	case homeRe.MatchString(t):
		what = "a home directory"
	case t == "*" || t == "." || t == "./" || t == ".*":
		what = "the working directory"
	case path.Base(t) == ".git":
		what = "a git repository's history"
	case cwd != "" && resolve(t, cwd) == path.Clean(cwd):
		what = "the workspace root"
	case cwd != "" && (resolve(t, cwd) == "/" || homeRe.MatchString(resolve(t, cwd)) || strings.HasPrefix(path.Clean(cwd), resolve(t, cwd)+"/")):
		what = "an ancestor of the workspace"
	case slices.Contains(systemDirs, t):
		what = "a system directory"
	}
	if glob && what != "" {
		what = "everything in " + what
	}
	return what
}

// Download, then execute.

// downloadExec finds a command that runs, sources or makes executable a
// file an earlier command of the same line downloaded.
func (a *Analysis) downloadExec(c Command, cwd string, downloaded map[string]string, add func(string, string, string, float64)) {
	if c.Binary == "tar" && c.Piped && destructiveTar(c) && slices.ContainsFunc(a.Commands, func(o Command) bool { return fetchers[o.Binary] && o.Stage == c.Stage-1 }) {
		// curl … | tar x -C DIR: what lands in DIR was downloaded.
		dir := cwd
		for i, w := range c.Argv {
			if (w == "-C" || w == "--directory") && i+1 < len(c.Argv) {
				dir = resolve(c.Argv[i+1], cwd)
			}
		}
		downloaded[dir] = dir
		a.Downloads = append(a.Downloads, dir)
	}
	if c.Binary == "go" && len(c.Argv) > 2 && c.Argv[1] == "run" {
		if ops := operands(c.Argv); len(ops) > 1 && (strings.HasPrefix(ops[1], "http://") || strings.HasPrefix(ops[1], "https://")) {
			add(FindDownloadExec, ops[1], "go run runs code it downloads from "+ops[1], 1)
		}
	}
	if out := downloadTarget(c); out != "" {
		downloaded[resolve(out, cwd)] = out
		a.Downloads = append(a.Downloads, resolve(out, cwd))
		return
	}
	for _, p := range Executes(c) {
		a.Executes = append(a.Executes, resolve(p, cwd))
		for _, d := range slices.Sorted(maps.Keys(downloaded)) {
			// A script of a repository the line just cloned, run by a shell
			// or an interpreter (a build of it, make or npm, is asked
			// nowhere: building what one cloned is ordinary).
			if strings.HasPrefix(resolve(p, cwd), d+"/") && !strings.Contains(d, "*") && (shells[c.Binary] || interpreterLang(c.Binary) != "" || strings.Contains(c.Argv[0], "/")) {
				add(FindDownloadExec, p, c.Binary+" runs "+p+", from "+d+", which the same command line downloaded", 0.6)
			}
		}
		if _, ok := downloaded[resolve(p, cwd)]; ok {
			add(FindDownloadExec, p, c.Binary+" runs "+p+", downloaded by the same command line", 1)
		}
	}
}

// downloadTarget is the file a downloader writes, or "".
func downloadTarget(c Command) string {
	if c.Binary == "git" {
		// git clone URL DIR: the clone is downloaded code.
		if sub, args := gitSub(c.Argv); sub == "clone" {
			if ops := operands(append([]string{"clone"}, args...)); len(ops) == 2 && urlPattern.MatchString(ops[0]) {
				return ops[1]
			}
		}
		return ""
	}
	if c.Binary != "curl" && c.Binary != "wget" && c.Binary != "fetch" && c.Binary != "aria2c" && c.Binary != "http" {
		return ""
	}
	if len(c.Redirects) > 0 && !StreamDevice(c.Redirects[0]) && slices.ContainsFunc(c.Argv[1:], func(a string) bool { return urlPattern.MatchString(a) }) {
		return c.Redirects[0] // curl URL > FILE
	}
	var url string
	for i, a := range c.Argv[1:] {
		switch {
		case a == "-o" || a == "--output" || a == "-O" && c.Binary == "wget" || a == "--output-document":
			if i+2 < len(c.Argv) {
				return c.Argv[i+2]
			}
		case strings.HasPrefix(a, "--output=") || strings.HasPrefix(a, "--output-document="):
			_, v, _ := strings.Cut(a, "=")
			return v
		case strings.HasPrefix(a, "-o") && len(a) > 2 && c.Binary == "curl":
			return a[2:]
		case c.Binary == "curl" && len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, "o"):
			if i+2 < len(c.Argv) {
				return c.Argv[i+2] // -sSLo FILE
			}
		case urlPattern.MatchString(a):
			url = a
		}
	}
	remoteName := c.Binary == "wget" || slices.Contains(c.Argv, "--remote-name") || slices.ContainsFunc(c.Argv[1:], func(a string) bool {
		return len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, "O")
	})
	if remoteName && url != "" {
		if b := path.Base(strings.SplitN(trimURL(url), "?", 2)[0]); b != "" && b != "/" && b != "." {
			return b
		}
	}
	return ""
}

// Executes returns the files a command runs: a script given to a shell or
// an interpreter, a program named by its path, a sourced file, a file made
// executable.
func Executes(c Command) []string {
	switch {
	case shells[c.Binary] || interpreterLang(c.Binary) != "" || c.Binary == "source" || c.Binary == ".":
		for _, a := range c.Argv[1:] {
			if a == "-c" || a == "-e" || a == "-r" {
				return nil // inline code, read elsewhere
			}
			if !strings.HasPrefix(a, "-") {
				return []string{a}
			}
		}
	case c.Binary == "chmod":
		if slices.ContainsFunc(c.Argv, func(a string) bool {
			return strings.Contains(a, "+x") || strings.HasPrefix(a, "7") || strings.HasPrefix(a, "5")
		}) {
			if ops := operands(c.Argv); len(ops) > 1 {
				return ops[1:]
			}
		}
	case strings.Contains(c.Argv[0], "/"):
		return []string{c.Argv[0]}
	}
	return nil
}

// Exfiltration and secrets.

// senders are binaries that send data to a network host.
var senders = map[string]bool{"curl": true, "wget": true, "nc": true, "ncat": true, "netcat": true, "socat": true, "ssh": true,
	"scp": true, "rsync": true, "sftp": true, "ftp": true, "http": true, "https": true, "telnet": true, "openssl": true, "aws": true, "gsutil": true}

// envReaders print the environment.
var envReaders = map[string]bool{"env": true, "printenv": true, "set": true, "export": true, "declare": true}

// exfiltration finds the environment or secrets going to a network host.
func exfiltration(c Command, all []Command, add func(string, string, string, float64)) {
	if !senders[c.Binary] {
		return
	}
	for _, a := range c.Argv[1:] {
		for _, reader := range []string{"$(env", "$(printenv", "`env", "`printenv", "$(set", "$(cat ", "$(<"} {
			if strings.Contains(a, reader) {
				add(FindExfiltration, a, c.Binary+" sends "+a+" out", 1)
			}
		}
		if f, ok := strings.CutPrefix(a, "@"); ok && secretStore(f) {
			add(FindExfiltration, f, c.Binary+" uploads "+f, 1)
		}
	}
	for _, f := range c.Inputs {
		if secretStore(f) {
			add(FindExfiltration, f, c.Binary+" sends "+f+" (its standard input)", 1)
		}
	}
	// An environment dump or a secret read piped into the sender.
	if c.Piped {
		for _, o := range all {
			if o.Stage < c.Stage && (envReaders[o.Binary] && len(operands(o.Argv)) == 0 || o.Binary == "cat" && slices.ContainsFunc(operands(o.Argv), secretStore)) {
				add(FindExfiltration, strings.Join(o.Argv, " "), strings.Join(o.Argv, " ")+" piped into "+c.Binary, 1)
			}
		}
	}
}

// secretPatterns are what credential searches look for.
var secretPatterns = regexp.MustCompile(`(?i)\b(?:AKIA|ASIA)|BEGIN [A-Z ]*PRIVATE KEY|\bpassw(?:or)?d\b|\bsecret\b|\btoken\b|\bapi[_-]?key\b|\bghp_|\bxox[bp]-|\bsk-[a-z]|secret_access_key|private_key|client_secret|auth_token`)

// secretNames are file names that hold credentials.
var secretNames = regexp.MustCompile(`(?i)\*?\.(pem|key|p12|pfx|kdbx|keystore|jks)$|^\*?id_(rsa|dsa|ecdsa|ed25519|\*)|^\*?\.env\b|credentials|\.netrc|\.pgpass|\.npmrc|\.pypirc`)

// secretDiscovery finds searches whose purpose is finding credentials, and
// environment dumps.
func secretDiscovery(c Command, add func(string, string, string, float64)) {
	switch c.Binary {
	case "grep", "egrep", "rg", "ag", "ack", "git":
		if c.Binary == "git" && len(c.Argv) > 2 && c.Argv[1] == "credential" && c.Argv[2] == "fill" {
			add(FindSecretRead, "git credential fill", "git credential fill prints a stored password", 1)
			return
		}
		if c.Binary == "git" && (len(c.Argv) < 2 || c.Argv[1] != "grep") {
			return
		}
		for _, a := range operands(c.Argv) {
			if !looksPath(a) && secretPatterns.MatchString(a) {
				// A search for a word like "token" is often ordinary code
				// search: the sensitivity decides (balanced asks).
				add(FindSecretDiscovery, a, c.Binary+" searches for credentials ("+a+")", 0.6)
				return
			}
		}
	case "find", "locate", "fd":
		for i, a := range c.Argv[1:] {
			if (a == "-name" || a == "-iname" || a == "-path" || c.Binary != "find") && i+2 <= len(c.Argv)-1 || c.Binary != "find" {
				v := a
				if c.Binary == "find" {
					v = c.Argv[i+2]
				}
				if secretNames.MatchString(strings.Trim(v, `'"`)) {
					add(FindSecretDiscovery, v, c.Binary+" looks for credential files ("+v+")", 0.9)
					return
				}
			}
		}
	case "env", "printenv":
		if len(operands(c.Argv)) == 0 {
			add(FindSecretDiscovery, c.Binary, c.Binary+" prints every environment variable, secrets included", 0.6)
		}
	case "security":
		if len(c.Argv) > 1 && strings.HasPrefix(c.Argv[1], "find-") && strings.HasSuffix(c.Argv[1], "-password") || slices.Contains(c.Argv, "dump-keychain") {
			add(FindSecretRead, "keychain", "security reads the keychain", 1)
		}
	case "kubectl", "oc":
		line := " " + strings.Join(c.Argv[1:], " ") + " "
		if strings.Contains(line, " config view ") && strings.Contains(line, "--raw") || strings.Contains(line, " get secret") && (strings.Contains(line, " -o") || strings.Contains(line, "--output")) ||
			strings.Contains(line, " describe secret") {
			add(FindSecretRead, c.Binary, c.Binary+" prints cluster credentials or a secret's value", 0.8)
		}
	case "gpg", "gpg2":
		if slices.ContainsFunc(c.Argv, func(a string) bool { return strings.HasPrefix(a, "--export-secret") }) {
			add(FindSecretRead, "gpg", "gpg exports private keys", 1)
		}
	case "docker", "podman":
		if len(c.Argv) > 1 && c.Argv[1] == "inspect" && strings.Contains(strings.Join(c.Argv, " "), ".Env") {
			add(FindSecretRead, c.Binary, c.Binary+" prints containers' environments (their secrets)", 0.6)
		}
	case "docker-credential-desktop", "docker-credential-osxkeychain", "docker-credential-pass", "docker-credential-secretservice", "docker-credential-wincred":
		if slices.Contains(c.Argv, "get") || slices.Contains(c.Argv, "list") {
			add(FindSecretRead, c.Binary, c.Binary+" prints registry credentials", 1)
		}
	case "secret-tool":
		if len(c.Argv) > 1 && (c.Argv[1] == "lookup" || c.Argv[1] == "search") {
			add(FindSecretRead, "keyring", "secret-tool reads the desktop keyring", 1)
		}
	case "aws":
		if len(c.Argv) > 2 && c.Argv[1] == "configure" && (c.Argv[2] == "get" || c.Argv[2] == "export-credentials") && secretPatterns.MatchString(strings.Join(c.Argv[2:], " ")+" secret") {
			add(FindSecretRead, "aws configure", "aws configure prints stored credentials", 0.8)
		}
		if len(c.Argv) > 2 && (c.Argv[1] == "secretsmanager" && c.Argv[2] == "get-secret-value" || c.Argv[1] == "ssm" && strings.HasPrefix(c.Argv[2], "get-parameter") && slices.Contains(c.Argv, "--with-decryption")) {
			add(FindSecretRead, "aws "+c.Argv[1], "aws prints a stored secret's value", 0.6)
		}
	case "gcloud", "gh", "az", "doctl", "heroku", "op", "vault", "pass", "bw", "lpass":
		line := " " + strings.Join(c.Argv[1:], " ") + " "
		for _, t := range []string{" print-access-token ", " print-identity-token ", " auth token ", " get-access-token ", " read ", " show ", " item get ", " get item ", " get password ", " kv get ", " secrets versions access "} {
			if strings.Contains(line, t) && (c.Binary != "vault" || t == " read " || t == " kv get ") && (c.Binary != "gh" || t == " auth token ") {
				add(FindSecretRead, c.Binary, c.Binary+" prints a stored credential or token", 0.6)
				break
			}
		}
	}
}

// secretStoreGlobs are where credentials live, beyond any manifest's list.
var secretStoreGlobs = []string{
	"**/.config/gh/hosts.yml", "**/.npmrc", "**/.pypirc", "**/.git-credentials", "**/.netrc", "**/.pgpass",
	"**/.aws/credentials", "**/.aws/config", "**/.config/gcloud/**", "**/.azure/**", "**/.kube/config", "**/.docker/config.json",
	"/proc/*/environ", "**/.ssh/id_*", "**/.gnupg/**", "**/.password-store/**",
	"**/.config/google-chrome/**", "**/.config/chromium/**", "**/.mozilla/firefox/**", "**/Library/Application Support/Google/Chrome/**",
	"**/Library/Keychains/**", "**/.local/share/keyrings/**", "**/.vault-token", "**/.terraform.d/credentials.tfrc.json",
	"**/.my.cnf", "**/.mylogin.cnf", "**/.config/rclone/rclone.conf", "**/.m2/settings.xml", "**/.cargo/credentials", "**/.cargo/credentials.toml",
	"**/.gem/credentials", "/etc/shadow", "/etc/gshadow", "/etc/master.passwd", "**/Library/Application Support/Firefox/**",
	"**/Library/Application Support/BraveSoftware/**", "**/.config/BraveSoftware/**", "**/Library/Cookies/**", "**/.gitcookies",
	"**/.boto", "**/.s3cfg", "**/.terraformrc", "**/.composer/auth.json", "**/.config/hub", "**/.config/op/**", "**/.ssh/*_key",
	"**/.aws/sso/cache/**", "**/.config/gcloud",
}

// secretStore reports whether p is a well-known credential store (or a
// glob that takes one in: ~/.*credentials*).
func secretStore(p string) bool {
	p = strings.Trim(p, `'"`)
	if strings.ContainsAny(p, "*?[") {
		if home := homePrefix.FindString(p); home != "" {
			for _, name := range homeSecrets {
				if ok, _ := path.Match(p, home+"/"+name); ok {
					return true
				}
			}
		}
	}
	if strings.HasSuffix(p, ".pub") {
		return false // a public key
	}
	for _, h := range []string{"${HOME}", "$HOME"} {
		if rest, ok := strings.CutPrefix(p, h); ok {
			p = "~" + rest
		}
	}
	for i, g := range secretStoreGlobs {
		if strings.Contains(p, secretStoreLits[i]) && (globMatch(g, p) || globMatch(g, p+"/")) {
			return true
		}
	}
	return false
}

// homeSecrets are credential files directly in a home directory.
var homeSecrets = []string{".git-credentials", ".netrc", ".pgpass", ".my.cnf", ".mylogin.cnf", ".npmrc", ".pypirc", ".vault-token", ".boto", ".s3cfg", ".gitcookies",
	".ssh/id_rsa", ".ssh/id_ed25519", ".ssh/id_ecdsa", ".ssh/id_dsa", ".aws/credentials", ".kube/config", ".docker/config.json", ".config/gh/hosts.yml",
	".azure/accessTokens.json", ".config/gcloud/credentials.db", ".gnupg/private-keys-v1.d/key"}

// homePrefix matches the home directory at the start of a path.
var homePrefix = regexp.MustCompile(`^(?:~|\$HOME|\$\{HOME\}|/home/[^/]+|/Users/[^/]+|/root)`)

// secretStoreLits and persistenceLits are each glob's longest literal
// part: a path without it cannot match, which spares most glob matching.
var secretStoreLits, persistenceLits = func() ([]string, []string) {
	var s, p []string
	for _, g := range secretStoreGlobs {
		s = append(s, longestLiteral(g))
	}
	for _, g := range persistenceGlobs {
		p = append(p, longestLiteral(g.glob))
	}
	return s, p
}()

func longestLiteral(g string) string {
	best := ""
	for _, part := range strings.FieldsFunc(g, func(r rune) bool { return r == '*' || r == '?' || r == '[' }) {
		part = strings.TrimSuffix(part, "/")
		if len(part) > len(best) {
			best = part
		}
	}
	return best
}

// Persistence.

var persistenceGlobs = []struct{ glob, what string }{
	{"**/.bashrc", "a shell start-up file"}, {"**/.bash_profile", "a shell start-up file"}, {"**/.bash_login", "a shell start-up file"},
	{"**/.profile", "a shell start-up file"}, {"**/.zshrc", "a shell start-up file"}, {"**/.zprofile", "a shell start-up file"},
	{"**/.zshenv", "a shell start-up file"}, {"**/.zlogin", "a shell start-up file"}, {"**/.config/fish/config.fish", "a shell start-up file"},
	{"/etc/profile", "a shell start-up file"}, {"/etc/profile.d/**", "a shell start-up file"}, {"/etc/bash.bashrc", "a shell start-up file"},
	{"/etc/zsh/**", "a shell start-up file"}, {"**/.ssh/authorized_keys", "SSH access"}, {"**/.ssh/authorized_keys2", "SSH access"},
	{"**/.ssh/rc", "SSH access"}, {"/etc/cron*/**", "cron"}, {"/etc/crontab", "cron"}, {"/var/spool/cron/**", "cron"},
	{"/etc/systemd/**", "systemd"}, {"**/.config/systemd/**", "systemd"}, {"/lib/systemd/**", "systemd"},
	{"**/Library/LaunchAgents/**", "launchd"}, {"/Library/LaunchDaemons/**", "launchd"}, {"**/.git/hooks/**", "git hooks"},
	{"**/.husky/**", "git hooks"}, {"**/.vscode/tasks.json", "an editor task that can run on open"},
	{"**/.config/autostart/**", "desktop autostart"}, {"/etc/rc.local", "boot scripts"}, {"/etc/init.d/**", "boot scripts"},
	{"/etc/ld.so.preload", "library preloading"}, {"**/.gitconfig", "git configuration (hooks, aliases)"},
	{"**/.bash_logout", "a shell start-up file"}, {"/etc/zshrc", "a shell start-up file"}, {"/etc/zsh/zshrc", "a shell start-up file"},
	{"**/.xprofile", "a session start-up file"}, {"**/.xinitrc", "a session start-up file"}, {"**/.xsession", "a session start-up file"},
	{"**/.tmux.conf", "tmux configuration (run-shell)"}, {"**/.config/fish/conf.d/**", "a shell start-up file"},
	{"**/.local/bin/*", "a program on PATH, run in place of another"}, {"**/site-packages/*.pth", "a file Python runs at every start"},
	{"**/.ssh/config", "SSH configuration (ProxyCommand, LocalCommand)"}, {"**/.config/nvim/init.lua", "an editor's start-up file"},
	{"**/.config/nvim/init.vim", "an editor's start-up file"}, {"**/.vimrc", "an editor's start-up file"}, {"**/.emacs", "an editor's start-up file"},
	{"**/.emacs.d/init.el", "an editor's start-up file"}, {"/etc/sudoers", "sudo's rules"}, {"/etc/sudoers.d/**", "sudo's rules"},
	{"/etc/environment", "every session's environment"}, {"/etc/ld.so.conf.d/**", "library loading"}, {"/etc/pam.d/**", "login modules"},
	{"**/.lessfilter", "a filter less runs on every file it opens"}, {"**/.inputrc", "a shell start-up file"},
	{"**/.config/git/config", "git configuration (hooks, aliases)"},
}

// persistencePath says why a write to p persists code, or "".
func persistencePath(p string) string {
	for _, h := range []string{"${HOME}", "$HOME"} {
		if rest, ok := strings.CutPrefix(p, h); ok {
			p = "~" + rest
		}
	}
	for i, g := range persistenceGlobs {
		if strings.Contains(p, persistenceLits[i]) && globMatch(g.glob, p) {
			return g.what
		}
	}
	return ""
}

// persistenceCommand finds commands that install code to run later.
func persistenceCommand(c Command, add func(string, string, string, float64)) {
	switch c.Binary {
	case "crontab":
		if !slices.Contains(c.Argv, "-l") {
			add(FindPersistence, "crontab", "crontab installs scheduled commands", 1)
		}
	case "systemctl":
		if slices.Contains(c.Argv, "enable") || slices.Contains(c.Argv, "link") {
			add(FindPersistence, strings.Join(c.Argv, " "), "systemctl enables a service", 1)
		}
	case "launchctl":
		if slices.ContainsFunc(c.Argv, func(a string) bool { return a == "load" || a == "bootstrap" || a == "enable" || a == "submit" }) {
			add(FindPersistence, strings.Join(c.Argv, " "), "launchctl installs a job", 1)
		}
	case "at", "batch":
		add(FindPersistence, c.Binary, c.Binary+" schedules a command", 0.9)
	case "useradd", "adduser", "usermod", "chpasswd", "passwd", "setcap", "visudo", "dscl", "sysadminctl":
		if c.Binary != "passwd" || len(operands(c.Argv)) > 0 {
			add(FindPersistence, strings.Join(c.Argv, " "), c.Binary+" changes who can log in or what a program may do", 0.8)
		}
	case "defaults":
		if slices.Contains(c.Argv, "write") && slices.ContainsFunc(c.Argv, func(a string) bool {
			return strings.Contains(a, "LoginHook") || strings.Contains(a, "LogoutHook") || strings.Contains(a, "loginwindow") || strings.Contains(a, "LaunchServices")
		}) {
			add(FindPersistence, strings.Join(c.Argv, " "), "defaults write installs a login hook", 1)
		}
	case "osascript":
		if strings.Contains(strings.Join(c.Argv, " "), "login item") {
			add(FindPersistence, "login item", "osascript adds a login item", 1)
		}
	case "ssh-copy-id":
		if slices.ContainsFunc(operands(c.Argv), func(h string) bool { return Loopback(strings.TrimPrefix(h[strings.LastIndex(h, "@")+1:], "")) }) {
			add(FindPersistence, strings.Join(c.Argv, " "), "ssh-copy-id adds a key to this machine's authorized_keys", 1)
		}
	case "git":
		sub, args := gitSub(c.Argv)
		if sub == "config" && !slices.ContainsFunc(args, func(a string) bool {
			return a == "--get" || a == "--get-all" || a == "--list" || a == "-l" || a == "--get-regexp" || a == "get" || a == "list"
		}) {
			for i, a := range args {
				if strings.EqualFold(a, "core.hooksPath") || strings.HasPrefix(strings.ToLower(a), "core.hookspath") {
					// A project's own hooks directory (husky, .githooks) is
					// ordinary setup: asked; anywhere else: denied.
					confidence := 1.0
					if i+1 < len(args) && projectRelative(args[i+1]) {
						confidence = 0.6
					}
					add(FindPersistence, "core.hooksPath", "git config sets the hooks path", confidence)
				}
			}
		}
		for i := 1; i+1 < len(c.Argv); i++ {
			if c.Argv[i] == "-c" && strings.HasPrefix(strings.ToLower(c.Argv[i+1]), "core.hookspath=") {
				add(FindPersistence, c.Argv[i+1], "git runs with another hooks path", 1)
			}
		}
	}
}

// projectRelative reports whether p is a path inside the working
// directory as written: relative, without .. or variables.
func projectRelative(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") && !strings.Contains(p, "..") && !strings.ContainsAny(p, "$`")
}

// GitSubcommand returns a git command's subcommand and its arguments,
// past git's own options (-c k=v, -C dir, --git-dir=..., ...).
func GitSubcommand(argv []string) (string, []string) { return gitSub(argv) }

// RuleLine is the command line rules are matched against besides the
// command as written: the program's own global options dropped (git -C
// DIR, -c KEY=VALUE, --git-dir, --work-tree, --no-pager, ...), so that an
// option can narrow what a rule allows but never widen it (git -C . push
// is git push to a rule that asks about pushes). It is the line itself
// when there is nothing to drop.
func RuleLine(c Command) string {
	if c.Binary == "git" {
		if sub, args := gitSub(c.Argv); sub != "" {
			return strings.Join(append([]string{"git", sub}, args...), " ")
		}
	}
	return strings.Join(c.Argv, " ")
}

// gitSub returns a git command's subcommand and its arguments, past git's
// own options (-c k=v, -C dir, --git-dir=..., ...).
func gitSub(argv []string) (string, []string) {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-c" || a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--exec-path":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a, argv[i+1:]
		}
	}
	return "", nil
}

// forcePush finds git pushes that overwrite remote history.
func forcePush(c Command, add func(string, string, string, float64)) {
	if c.Binary != "git" {
		return
	}
	sub, args := gitSub(c.Argv)
	if sub != "push" {
		return
	}
	for _, a := range args {
		switch {
		case a == "--delete" || a == "-d":
			add(FindForcePush, a, "git push "+a+" deletes a branch on the remote", 0.6) // often ordinary: asks under balanced
			return
		case a == "--force" || a == "-f" || a == "--mirror" || strings.HasPrefix(a, "--force=") && !strings.EqualFold(strings.TrimPrefix(a, "--force="), "false") ||
			strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "f"):
			add(FindForcePush, a, "git push "+a+" overwrites the remote's history", 1)
			return
		case strings.HasPrefix(a, "+") && len(a) > 1:
			add(FindForcePush, a, "git push "+a+" force-updates "+a[1:], 1)
			return
		case strings.HasPrefix(a, ":") && len(a) > 1:
			add(FindForcePush, a, "git push "+a+" deletes "+a[1:]+" on the remote", 0.6)
			return
		}
	}
}

// Decoding.

// decodeThrough applies the decoding stages of a pipeline (base64 -d, xxd
// -r -p, rev, tr rot13) to text, or returns "" when a stage is not one.
func decodeThrough(text string, stages []Command) string {
	for _, c := range stages {
		switch {
		case c.Binary == "base64" && slices.ContainsFunc(c.Argv, func(a string) bool { return a == "-d" || a == "--decode" || a == "-D" }):
			b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(text), ""))
			if err != nil {
				if b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(strings.Join(strings.Fields(text), ""), "=")); err != nil {
					return ""
				}
			}
			text = string(b)
		case c.Binary == "xxd" && slices.Contains(c.Argv, "-r"):
			b, err := hex.DecodeString(strings.Join(strings.Fields(text), ""))
			if err != nil {
				return ""
			}
			text = string(b)
		case c.Binary == "rev":
			r := []rune(text)
			slices.Reverse(r)
			text = string(r)
		case c.Binary == "tr" && len(c.Argv) == 3 && rot13Sets(c.Argv[1], c.Argv[2]):
			text = strings.Map(rot13, text)
		default:
			return ""
		}
	}
	return text
}

func rot13Sets(a, b string) bool {
	a, b = strings.ReplaceAll(a, "'", ""), strings.ReplaceAll(b, "'", "")
	return strings.HasPrefix(a, "A-Za-z") && strings.HasPrefix(b, "N-ZA-Mn-za-m") || strings.HasPrefix(a, "a-zA-Z") && strings.HasPrefix(b, "n-za-mN-ZA-M")
}

func rot13(r rune) rune {
	switch {
	case r >= 'a' && r <= 'z':
		return 'a' + (r-'a'+13)%26
	case r >= 'A' && r <= 'Z':
		return 'A' + (r-'A'+13)%26
	}
	return r
}

// globMatch matches p against a glob where ** crosses directories and *
// does not; a ~ in p matches a ** or a home directory in g.
func globMatch(g, p string) bool {
	if strings.HasPrefix(p, "~") && strings.HasPrefix(g, "**/") {
		p = "/home/user" + strings.TrimPrefix(p, "~")
	}
	if tail, ok := strings.CutPrefix(g, "**/"); ok && !strings.ContainsAny(tail, "*?[") {
		return p == tail || strings.HasSuffix(p, "/"+tail) // the common case, without backtracking
	}
	return matchGlob(g, p)
}

func matchGlob(g, s string) bool {
	for len(g) > 0 {
		switch {
		case strings.HasPrefix(g, "**"):
			rest := strings.TrimPrefix(g[2:], "/")
			if rest == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if (i == 0 || s[i-1] == '/') && matchGlob(rest, s[i:]) {
					return true
				}
			}
			return false
		case g[0] == '*':
			for i := 0; i <= len(s) && (i == 0 || s[i-1] != '/'); i++ {
				if matchGlob(g[1:], s[i:]) {
					return true
				}
			}
			return false
		case len(s) == 0 || g[0] != s[0]:
			return false
		}
		g, s = g[1:], s[1:]
	}
	return len(s) == 0
}

// packageSource finds installs from outside an ecosystem's registry.
func packageSource(c Command, add func(string, string, string, float64)) {
	if len(packagesOf(c)) == 0 && !(c.Binary == "pip" || c.Binary == "pip3" || c.Binary == "npm" || c.Binary == "uv") {
		return
	}
	for i, a := range c.Argv[1:] {
		switch {
		case strings.HasPrefix(a, "git+") || strings.HasPrefix(a, "git://") || strings.HasPrefix(a, "github:"):
			add(FindPackageSource, a, c.Binary+" installs from a git repository ("+a+")", 0.6)
		case (strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://")) && installsFrom(c):
			add(FindPackageSource, a, c.Binary+" installs from a URL ("+a+")", 0.6)
		case a == "--index-url" || a == "-i" || a == "--extra-index-url" || a == "--registry":
			if i+2 < len(c.Argv) {
				add(FindPackageSource, c.Argv[i+2], c.Binary+" installs from another index ("+c.Argv[i+2]+")", 0.6)
			}
		case strings.HasPrefix(a, "--index-url=") || strings.HasPrefix(a, "--extra-index-url=") || strings.HasPrefix(a, "--registry="):
			_, v, _ := strings.Cut(a, "=")
			add(FindPackageSource, v, c.Binary+" installs from another index ("+v+")", 0.6)
		}
	}
}

// installsFrom reports whether c is an install (not, say, pip download of
// a page or npm view of a URL).
func installsFrom(c Command) bool {
	head := c.Argv[1:min(3, len(c.Argv))]
	return slices.ContainsFunc(head, func(a string) bool { return a == "install" || a == "i" || a == "add" })
}

// credentialDir matches a directory that holds credentials (not a file
// in it, which secretStore judges).
var credentialDir = regexp.MustCompile(`(?:^|/)(?:\.ssh|\.aws|\.gnupg|\.password-store|\.kube|\.docker|\.azure|\.config/gcloud|\.config/gh|\.local/share/keyrings|Library/Keychains|\.mozilla/firefox|\.config/google-chrome|\.config/chromium)/?$`)

// dirReaders read every file of a directory they are given (archivers,
// copiers, recursive searches, uploaders).
var dirReaders = map[string]bool{"tar": true, "zip": true, "7z": true, "rar": true, "cpio": true, "cp": true, "rsync": true, "scp": true,
	"rclone": true, "grep": true, "egrep": true, "rg": true, "ag": true, "ack": true, "cat": true, "base64": true, "xxd": true, "gzip": true,
	"find": true, "sftp": true, "aws": true, "gsutil": true, "curl": true, "nc": true, "socat": true, "git": false}

// credentialDirs finds a whole credential directory read: archived,
// copied, searched or uploaded (tar cz -C ~ .aws, grep -r key ~/.aws, a
// search tool's path), which reads every secret in it. Listing it (ls)
// reads none.
func (a *Analysis) credentialDirs(cwd string, add func(string, string, string, float64)) {
	for _, c := range a.Commands {
		if !dirReaders[c.Binary] {
			continue
		}
		dir := cmp.Or(c.Dir, cwd)
		for i, w := range c.Argv[1:] {
			if (w == "-C" || w == "--directory") && c.Binary == "tar" && i+2 < len(c.Argv) {
				dir = resolve(c.Argv[i+2], dir)
			}
		}
		for _, op := range operands(c.Argv) {
			p := resolve(strings.TrimPrefix(op, "@"), dir)
			if credentialDir.MatchString(p) && (strings.HasPrefix(p, "~") || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "$HOME")) {
				add(FindSecretRead, p, c.Binary+" reads every file of "+p+", which holds credentials", 1)
			}
		}
	}
	if len(a.Commands) == 0 && a.ToolNative != "" {
		for _, p := range a.Paths {
			if credentialDir.MatchString(p) {
				add(FindSecretRead, p, a.ToolNative+" reads "+p+", which holds credentials", 1)
			}
		}
	}
}

// tarMembers are the files a tar command names to archive: its operands
// less the archive (-f FILE, -cf FILE, --file=FILE) and a -C directory.
func tarMembers(argv []string) []string {
	var out []string
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--file" || a == "-C" || a == "--directory" || !strings.HasPrefix(a, "--") && strings.HasPrefix(a, "-") && strings.HasSuffix(a, "f") ||
			i == 1 && !strings.HasPrefix(a, "-") && strings.HasSuffix(a, "f"):
			i++ // the archive, or the directory
		case strings.HasPrefix(a, "-") || i == 1:
		default:
			out = append(out, a)
		}
	}
	return out
}

// persistenceConfidence is how sure a write of p (persisting code as r
// says) is harm: a project's own shared hooks and editor tasks (.husky,
// .vscode/tasks.json) are often the project's setup, and are asked;
// everything else persists outright.
func persistenceConfidence(p, r string) float64 {
	if strings.Contains(p, "/.husky/") || strings.HasSuffix(p, "/.vscode/tasks.json") || r == "an editor's start-up file" {
		return 0.6
	}
	return 1
}

// mcpDeletes reports whether an MCP tool's name says it deletes what its
// arguments name.
func mcpDeletes(native string) bool {
	_, tool, _ := strings.Cut(strings.TrimPrefix(native, "mcp__"), "__")
	tool = strings.ToLower(tool)
	return strings.Contains(tool, "delete") || strings.Contains(tool, "remove") || strings.HasPrefix(tool, "rm") || strings.Contains(tool, "_rm")
}

// homeInCode matches the ways code spells the home directory.
var homeInCode = regexp.MustCompile(`os\.path\.expanduser\(\s*["']~["']\s*\)|(?:pathlib\.)?Path\.home\(\)|os\.environ\[["']HOME["']\]|os\.getenv\(\s*["']HOME["']\s*\)|os\.homedir\(\)|Dir\.home|ENV\[["']HOME["']\]|\$ENV\{HOME\}|os\.UserHomeDir\(\)|process\.env\.HOME`)

// homeInString matches the home directory interpolated into a string:
// "$ENV{HOME}", "#{Dir.home}", "${os.homedir()}", "$HOME".
var homeInString = regexp.MustCompile(`\$ENV\{HOME\}|#\{Dir\.home\}|#\{ENV\[["']HOME["']\]\}|\$\{os\.homedir\(\)\}|\$\{process\.env\.HOME\}|\{Path\.home\(\)\}`)

// concatLiterals matches two string literals joined by +, ., or , (Python's
// and JavaScript's +, Perl's and PHP's .).
var concatLiterals = regexp.MustCompile(`(["'])([^"'\n]*)["']\s*[+.]\s*["']([^"'\n]*)(["'])`)

// foldCode makes the home directory and joined literals in code plain
// strings: 'rm -rf ' + os.path.expanduser('~') is 'rm -rf ~'.
func foldCode(code string) string {
	if len(code) > maxContent {
		return code
	}
	out := code
	if holdsAny(code, "HOME", "home", "expanduser") {
		out = homeInString.ReplaceAllString(out, "~")
		out = homeInCode.ReplaceAllString(out, `"~"`)
	}
	if !holdsAny(out, "' +", "\" +", "'+", "\"+", "' .", "\" .") {
		return out
	}
	for range 4 {
		next := concatLiterals.ReplaceAllString(out, `$1$2$3$1`)
		if next == out {
			break
		}
		out = next
	}
	return out
}

// findName is the literal name a find expression selects with -name (no
// glob characters), or "".
func findName(argv []string) string {
	for i, a := range argv {
		if (a == "-name" || a == "-iname") && i+1 < len(argv) && !strings.ContainsAny(argv[i+1], "*?[") {
			return argv[i+1]
		}
	}
	return ""
}
