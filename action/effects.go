package action

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
)

// Effects: every word of a command is read for the paths it names — an
// operand, an option's value (-oFILE, --output=FILE, -oG=FILE, key=FILE),
// a file an option reads (@FILE, file://FILE), a path inside a longer word
// (inline code, a configuration line given as an argument) — and each is
// judged by the worst the program can do with it. A program known only to
// read what it names reads it; any program writes what it names as the
// value of an output option; a program the analysis does not know, and
// inline code, may write whatever it names. A list of known programs can
// never be complete; the effects a program can have on a protected path can
// be: so any program naming a key reads a secret, and any program that may
// write a shell start-up file persists code, whatever its name, while the
// same program on src/app.ts stays ordinary.

// readOnlyBinaries only read the files they name (output options aside).
var readOnlyBinaries = map[string]bool{
	"cat": true, "less": true, "more": true, "head": true, "tail": true, "grep": true, "egrep": true, "fgrep": true, "rg": true,
	"ls": true, "stat": true, "file": true, "wc": true, "diff": true, "cmp": true, "md5sum": true, "sha256sum": true, "sha1sum": true,
	"sha512sum": true, "b2sum": true, "cksum": true, "du": true, "tree": true, "bat": true, "jq": true, "yq": true, "echo": true,
	"printf": true, "test": true, "[": true, "[[": true, "realpath": true, "readlink": true, "basename": true, "dirname": true,
	"cd": true, "pwd": true, "nl": true, "tac": true, "od": true, "hexdump": true, "strings": true, "cut": true, "column": true,
	"fold": true, "fmt": true, "expand": true, "unexpand": true, "look": true, "zcat": true, "zless": true, "bzcat": true, "xzcat": true,
	"source": true, ".": true, "type": true, "which": true, "whereis": true, "command": true, "ag": true, "ack": true, "fd": true,
	"locate": true, "ldd": true, "nm": true, "readelf": true, "objdump": true, "lsattr": true, "getfacl": true,
	"namei": true, "exa": true, "eza": true, "sha224sum": true, "sha384sum": true, "shellcheck": true,
}

var readOnlyGit = map[string]bool{"status": true, "diff": true, "log": true, "show": true, "blame": true, "ls-files": true,
	"grep": true, "rev-parse": true, "cat-file": true, "ls-tree": true, "describe": true, "shortlog": true, "whatchanged": true}

// ReadsOnly reports whether c only reads the files it names (the values
// of output options aside, which any program writes).
func ReadsOnly(c Command) bool {
	args := c.Argv[1:]
	switch c.Binary {
	case "sed":
		return !InPlace(c) && len(SedWrites(c)) == 0
	case "find":
		return !slices.ContainsFunc(args, func(a string) bool {
			return a == "-delete" || strings.HasPrefix(a, "-exec") || a == "-ok" || a == "-okdir" || strings.HasPrefix(a, "-fprint") || a == "-fls"
		})
	case "git":
		if slices.ContainsFunc(args, func(a string) bool {
			return strings.HasPrefix(a, "--out") || strings.HasPrefix(a, "-c") || strings.HasPrefix(a, "--config")
		}) {
			return false // writes a file, or runs with configuration of its own
		}
		sub, _ := gitSub(c.Argv)
		return readOnlyGit[sub]
	case "xxd":
		return !slices.Contains(args, "-r")
	}
	return readOnlyBinaries[c.Binary]
}

// knownPrograms are programs whose handling of their arguments the
// analysis reads (what they write, delete, send and run is found
// elsewhere): a path they name is read unless they are found to write
// it. Every other program may write what it names.
var knownPrograms = map[string]bool{
	"git": true, "go": true, "gofmt": true, "cargo": true, "npm": true, "npx": true, "pnpm": true, "yarn": true, "pip": true,
	"pip3": true, "uv": true, "poetry": true, "pytest": true, "make": true, "gmake": true, "docker": true, "podman": true,
	"kubectl": true, "helm": true, "gh": true, "glab": true, "curl": true, "wget": true, "ssh": true, "scp": true, "rsync": true,
	"sftp": true, "tar": true, "zip": true, "unzip": true, "gzip": true, "gunzip": true, "cp": true, "mv": true, "rm": true,
	"rmdir": true, "mkdir": true, "touch": true, "tee": true, "ln": true, "chmod": true, "chown": true, "dd": true, "truncate": true,
	"shred": true, "install": true, "sort": true, "uniq": true, "tr": true, "base64": true, "sed": true, "env": true,
	"export": true, "unset": true, "set": true, "alias": true, "cd": true, "pushd": true, "popd": true, "true": true, "false": true,
	":": true, "sleep": true, "date": true, "kill": true, "ps": true, "id": true, "whoami": true, "uname": true, "hostname": true,
	"mvn": true, "gradle": true, "terraform": true, "tsc": true, "eslint": true, "prettier": true, "jest": true, "vitest": true,
	"ruff": true, "black": true, "mypy": true, "rustfmt": true, "rustup": true, "dotnet": true,
}

