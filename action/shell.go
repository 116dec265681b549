package action

import (
	"slices"
	"strings"
)

// Command is one simple command found in a shell command line, after
// wrappers (sudo, env, xargs, nohup, timeout, ...) are peeled off.
type Command struct {
	Binary string   `json:"binary"` // base name of argv[0]
	Argv   []string `json:"argv"`
	// Stage is the position in its pipeline, from 0; Piped is true when
	// the command reads another command's output.
	Stage int  `json:"stage"`
	Piped bool `json:"piped,omitempty"`
	// Via names the wrapper or interpreter the command was found inside
	// (sudo, sh -c, eval, $(...), base64).
	Via []string `json:"via,omitempty"`
	// Redirects are files written with > or >>.
	Redirects []string `json:"redirects,omitempty"`
	// Inputs are files read on standard input with < (or <>).
	Inputs []string `json:"inputs,omitempty"`
	// Env are the NAME=value assignments the command runs with (before
	// it, or given to env), as written.
	Env []string `json:"env,omitempty"`
	// Dir is the directory the command runs in when a cd earlier on the
	// line changed it (resolved against the call's working directory).
	Dir string `json:"dir,omitempty"`
	// Heredoc is the here-document or here-string the command reads on
	// its standard input, when it is one.
	Heredoc string `json:"heredoc,omitempty"`
}

// maxShellDepth bounds nested sh -c / eval / $(...) / base64 unwrapping.
const maxShellDepth = 4

// ParseShell splits a command line into its simple commands, unwrapping
// sh -c/bash -c strings, eval, command and process substitution, brace
// groups, subshells, control flow, here-documents fed to a shell and
// wrappers. It never fails: a line the bash parser rejects is read by a
// tolerant tokenizer (unbalanced quotes end at the end of the input).
func ParseShell(line string) []Command {
	var out []Command
	parseShell(line, nil, 0, &out)
	return out
}

func parseShell(line string, via []string, depth int, out *[]Command) {
	if depth > maxShellDepth {
		return
	}
	if parseShellAST(line, via, depth, out) {
		return
	}
	// The bash parser rejects the line (unbalanced quotes, a syntax only
	// another shell has): read it with the tolerant tokenizer instead.
	toks, subs := tokenize(line)
	for _, s := range subs {
		parseShell(s, append(clone(via), "$()"), depth+1, out)
	}
	stage := 0
	var cur []token
	flush := func(piped bool) {
		if len(cur) > 0 {
			emit(cur, stage, piped, via, depth, out)
		}
		cur = nil
	}
	piped := false
	for _, t := range toks {
		if t.op != "" {
			switch t.op {
			case "|", "|&":
				flush(piped)
				stage++
				piped = true
			default: // ; && || & newline
				flush(piped)
				stage = 0
				piped = false
			}
			continue
		}
		cur = append(cur, t)
	}
	flush(piped)
}

func clone(s []string) []string { return append([]string(nil), s...) }

// wrappers run the rest of their arguments as a command. The value is the
// number of leading flag arguments that take a value, by flag.
var wrappers = map[string]map[string]bool{
	"sudo":    {"-u": true, "-g": true, "-C": true, "-D": true, "-h": true, "-p": true, "-r": true, "-t": true, "-U": true},
	"doas":    {"-u": true, "-C": true},
	"env":     {"-u": true, "-C": true, "-S": false},
	"nohup":   {},
	"time":    {"-f": true, "-o": true},
	"nice":    {"-n": true},
	"ionice":  {"-c": true, "-n": true},
	"timeout": {"-s": true, "-k": true, "--signal": true, "--kill-after": true},
	"xargs":   {"-I": true, "-n": true, "-P": true, "-d": true, "-L": true, "-s": true, "-E": true, "-a": true},
	"command": {},
	"exec":    {"-a": true},
	"builtin": {},
	"stdbuf":  {"-i": true, "-o": true, "-e": true},
	"chroot":  {},
	"watch":   {"-n": true},
	"strace":  {"-o": true, "-e": true, "-p": true},
	// Multi-call binaries: the first argument names the applet.
	"busybox": {},
	"toybox":  {},
	// Programs that run the rest of their arguments in another session,
	// through a proxy or unbuffered.
	"setsid":      {},
	"unbuffer":    {},
	"torsocks":    {},
	"proxychains": {"-f": true}, "proxychains4": {"-f": true},
	"caffeinate": {"-t": true, "-w": true},
	"runuser":    {"-u": true, "-g": true, "-G": true},
	"chronic":    {},
}

