package action

import (
	"bytes"
	"path"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The shell reader: command lines are parsed with mvdan.cc/sh's bash parser
// (the parser behind shfmt), and its syntax tree is walked for the simple
// commands it runs: in pipelines, lists, brace groups, subshells, control
// flow, function bodies, and command and process substitutions. Input the
// parser rejects falls back to the tolerant tokenizer (tokenize), so that a
// command line is never left unread.

// parseShellAST reads line with the bash parser and reports whether it
// could; the commands it finds are appended to out.
func parseShellAST(line string, via []string, depth int, out *[]Command) bool {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return false
	}
	w := &shellWalker{via: via, depth: depth, out: out}
	w.stmts(f.Stmts)
	return true
}

type shellWalker struct {
	via   []string
	depth int
	out   *[]Command
	// vars and aliases defined earlier on the line: x=rm; $x -rf /.
	vars    map[string]string
	aliases map[string][]string
	// stdin are the words the previous stage of a pipeline echoes, which
	// xargs turns into arguments; stdinText is that text whole.
	stdin     []string
	stdinText string
}

func (w *shellWalker) stmts(sts []*syntax.Stmt) {
	for _, st := range sts {
		w.pipeline(st)
	}
}

// pipeline walks a statement that may be a pipeline: its commands get
// stages 0, 1, ...; each after the first reads the one before.
func (w *shellWalker) pipeline(st *syntax.Stmt) {
	var parts []*syntax.Stmt
	var flatten func(s *syntax.Stmt)
	flatten = func(s *syntax.Stmt) {
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) && len(s.Redirs) == 0 {
			flatten(b.X)
			flatten(b.Y)
			return
		}
		parts = append(parts, s)
	}
	flatten(st)
	w.stdin = nil
	for i, p := range parts {
		before := len(*w.out)
		w.stmt(p, i, i > 0)
		w.stdin = nil
		w.stdinText = ""
		if added := (*w.out)[before:]; len(added) > 0 && (added[0].Binary == "echo" || added[0].Binary == "printf") {
			w.stdinText = printed(added[0].Argv)
			w.stdin = strings.Fields(w.stdinText)
		}
	}
	w.stdin, w.stdinText = nil, ""
}