// codeWrites matches inline code that can write, move, delete or run
// something (any language): a write mode, a write, copy, rename or delete
// call, a command runner.
var codeWrites = regexp.MustCompile(`["'][wax]b?\+?["']|['"]r\+|\bwrite|Write|\bappend|\bcopy|\bmove|\brename|\bunlink|\bremove|\brm(?:tree|Sync|dir)?\b|\bdelete|\bchmod|\bchown|\bsymlink|\bsystem\b|\bexec|\bspawn|\bpopen|subprocess|child_process|\bputs\b[^\n]{0,40}File|>>?\s*["'$]|\bdump\(|\bsave|\bmkdir|truncate|shutil|FileUtils|fs\.|\bopen\s*\([^)\n]{0,120},\s*["']?[wa]|\$\(|\btouch\b|\bio\.open|\bfopen|\bfputs|\bfile_put|\bOut-File|Set-Content|Add-Content`)

// outputOptions are options whose value is a file the program writes,
// whatever the program: -o FILE and its spellings.
func outputOption(opt string) bool {
	switch opt {
	case "-o", "--output", "--out", "--outfile", "--output-file", "--out-file", "--output-document", "--log-file", "--logfile",
		"--dump-bin", "-oG", "-oN", "-oX", "-oA", "--save", "--target-file", "--write", "--log", "-Logfile":
		return true
	}
	return false
}