// shellBuiltins run inside the shell; they are not binaries to allow.
var shellBuiltins = map[string]bool{
	"cd": true, "export": true, "unset": true, "set": true, "alias": true, "read": true, "exit": true, "return": true,
	"local": true, "declare": true, "test": true, "[": true, "[[": true, "pwd": true, "printf": true, "echo": true,
	"type": true, "shift": true, "wait": true, "trap": true, "source": true, ".": true, "ulimit": true, "umask": true, "true": true, "false": true, ":": true,
}

// IsShellBuiltin reports whether name is a shell builtin.
func IsShellBuiltin(name string) bool { return shellBuiltins[name] }

// cRunners are programs whose -c option's value is a command line.
var cRunners = map[string]bool{"su": true, "script": true, "npx": true}

// shells are interpreters whose -c argument is itself a command line.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "fish": true, "ash": true}

func emit(toks []token, stage int, piped bool, via []string, depth int, out *[]Command) {
	var argv, redirects, inputs, env []string
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.redirect != "" {
			switch {
			case t.text == "" || strings.HasPrefix(t.text, "&"):
			case strings.HasPrefix(t.redirect, ">"):
				redirects = append(redirects, t.text)
			case t.redirect == "<" || t.redirect == "<>":
				inputs = append(inputs, t.text)
			}
			continue
		}
		argv = append(argv, t.text)
	}
	// Leading VAR=value assignments.
	for len(argv) > 0 && isAssignment(argv[0]) {
		env = append(env, argv[0])
		argv = argv[1:]
	}
	for len(argv) > 0 {
		bin := base(argv[0])
		flags, isWrapper := wrappers[bin]
		if !isWrapper {
			break
		}
		via = append(clone(via), bin)
		i := 1
		for i < len(argv) {
			a := argv[i]
			if bin == "env" && isAssignment(a) {
				env = append(env, a)
				i++
				continue
			}
			if bin == "env" && (a == "-S" || a == "--split-string") && i+1 < len(argv) {
				argv = slices.Concat(argv[:i], splitWords(argv[i+1]), argv[i+2:])
				continue
			}
			if bin == "timeout" && i == 1 && !strings.HasPrefix(a, "-") {
				i++ // the duration
				break
			}
			if bin == "nice" && strings.HasPrefix(a, "-") && len(a) > 1 && a[1] >= '0' && a[1] <= '9' {
				i++
				continue
			}
			if !strings.HasPrefix(a, "-") || a == "-" {
				break
			}
			if a == "--" {
				i++
				break
			}
			i++
			if flags[a] && i < len(argv) {
				switch {
				case bin == "xargs" && a == "-a":
					inputs = append(inputs, argv[i]) // xargs -a FILE reads FILE
				case (bin == "time" || bin == "strace") && a == "-o":
					redirects = append(redirects, argv[i]) // writes its report to FILE
				}
				i++
			}
		}
		if bin == "timeout" && i < len(argv) && isDuration(argv[i]) {
			i++
		}
		if i >= len(argv) {
			// The wrapper alone runs nothing else (env, time): it is the
			// command.
			via = via[:len(via)-1]
			break
		}
		argv = argv[i:]
	}
	if len(argv) == 0 {
		return
	}
	bin := base(argv[0])
	cmd := Command{Binary: bin, Argv: argv, Stage: stage, Piped: piped, Via: via, Redirects: redirects, Inputs: inputs, Env: env}
	*out = append(*out, cmd)
	// Interpreters of command strings.
	switch {
	case shells[bin]:
		for i := 1; i < len(argv); i++ {
			a := argv[i]
			if a == "-c" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
				if i+1 < len(argv) {
					parseShell(argv[i+1], append(clone(via), bin+" -c"), depth+1, out)
				}
				break
			}
		}
	case bin == "eval":
		parseShell(strings.Join(argv[1:], " "), append(clone(via), "eval"), depth+1, out)
	case cRunners[bin]:
		// su -c CMD, script -qc CMD FILE, npx -c CMD: the
		// value of their -c is a command line.
		for i := 1; i+1 < len(argv); i++ {
			a := argv[i]
			if a == "-c" || a == "--command" || bin != "npx" && strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "c") {
				parseShell(argv[i+1], append(clone(via), bin+" -c"), depth+1, out)
				break
			}
			if v, ok := strings.CutPrefix(a, "--command="); ok {
				parseShell(v, append(clone(via), bin+" -c"), depth+1, out)
				break
			}
		}
	}
}

