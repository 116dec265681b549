package action

import (
	"testing"
	"unicode/utf8"

	"github.com/agentledger/agentledger/aarts"
)

// FuzzAnalyzeTool: the analysis never panics and always ends, whatever the
// command string; what it finds names only binaries that appear in the
// input or in text it decoded from it.
func FuzzAnalyzeTool(f *testing.F) {
	for _, c := range benchCommands {
		f.Add(c)
	}
	for _, c := range []string{`{ rm,-rf,/; }`, `bash <(curl -s x)`, "cat <<EOF\n$(id)\nEOF", `eval "$(echo cm0gLXJmIC8= | base64 -d)"`,
		`x=rm; $x -rf /`, `sh -c 'sh -c "sh -c \"sh -c ls\""'`, `echo 'unterminated`, `$(($(($((1)))))) | ((x++))`} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		a := AnalyzeTool("Bash", map[string]any{"command": cmd}, "/workspace/shop")
		if a.Tool != aarts.ToolShell && a.Tool != aarts.ToolPackageInstall {
			t.Fatalf("tool %q for a Bash call", a.Tool)
		}
		for _, c := range a.Commands {
			if len(c.Argv) == 0 || c.Binary == "" && c.Argv[0] != "" && utf8.ValidString(c.Argv[0]) && c.Argv[0][len(c.Argv[0])-1] != '/' {
				t.Fatalf("command with no binary: %+v", c)
			}
		}
	})
}