// effects reads every word of every command for the paths it names and
// adds them: to Paths (every program reads what it names) and to MayWrite
// (what the program may write, judged by the worst it can do). It runs
// after the commands are known, before findings.
func (a *Analysis) effects(cwd string) {
	for i := 0; i < len(a.Commands) && i < 256; i++ {
		c := a.Commands[i]
		dir := cmp.Or(c.Dir, cwd)
		readOnly := ReadsOnly(c)
		unknown := !readOnly && !knownPrograms[c.Binary] && !IsShellBuiltin(c.Binary)
		code, lang := inlineCode(c)
		_, otherCode := otherInterpreters[c.Binary]
		// Inline code may write what it names when it calls anything that
		// writes, moves, deletes or runs; code that only opens and prints
		// reads.
		if code != "" {
			unknown = false // the code is read: it writes what it names only if it calls something that writes
		}
		mayWriteAll := unknown || otherCode || lang != "" && (lang == "awk" && codeCalls(code, lang) || lang != "awk" && codeWrites.MatchString(code))
		for _, e := range c.Env {
			if _, v, ok := strings.Cut(e, "="); ok {
				for _, p := range WordPaths(v) {
					a.named(resolve(p, dir), false)
				}
			}
		}
		if c.Heredoc != "" && (c.Binary == "sftp" || c.Binary == "ftp" || c.Binary == "lftp") {
			for _, p := range WordPaths(c.Heredoc) {
				a.named(resolve(p, dir), false) // put FILE: it reads FILE
			}
		}
		if c.Heredoc != "" && !shells[c.Binary] && (mayWriteAll || lang != "") {
			// What a program the analysis does not know reads as its
			// input is code or commands (sqlite3's .import, a REPL).
			for _, p := range WordPaths(c.Heredoc) {
				a.named(resolve(p, dir), true)
			}
		}
		extracts := c.Binary == "tar" && destructiveTar(c)
		// echo and printf read nothing they name: their words are text
		// they print — to a file, or the terminal. Piped into another
		// command, the words are that command's input, which may take
		// them as names (xargs cat), so they count.
		printsOnly := (c.Binary == "echo" || c.Binary == "printf") && !(i+1 < len(a.Commands) && a.Commands[i+1].Stage == c.Stage+1)
		scripts := sedScripts(c)
		for j := 1; j < len(c.Argv) && !printsOnly; j++ {
			word := c.Argv[j]
			if scripts[j] {
				// A sed script names files only in its r and R commands
				// (what it writes, w and W, is SedWrites'); the rest is
				// patterns and text it inserts.
				for _, m := range sedRead.FindAllStringSubmatch(word, 4) {
					a.named(resolve(m[1], dir), false)
				}
				continue
			}
			if strings.HasPrefix(word, "--eval") || extracts && (strings.HasPrefix(word, "--xform") || strings.HasPrefix(word, "--transform")) {
				// Code given to an option (make --eval), names rewritten
				// by an extraction: what they name may be written.
				v := strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(word, "--eval"), "--xform"), "--transform"), "=")
				if v == "" && j+1 < len(c.Argv) {
					j++
					v = c.Argv[j]
				}
				for _, p := range append(WordPaths(v), embeddedProtected(v)...) {
					a.named(resolve(p, dir), true)
				}
				continue
			}
			if !readOnly && outputOption(word) && j+1 < len(c.Argv) {
				for _, p := range WordPaths(c.Argv[j+1]) {
					a.named(resolve(p, dir), true)
				}
				j++
				continue
			}
			if k, v, ok := strings.Cut(word, "="); ok && !readOnly && outputOption(k) {
				for _, p := range WordPaths(v) {
					a.named(resolve(p, dir), true)
				}
				continue
			}
			if strings.HasPrefix(word, "-o") && len(word) > 2 && !strings.HasPrefix(word, "--") && pathStart(word[2:]) {
				a.named(resolve(word[2:], dir), !readOnly) // -oFILE
				continue
			}
			for _, p := range WordPaths(word) {
				a.named(resolve(p, dir), mayWriteAll)
			}
			if c.Dir != "" && !strings.HasPrefix(word, "-") && !looksPath(word) {
				// cd ~/.ssh && cat id_ed25519: a bare name is a file where
				// the cd went.
				if p := resolve(word, dir); secretStore(p) || persistencePath(p) != "" {
					a.named(p, mayWriteAll)
				}
			}
		}
		if c.Binary != "" && strings.Contains(c.Argv[0], "/") {
			// A word read as the program (a line of text fed to an
			// interactive program: s~/.bashrc) names what it names.
			for _, p := range embeddedProtected(c.Argv[0]) {
				a.named(resolve(p, dir), true)
			}
		}
	}
}

// named adds a path a command names: it reads it, and may write it.
func (a *Analysis) named(p string, mayWrite bool) {
	if p == "" || StreamDevice(p) {
		return
	}
	a.Paths = append(a.Paths, p)
	if mayWrite && !slices.Contains(a.WritePaths, p) {
		a.MayWrite = append(a.MayWrite, p)
	}
}

// pathStart reports whether s begins as a path does: /, ~, ./, ../ or
// $HOME.
func pathStart(s string) bool {
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") ||
		strings.HasPrefix(s, "$HOME") || strings.HasPrefix(s, "${HOME}")
}

// wordSeparators split a word into the tokens that may each be a path:
// code and configuration lines given as one argument are read token by
// token.
func wordSeparator(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\'', '"', '`', '(', ')', ',', ';', '{', '}', '[', ']', '<', '>', '|', '&':
		return true
	}
	return false
}

