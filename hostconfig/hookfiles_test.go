package hostconfig

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHookFilesInstall: for Cline, an install writes one executable hook
// file per event (in the project, or the user's configuration), each
// running the command; a second install changes nothing; an uninstall
// removes them and the directories made for them; a hook file of the
// user's at one of those names is never touched.
func TestHookFilesInstall(t *testing.T) {
	for _, user := range []bool{false, true} {
		home, dir := t.TempDir(), t.TempDir()
		scope := Scope{Dir: dir, User: user, Home: home}
		command := ProjectCommand("cline")
		c, err := Install("cline", scope, command)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Changed() || len(c.More) != len(Events("cline"))-1 {
			t.Fatalf("user=%v: %d files planned, want %d", user, len(c.More)+1, len(Events("cline")))
		}
		if err := c.Apply(); err != nil {
			t.Fatal(err)
		}
		for _, ev := range Events("cline") {
			p := filepath.Join(filepath.Dir(c.Path), ev)
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o100 == 0 {
				t.Errorf("%s: %v, want an executable file", p, err)
			}
		}
		in, err := Inspect("cline", scope)
		if err != nil || len(in.Missing("cline")) != 0 || in.Commands["PreToolUse"][0] != command {
			t.Errorf("inspected %+v (%v), want %q for every event", in, err, command)
		}
		if again, _ := Install("cline", scope, command); again.Changed() {
			t.Errorf("a second install changes the files:\n%s", again.Diff())
		}
		u, err := Uninstall("cline", scope, command)
		if err != nil {
			t.Fatal(err)
		}
		if err := u.Apply(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Dir(filepath.Dir(c.Path))); !os.IsNotExist(err) {
			t.Errorf("user=%v: uninstall left %s", user, filepath.Dir(filepath.Dir(c.Path)))
		}
		own := "#!/bin/sh\necho '{}'\n"
		writeFile(t, c.Path, own)
		if _, err := Install("cline", scope, command); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
			t.Errorf("install over the user's own hook file: %v, want a refusal", err)
		}
		if got, _ := os.ReadFile(c.Path); string(got) != own {
			t.Errorf("the user's hook file changed: %s", got)
		}
	}
}

// TestHookFileFailsClosed: Cline reads only what a hook prints and runs
// the call when it can read nothing; agentledger's hook file prints the
// command's answer, and Cline's cancel where the command fails or prints
// nothing.
func TestHookFileFailsClosed(t *testing.T) {
	for _, tt := range []struct{ command, want string }{
		{`echo '{"overrideInput":{"commands":["true"]}}'`, `{"overrideInput":{"commands":["true"]}}`},
		{"cat", `{"hookName":"tool_call"}`}, // the input reaches the command
		{"exit 2", `"cancel":true`},
		{"true", `"cancel":true`},
		{"/nonexistent/agentledger-hook cline", `"cancel":true`},
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, ".clinerules", "hooks", "PreToolUse")
		writeFile(t, p, HookFile("cline", "PreToolUse", tt.command))
		cmd := exec.Command("/bin/sh", p)
		cmd.Stdin = strings.NewReader(`{"hookName":"tool_call"}`)
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), tt.want) {
			t.Errorf("%s: printed %q (%v), want %s", tt.command, out, err, tt.want)
		}
	}
}
