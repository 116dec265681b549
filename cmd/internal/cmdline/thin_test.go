package cmdline

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxCmdFuncLines bounds a function in cmd/: commands parse flags, call
// packages and render; logic lives where tests reach it.
const maxCmdFuncLines = 60

// TestCommandsAreThin keeps every function under cmd/ within
// maxCmdFuncLines lines, and flag parsing (the flag package, urfave/cli)
// out of every library package: outside cmd/ only main packages (the test
// fixtures' programs) may parse flags.
func TestCommandsAreThin(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, p)
		inCmd := strings.HasPrefix(filepath.ToSlash(rel), "cmd/")
		if inCmd {
			for _, decl := range f.Decls {
				if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
					if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxCmdFuncLines {
						t.Errorf("%s: func %s is %d lines, over %d", rel, fd.Name.Name, n, maxCmdFuncLines)
					}
				}
			}
			return nil
		}
		if f.Name.Name == "main" {
			return nil
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "flag" || strings.HasPrefix(path, "github.com/urfave/cli") {
				t.Errorf("%s: package %s imports %s; flags are parsed in cmd/", rel, f.Name.Name, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("walked %d Go files; is the root %s right?", files, root)
	}
}
