// Package docs holds the reference pages; its test keeps every command in
// them (and in README.md) working as written.
package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// programs are agentledger's commands, built once into one directory.
var programs struct {
	once sync.Once
	dir  string
	err  error
}

func built(t *testing.T) string {
	t.Helper()
	programs.once.Do(func() {
		if programs.dir, programs.err = os.MkdirTemp("", "docs-bin"); programs.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", programs.dir+"/", "./cmd/engine", "./cmd/ledger", "./cmd/replay", "./cmd/agentledger-hook")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			programs.err = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if programs.err != nil {
		t.Fatal(programs.err)
	}
	return programs.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if programs.dir != "" {
		os.RemoveAll(programs.dir)
	}
	os.Exit(code)
}

// block is a ```sh block of a page.
type block struct {
	page string
	line int
	text string
}

// shellBlocks reads every ```sh block of README.md and the pages here.
func shellBlocks(t *testing.T) []block {
	t.Helper()
	pages := []string{"../README.md", "../fixtures/manifests/README.md", "../deploy/README.md"}
	filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return nil
	})
	var out []block
	for _, p := range pages {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		var cur *block
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			switch {
			case cur == nil && strings.TrimSpace(line) == "```sh":
				cur = &block{page: p, line: n + 1}
			case cur != nil && strings.TrimSpace(line) == "```":
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				cur.text += line + "\n"
			}
		}
	}
	return out
}

// ours maps a command's first words to the program it runs: go run
// ./cmd/X, or X itself.
func ours(words []string) (prog string, args []string) {
	switch {
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && strings.HasPrefix(words[2], "./cmd/"):
		return strings.TrimPrefix(words[2], "./cmd/"), words[3:]
	case len(words) >= 1:
		switch words[0] {
		case "engine", "ledger", "replay", "agentledger-hook":
			return words[0], words[1:]
		}
	}
	return "", nil
}

// TestEveryDocumentedCommandParses: every command of agentledger's
// programs in a ```sh block of README.md or docs/ names a command and flags
// its program has — each is run with AGENTLEDGER_PARSE_ONLY=1, which parses
// the whole command line (a subcommand or flag that does not exist, a value
// of the wrong type, fails it) and runs nothing. agentledger-hook lines are
// run for real by cmd/agentledger-hook's tests.
func TestEveryDocumentedCommandParses(t *testing.T) {
	bin := built(t)
	blocks := shellBlocks(t)
	checked := 0
	for _, b := range blocks {
		f, err := syntax.NewParser().Parse(strings.NewReader(b.text), b.page)
		if err != nil {
			t.Errorf("%s:%d: not shell: %v", b.page, b.line, err)
			continue
		}
		syntax.Walk(f, func(n syntax.Node) bool {
			call, ok := n.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var words []string
			for _, w := range call.Args {
				words = append(words, wordText(w))
			}
			prog, args := ours(words)
			if prog == "" || prog == "agentledger-hook" {
				return true
			}
			checked++
			cmd := exec.Command(filepath.Join(bin, prog), args...)
			cmd.Dir = ".."
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "LEDGER_DATA=", "AGENTLEDGER_PARSE_ONLY=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s:%d: %s %s: %v\n%s", b.page, b.line+int(call.Pos().Line())-1, prog, strings.Join(args, " "), err, out)
			}
			return true
		})
	}
	if checked < 30 {
		t.Fatalf("only %d documented commands found in %d blocks", checked, len(blocks))
	}
	t.Logf("%d documented commands in %d blocks parse", checked, len(blocks))
}

// wordText is a shell word as the command would get it, with variables and
// substitutions standing as one placeholder word.
func wordText(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(x.Value)
		case *syntax.SglQuoted:
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(l.Value)
				} else {
					b.WriteString("X")
				}
			}
		default:
			b.WriteString("X")
		}
	}
	return b.String()
}

// TestReadmeDemoRuns runs README's demo of the ledger commands as written,
// in a directory of its own holding the fixtures it names, with the
// programs built from this checkout: every command succeeds.
func TestReadmeDemoRuns(t *testing.T) {
	bin := built(t)
	var demo *block
	for _, b := range shellBlocks(t) {
		if b.page == "../README.md" && strings.Contains(b.text, "append fixtures/demo/demo.ndjson") {
			demo = &b
		}
	}
	if demo == nil {
		t.Fatal("README has no demo block")
	}
	work := t.TempDir()
	for _, d := range []string{"fixtures/demo", "fixtures/vectors"} {
		os.MkdirAll(filepath.Join(work, filepath.Dir(d)), 0o755)
		abs, _ := filepath.Abs(filepath.Join("..", d))
		if err := os.Symlink(abs, filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	script := strings.ReplaceAll(demo.text, "go run ./cmd/", "")
	cmd := exec.Command("/bin/sh", "-ec", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+t.TempDir(), "LEDGER_DATA=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README's demo: %v\n%s", err, out)
	}
	for _, want := range []string{"demo-claude-1", "OK"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("README's demo printed no %q:\n%s", want, out)
		}
	}
}

// TestReadmeOutputsAreIgnored: what README's commands run in a clone
// (go run ./cmd/...) write there — a data directory, an -o file, a
// redirect — is ignored by git, so trying the README leaves the clone's
// status clean.
func TestReadmeOutputsAreIgnored(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to check .gitignore")
	}
	checked := 0
	for _, b := range shellBlocks(t) {
		if b.page != "../README.md" {
			continue
		}
		for _, line := range strings.Split(b.text, "\n") {
			words := strings.Fields(line)
			if prog, _ := ours(words); prog == "" || words[0] != "go" {
				continue
			}
			for i := 0; i+1 < len(words); i++ {
				if words[i] == "#" {
					break
				}
				if w := words[i]; w != "--data" && w != "-o" && w != ">" {
					continue
				}
				out := words[i+1]
				if strings.ContainsAny(out[:1], "/~$\"'") {
					continue // outside the clone
				}
				if words[i] == "--data" {
					out += "/jetstream" // a directory: what it will hold
				}
				checked++
				cmd := exec.Command("git", "check-ignore", "-q", "--no-index", out)
				cmd.Dir = ".."
				if err := cmd.Run(); err != nil {
					t.Errorf("README.md:%d writes %s in the clone, which .gitignore does not ignore (%v)", b.line, out, err)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no output of README's commands")
	}
}