// WordPaths are the paths a word of a command line names: the word itself
// when it is a path; the value of --opt=PATH, -x=PATH or key=PATH; a file
// an option reads (@PATH, file://PATH); and each token of a longer word
// (code, a configuration line) that is one of these. A protected path
// inside a token (s~/.bashrc, --xform=s@.*@~/.bashrc@) is found too.
func WordPaths(word string) []string {
	if word == "" || len(word) > 1<<14 {
		return nil
	}
	var out []string
	add := func(p string) {
		p = strings.TrimRight(p, ".:!?")
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	tokens := []string{word}
	if strings.IndexFunc(word, wordSeparator) >= 0 {
		tokens = strings.FieldsFunc(word, wordSeparator)
	}
	split := len(tokens) > 1
	for _, t := range tokens {
		if split && strings.HasPrefix(t, ".") && !strings.HasPrefix(t, "./") && !strings.HasPrefix(t, "../") && !strings.Contains(t, "/") && !protectedDot[t] {
			continue // .keys() in code is a method, not a hidden file (a whole word .env is still one)
		}
		t = strings.TrimPrefix(t, "@")
		if rest, ok := strings.CutPrefix(t, "file://"); ok {
			t = rest
		}
		if looksPath(t) && !strings.Contains(t, "=") {
			add(t)
			continue
		}
		if _, v, ok := strings.Cut(t, "="); ok {
			v = strings.TrimPrefix(strings.TrimPrefix(v, "@"), "file://")
			if looksPath(v) {
				add(v)
				continue
			}
		}
		for _, p := range embeddedProtected(t) {
			add(p)
		}
	}
	return out
}

// protectedDot are hidden files that name what they are even as one token
// of code or a configuration line.
var protectedDot = map[string]bool{".env": true, ".bashrc": true, ".zshrc": true, ".profile": true, ".bash_profile": true, ".netrc": true,
	".npmrc": true, ".pypirc": true, ".git-credentials": true, ".pgpass": true, ".my.cnf": true, ".ssh": true, ".aws": true, ".gnupg": true}

// protectedLits are the literal parts of the paths protected wherever they
// are (credential stores, start-up files, instruction files, hook
// configuration): a token that holds one names that path.
var protectedLits = []string{"/.ssh/", "/.aws/", "/.bashrc", "/.bash_profile", "/.bash_login", "/.profile", "/.zshrc", "/.zprofile",
	"/.zshenv", "/.zlogin", "/.gnupg", "/.kube/config", "/.docker/config.json", "/.netrc", "/.git-credentials", "/.config/",
	"/.npmrc", "/.pypirc", "/.pgpass", "/.claude/", "/.cursor/", "/.gemini/", "/.codex/", "/.copilot/", "/.git/hooks",
	"/etc/passwd", "/etc/shadow", "/etc/sudoers", "/etc/cron", "/etc/profile", "/etc/ld.so.preload", "/.vault-token",
	"/CLAUDE.md", "/AGENTS.md", "/GEMINI.md", "/.agentledger", "/agentledger-hook", "/.local/share/agentledger"}

// embeddedProtected returns the protected paths inside a token that is
// not itself a path: the path starts at the first ~, $HOME or / before
// the protected part.
func embeddedProtected(t string) []string {
	if !holdsAny(t, "/.", "/etc/", ".md", "agentledger") {
		return nil // every protected part has one of these
	}
	var out []string
	for _, lit := range protectedLits {
		i := strings.Index(t, lit)
		if i < 0 {
			continue
		}
		start := i
		for _, pre := range []string{"~", "${HOME}", "$HOME"} {
			if k := strings.LastIndex(t[:i+1], pre); k >= 0 && k < start {
				start = k
				break
			}
		}
		if start == i {
			// The first / of the token before the protected part.
			if k := strings.Index(t[:i+1], "/"); k >= 0 {
				start = k
			}
		}
		end := i + len(lit)
		for end < len(t) && !strings.ContainsRune("@:=,;", rune(t[end])) {
			end++
		}
		out = append(out, t[start:end])
	}
	return out
}

// destructiveTar reports whether a tar command extracts (and so writes
// what it extracts, where it is told).
func destructiveTar(c Command) bool {
	return slices.ContainsFunc(c.Argv[1:], func(a string) bool {
		return a == "--extract" || a == "--get" || !strings.HasPrefix(a, "--") && strings.Contains(a, "x") && (strings.HasPrefix(a, "-") || a == c.Argv[1])
	})
}

// sedRead matches sed's r and R commands with the file they read.
var sedRead = regexp.MustCompile(`(?:^|[;{}\s0-9$])[rR]\s+(\S+)`)

// sedScripts are the indexes in c.Argv of sed's scripts: each -e value, or
// the first operand when no -e or -f gives one.
func sedScripts(c Command) map[int]bool {
	if c.Binary != "sed" {
		return nil
	}
	out := map[int]bool{}
	given := false
	for j := 1; j < len(c.Argv); j++ {
		switch arg := c.Argv[j]; {
		case (arg == "-e" || arg == "--expression") && j+1 < len(c.Argv):
			j++
			out[j], given = true, true
		case arg == "-f" || strings.HasPrefix(arg, "--file"):
			given = true
		case !given && !strings.HasPrefix(arg, "-"):
			out[j] = true
			return out
		}
	}
	return out
}