func (w *shellWalker) stmt(st *syntax.Stmt, stage int, piped bool) {
	var redirects, inputs []string
	for _, r := range st.Redirs {
		w.substs(r.Word)
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.AppClob:
			if t := wordText(r.Word); t != "" && !strings.HasPrefix(t, "&") {
				redirects = append(redirects, t)
			}
		case syntax.DplOut:
			// >& FILE (not a descriptor, not -) writes both streams to FILE.
			if t := wordText(r.Word); t != "" && t != "-" && strings.Trim(t, "0123456789") != "" && !strings.HasPrefix(t, "&") {
				redirects = append(redirects, t)
			}
		case syntax.RdrIn, syntax.RdrInOut:
			if t := wordText(r.Word); t != "" && !strings.HasPrefix(t, "&") {
				if ex := w.expand(t); len(ex) == 1 {
					t = ex[0] // < "$X", X set earlier on the line
				}
				inputs = append(inputs, t)
			}
		}
	}
	if _, call := st.Cmd.(*syntax.CallExpr); !call && st.Cmd != nil && len(inputs) > 0 {
		// while read l; do …; done < FILE: the loop reads FILE.
		toks := []token{{text: ":"}}
		for _, r := range inputs {
			toks = append(toks, token{redirect: "<", text: r})
		}
		emit(toks, stage, piped, w.via, w.depth, w.out)
	}
	switch c := st.Cmd.(type) {
	case nil:
		if len(inputs) > 0 {
			// $(< FILE) reads FILE.
			emit([]token{{text: ":"}, {redirect: "<", text: inputs[0]}}, stage, piped, w.via, w.depth, w.out)
		}
		if len(redirects) > 0 {
			// > FILE alone truncates FILE: a write like any other.
			emit([]token{{text: ":"}, {redirect: ">", text: redirects[0]}}, stage, piped, w.via, w.depth, w.out)
		}
	case *syntax.CallExpr:
		for _, a := range c.Assigns {
			w.substs(a.Value)
			if len(c.Args) == 0 && a.Name != nil && a.Value != nil {
				if w.vars == nil {
					w.vars = map[string]string{}
				}
				w.vars[a.Name.Value] = wordText(a.Value)
			}
		}
		if len(c.Args) == 0 {
			if len(redirects) > 0 {
				// > FILE alone truncates FILE: a write like any other.
				emit([]token{{text: ":"}, {redirect: ">", text: redirects[0]}}, stage, piped, w.via, w.depth, w.out)
			}
			return
		}
		var argv []string
		for _, a := range c.Args {
			w.substs(a)
			if words := braces(a); words != nil {
				argv = append(argv, words...) // {rm,-rf,/} is rm -rf /
				continue
			}
			argv = append(argv, w.expand(wordText(a))...)
		}
		if len(argv) == 0 {
			return
		}
		argv[0] = programGlob(argv[0])
		if words, ok := w.aliases[argv[0]]; ok {
			argv = append(clone(words), argv[1:]...)
		}
		if argv[0] == "alias" {
			for _, def := range argv[1:] {
				if name, value, ok := strings.Cut(def, "="); ok {
					if w.aliases == nil {
						w.aliases = map[string][]string{}
					}
					w.aliases[name] = strings.Fields(value)
				}
			}
		}
		toks := make([]token, 0, len(c.Assigns)+len(argv)+len(redirects)+len(inputs))
		for _, a := range c.Assigns {
			if a.Name != nil {
				toks = append(toks, token{text: a.Name.Value + "=" + wordText(a.Value)})
			}
		}
		for _, a := range argv {
			toks = append(toks, token{text: a})
		}
		for _, r := range redirects {
			toks = append(toks, token{redirect: ">", text: r})
		}
		for _, r := range inputs {
			toks = append(toks, token{redirect: "<", text: r})
		}
		before := len(*w.out)
		emit(toks, stage, piped, w.via, w.depth, w.out)
		w.stdinOf(st, before)
		w.heredocs(st, argv[0])
	case *syntax.BinaryCmd: // && and ||
		w.pipeline(c.X)
		w.pipeline(c.Y)
	case *syntax.Block:
		w.stmts(c.Stmts)
	case *syntax.Subshell:
		w.stmts(c.Stmts)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			w.stmts(ic.Cond)
			w.stmts(ic.Then)
		}
	case *syntax.WhileClause:
		w.stmts(c.Cond)
		w.stmts(c.Do)
	case *syntax.ForClause:
		syntax.Walk(c.Loop, w.substNode)
		if it, ok := c.Loop.(*syntax.WordIter); ok && it.Name != nil {
			// for d in a b; do rm -rf $d; done reads as rm -rf a b.
			var vals []string
			for _, item := range it.Items {
				vals = append(vals, wordText(item))
			}
			if w.vars == nil {
				w.vars = map[string]string{}
			}
			w.vars[it.Name.Value] = strings.Join(vals, " ")
		}
		w.stmts(c.Do)
	case *syntax.CaseClause:
		w.substs(c.Word)
		for _, it := range c.Items {
			w.stmts(it.Stmts)
		}
	case *syntax.FuncDecl:
		w.pipeline(c.Body)
	case *syntax.TimeClause:
		if c.Stmt != nil {
			w.pipeline(c.Stmt)
		}
	case *syntax.CoprocClause:
		w.pipeline(c.Stmt)
	case *syntax.DeclClause:
		// export NAME=value, declare -x NAME=value: the assignments are
		// the environment of what runs next (LD_AUDIT, PATH, ...): kept as
		// the declaration's arguments, and as the line's variables.
		syntax.Walk(c, w.substNode)
		argv := []string{c.Variant.Value}
		for _, a := range c.Args {
			if a.Name != nil {
				argv = append(argv, a.Name.Value+"="+wordText(a.Value))
				if a.Value != nil {
					if w.vars == nil {
						w.vars = map[string]string{}
					}
					w.vars[a.Name.Value] = wordText(a.Value)
				}
			} else if a.Value != nil {
				argv = append(argv, wordText(a.Value))
			}
		}
		toks := make([]token, 0, len(argv))
		for _, s := range argv {
			toks = append(toks, token{text: s})
		}
		emit(toks, stage, piped, w.via, w.depth, w.out)
	default: // tests, arithmetic: only their substitutions run
		syntax.Walk(c, w.substNode)
	}
}

