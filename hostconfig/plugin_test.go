package hostconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginInstall: for a plugin host, an install writes agentledger's
// plugin (in the project, or the user's configuration), running the
// command it was given for every hook the adapter handles; a second
// install changes nothing, another command updates it, an uninstall
// removes it and the directories it made; a file of the user's at that
// path is never touched.
func TestPluginInstall(t *testing.T) {
	for host := range pluginSpecs {
		for _, user := range []bool{false, true} {
			home, dir := t.TempDir(), t.TempDir()
			scope := Scope{Dir: dir, User: user, Home: home}
			root := map[bool]string{false: dir, true: home}[user]
			command := ProjectCommand(host)
			c, err := Install(host, scope, command)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(c.Path, root+string(filepath.Separator)) || c.Existed || !c.Changed() {
				t.Fatalf("%s user=%v: %s (existed %v), want a new file under %s", host, user, c.Path, c.Existed, root)
			}
			if err := c.Apply(); err != nil {
				t.Fatal(err)
			}
			in, err := Inspect(host, scope)
			if err != nil {
				t.Fatal(err)
			}
			if len(in.Missing(host)) != 0 || in.Commands["tool.execute.before"][0] != command {
				t.Errorf("%s: inspected %+v, want %q for every hook", host, in, command)
			}
			if again, _ := Install(host, scope, command); again.Changed() {
				t.Errorf("%s: a second install changes the plugin:\n%s", host, again.Diff())
			}
			other, err := Install(host, scope, Command(exe, host))
			if err != nil || !other.Changed() || !strings.Contains(other.Diff(), `+const COMMAND = "`+exe+` hook `+host+`";`) {
				t.Fatalf("%s: another command: %v\n%s", host, err, other.Diff())
			}
			u, err := Uninstall(host, scope, command)
			if err != nil {
				t.Fatal(err)
			}
			if err := u.Apply(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Dir(filepath.Dir(c.Path))); !os.IsNotExist(err) {
				t.Errorf("%s user=%v: uninstall left %s", host, user, filepath.Dir(filepath.Dir(c.Path)))
			}

			// A plugin of the user's own where agentledger's would go.
			own := "export const Mine = async () => ({});\n"
			writeFile(t, c.Path, own)
			for name, plan := range map[string]func() (*Change, error){
				"install":   func() (*Change, error) { return Install(host, scope, command) },
				"uninstall": func() (*Change, error) { return Uninstall(host, scope, command) },
			} {
				if _, err := plan(); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
					t.Errorf("%s %s over the user's own plugin: %v, want a refusal", host, name, err)
				}
			}
			if got, _ := os.ReadFile(c.Path); string(got) != own {
				t.Errorf("the user's plugin changed: %s", got)
			}
		}
	}
}

// TestPluginCommandRoundTrips: the command a plugin runs is read back as
// written, whatever quotes and backslashes it holds.
func TestPluginCommandRoundTrips(t *testing.T) {
	for _, cmd := range []string{ProjectCommand("opencode"), `'/opt/my tools/engine' hook opencode --manifest "a\b.json"`} {
		if got := pluginCommand([]byte(Plugin("opencode", cmd))); got != cmd {
			t.Errorf("read back %q, want %q", got, cmd)
		}
	}
}

func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