func isDuration(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c >= '0' && c <= '9' || c == '.' {
			continue
		}
		return i == len(s)-1 && strings.ContainsRune("smhd", c)
	}
	return true
}

func isAssignment(s string) bool {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return false
	}
	for i, c := range s[:eq] {
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

func base(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// token is a word, an operator, or a redirection with its target.
type token struct {
	text     string
	op       string // | || && ; & |& or newline
	redirect string // > >> < 2> ... with text the target
}

// tokenize splits a command line into words and operators, honouring single
// and double quotes and backslashes, and returns the contents of $(...) and
// backquotes found in it for separate parsing.
func tokenize(s string) ([]token, []string) {
	var toks []token
	var subs []string
	var b strings.Builder
	inWord := false
	pendingRedirect := ""
	word := func() {
		if !inWord {
			return
		}
		t := token{text: b.String()}
		if pendingRedirect != "" {
			t.redirect, pendingRedirect = pendingRedirect, ""
		}
		toks = append(toks, t)
		b.Reset()
		inWord = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			if s[i+1] == '\n' {
				i++
				continue
			}
			b.WriteByte(s[i+1])
			inWord = true
			i++
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			b.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			i++
			for i < len(s) && s[i] != '"' {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					b.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '$' && i+1 < len(s) && s[i+1] == '(' {
					inner, n := balanced(s[i+1:])
					subs = append(subs, inner)
					b.WriteString(s[i : i+1+n])
					i += 1 + n
					continue
				}
				if s[i] == '`' {
					j := strings.IndexByte(s[i+1:], '`')
					if j >= 0 {
						subs = append(subs, s[i+1:i+1+j])
						b.WriteString(s[i : i+2+j])
						i += j + 2
						continue
					}
				}
				b.WriteByte(s[i])
				i++
			}
			inWord = true
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			inner, n := balanced(s[i+1:])
			subs = append(subs, inner)
			b.WriteString(s[i : i+1+n])
			inWord = true
			i += n
		case c == '`':
			j := strings.IndexByte(s[i+1:], '`')
			if j < 0 {
				j = len(s) - i - 1
			}
			subs = append(subs, s[i+1:i+1+j])
			inWord = true
			i += j + 1
		case c == ' ' || c == '\t':
			word()
		case c == '\n' || c == ';':
			word()
			toks = append(toks, token{op: ";"})
		case c == '(' || c == ')' || c == '{' && !inWord || c == '}' && !inWord:
			word()
			toks = append(toks, token{op: ";"})
		case c == '|':
			word()
			switch {
			case i+1 < len(s) && s[i+1] == '|':
				toks = append(toks, token{op: "||"})
				i++
			case i+1 < len(s) && s[i+1] == '&':
				toks = append(toks, token{op: "|&"})
				i++
			default:
				toks = append(toks, token{op: "|"})
			}
		case c == '&':
			if i+1 < len(s) && s[i+1] == '>' { // &> file
				word()
				pendingRedirect = ">"
				i++
				if i+1 < len(s) && s[i+1] == '>' {
					i++
				}
				continue
			}
			word()
			if i+1 < len(s) && s[i+1] == '&' {
				toks = append(toks, token{op: "&&"})
				i++
			} else {
				toks = append(toks, token{op: "&"})
			}
		case c == '>' || c == '<':
			// A digit just before makes it an fd redirect (2>).
			if inWord && isDigits(b.String()) {
				b.Reset()
				inWord = false
			}
			word()
			r := string(c)
			if i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '<') {
				r += string(s[i+1])
				i++
			}
			if i+1 < len(s) && s[i+1] == '&' { // 2>&1
				i++
				for i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' || i+1 < len(s) && s[i+1] == '-' {
					i++
				}
				continue
			}
			pendingRedirect = r
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	word()
	return toks, subs
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// balanced returns the text inside the parenthesis that s starts with, and
// how many bytes of s the parenthesized part spans.
func balanced(s string) (string, int) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[1:i], i + 1
			}
		}
	}
	return s[1:], len(s)
}

// splitWords splits s into words as the shell would, quotes removed (env
// -S 'bash -c "rm -rf ~"' is bash, -c, rm -rf ~).
func splitWords(s string) []string {
	toks, _ := tokenize(s)
	var out []string
	for _, t := range toks {
		if t.op == "" && t.redirect == "" {
			out = append(out, t.text)
		}
	}
	return out
}