// expand replaces the variables defined earlier on the line ($x, ${x}) in
// a word by their values, and a default (${X:-word}) of a variable the line
// does not set by the default; a word that is one variable is split into
// words as the shell splits it (on IFS, when the line sets it).
func (w *shellWalker) expand(word string) []string {
	if !strings.Contains(word, "$") {
		return []string{word}
	}
	word = lineDefault.ReplaceAllStringFunc(word, func(m string) string {
		sub := lineDefault.FindStringSubmatch(m)
		if v, ok := w.vars[sub[1]]; ok {
			return v
		}
		if environmentVars[sub[1]] || strings.HasPrefix(sub[1], "XDG_") || strings.Contains(m, "?") {
			return "$" + sub[1] // the caller's own environment: kept as written
		}
		return sub[2]
	})
	if !strings.Contains(word, "$") || len(w.vars) == 0 {
		return []string{word}
	}
	name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(word, "$"), "{"), "}")
	if v, ok := w.vars[name]; ok && (word == "$"+name || word == "${"+name+"}") {
		if ifs, ok := w.vars["IFS"]; ok && ifs != "" {
			return strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(ifs, r) })
		}
		return strings.Fields(v)
	}
	out := shellVar.ReplaceAllStringFunc(word, func(m string) string {
		n := strings.Trim(strings.TrimPrefix(m, "$"), "{}")
		if v, ok := w.vars[n]; ok {
			return v
		}
		return m
	})
	return []string{out}
}

// lineDefault matches ${NAME:-word}, ${NAME-word}, ${NAME:=word} and
// ${NAME=word} with a literal word.
var lineDefault = regexp.MustCompile(`\$\{(\w+):?[-=?]([^{}$]*)\}`)

// environmentVars are variables a command line gets from its caller: a
// default given for them is not what they hold.
var environmentVars = map[string]bool{"HOME": true, "PWD": true, "USER": true, "PATH": true, "TMPDIR": true, "SHELL": true, "OLDPWD": true,
	"LOGNAME": true, "HOSTNAME": true}

// programGlob reads a program named by a glob (/???/??t, /b??/r?) as the
// one program it can match among the usual places, or returns it as it is.
func programGlob(word string) string {
	if !strings.HasPrefix(word, "/") || !strings.ContainsAny(word, "*?[") {
		return word
	}
	for _, dir := range []string{"/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/"} {
		for _, prog := range globbedPrograms {
			if ok, _ := path.Match(word, dir+prog); ok {
				return dir + prog
			}
		}
	}
	return word
}

// globbedPrograms are the programs a glob for a program is tried against.
var globbedPrograms = []string{"rm", "sh", "bash", "dash", "zsh", "cat", "nc", "ncat", "curl", "wget", "python", "python3", "perl", "ruby",
	"php", "node", "chmod", "chown", "dd", "mv", "cp", "tee", "base64", "xxd", "socat", "ssh", "scp", "find", "kill", "shred", "git", "env"}

// shellVar matches $name and ${name}.
var shellVar = regexp.MustCompile(`\$(?:\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)`)

// stdinOf gives the command emitted at out[before] what it reads on its
// standard input: a here-document or here-string; and when it runs under
// xargs, the words of that input, or of the echo before it in the
// pipeline, become its arguments.
func (w *shellWalker) stdinOf(st *syntax.Stmt, before int) {
	if len(*w.out) <= before {
		return
	}
	c := &(*w.out)[before]
	for _, r := range st.Redirs {
		switch {
		case (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) && r.Hdoc != nil:
			c.Heredoc = wordText(r.Hdoc)
		case r.Op == syntax.WordHdoc:
			c.Heredoc = wordText(r.Word)
		}
	}
	if !slices.Contains(c.Via, "xargs") {
		if c.Heredoc == "" && w.stdinText != "" && !shells[c.Binary] {
			c.Heredoc = w.stdinText // echo 'DROP TABLE users;' | psql: what it reads
		}
		return
	}
	words, text := w.stdin, w.stdinText
	if c.Heredoc != "" {
		words, text = strings.Fields(c.Heredoc), c.Heredoc
	}
	c.Argv = append(slices.Clip(c.Argv), words...)
	// xargs sh -c: what it reads becomes the command string (whole, as
	// xargs -0 passes it; read whole either way, the worse reading).
	if shells[c.Binary] && len(c.Argv) >= 2 && c.Argv[len(c.Argv)-len(words)-1] == "-c" && text != "" && w.depth < maxShellDepth {
		parseShell(text, append(clone(c.Via), c.Binary+" -c"), w.depth+1, w.out)
	}
}

// heredocs reads a here-document fed to a shell as the commands it is.
func (w *shellWalker) heredocs(st *syntax.Stmt, prog string) {
	if !shells[base(prog)] || w.depth >= maxShellDepth {
		return
	}
	for _, r := range st.Redirs {
		switch {
		case (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) && r.Hdoc != nil:
			parseShell(wordText(r.Hdoc), append(clone(w.via), base(prog)+" <<"), w.depth+1, w.out)
		case r.Op == syntax.WordHdoc && r.Word != nil: // bash <<< 'cmd'
			parseShell(wordText(r.Word), append(clone(w.via), base(prog)+" <<<"), w.depth+1, w.out)
		}
	}
}

// substs walks the command and process substitutions inside a word: the
// commands they run run too.
func (w *shellWalker) substs(word *syntax.Word) {
	if word != nil {
		syntax.Walk(word, w.substNode)
	}
}

func (w *shellWalker) substNode(n syntax.Node) bool {
	if w.depth >= maxShellDepth {
		return false
	}
	switch s := n.(type) {
	case *syntax.CmdSubst:
		inner := &shellWalker{via: append(clone(w.via), "$()"), depth: w.depth + 1, out: w.out, vars: w.vars, aliases: w.aliases}
		inner.stmts(s.Stmts)
		return false
	case *syntax.ProcSubst:
		inner := &shellWalker{via: append(clone(w.via), "<()"), depth: w.depth + 1, out: w.out}
		inner.stmts(s.Stmts)
		return false
	}
	return true
}

// wordText is the text a word stands for once quotes are removed;
// expansions the shell would make at run time ($HOME, ${x}, $(...), globs)
// are kept as written.
func wordText(word *syntax.Word) string {
	if word == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range word.Parts {
		partText(&b, p, false)
	}
	return b.String()
}

func partText(b *strings.Builder, p syntax.WordPart, quoted bool) {
	switch x := p.(type) {
	case *syntax.Lit:
		b.WriteString(unescape(x.Value, quoted))
	case *syntax.SglQuoted:
		if x.Dollar {
			b.WriteString(unescapePrintf(strings.ReplaceAll(x.Value, `\'`, "'"))) // $'\x72\x6d' is rm
			return
		}
		b.WriteString(x.Value)
	case *syntax.DblQuoted:
		for _, q := range x.Parts {
			partText(b, q, true)
		}
	default:
		var buf bytes.Buffer
		if err := syntax.NewPrinter().Print(&buf, p); err == nil {
			b.Write(buf.Bytes())
		}
	}
}

// unescape removes the backslashes the shell removes: before any character
// outside quotes, before $ ` " \ and newline inside double quotes.
func unescape(s string, quoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			next := s[i+1]
			if !quoted || strings.IndexByte("$`\"\\\n", next) >= 0 {
				if next != '\n' {
					b.WriteByte(next)
				}
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// braces expands an unquoted word that is one brace list, {a,b,c}, into
// its words, as bash does; nil for any other word.
func braces(word *syntax.Word) []string {
	if len(word.Parts) != 1 {
		return nil
	}
	lit, ok := word.Parts[0].(*syntax.Lit)
	if !ok {
		return nil
	}
	// prefix{a,b,c}suffix, one level: /tmp/{a,b} is /tmp/a /tmp/b.
	open, end := strings.IndexByte(lit.Value, '{'), strings.LastIndexByte(lit.Value, '}')
	if open < 0 || end < open+3 {
		return nil
	}
	inner := lit.Value[open+1 : end]
	if !strings.Contains(inner, ",") || strings.ContainsAny(inner, "{}") {
		return nil
	}
	var out []string
	for _, alt := range strings.Split(inner, ",") {
		out = append(out, unescape(lit.Value[:open]+alt+lit.Value[end+1:], false))
	}
	return out
}
