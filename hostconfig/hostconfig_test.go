package hostconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// existing is a configuration a user already has for each host: their own
// hooks and settings, in the host's shape and in their own member order.
var existing = map[string]string{
	"claude-code": `{
  "permissions": {
    "deny": ["Read(./.env)"]
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "./scripts/lint-guard.sh && echo ok",
            "timeout": 5
          }
        ]
      }
    ],
    "Notification": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send claude"
          }
        ]
      }
    ]
  },
  "model": "opus"
}
`,
	"cursor": `{
    "version": 1,
    "hooks": {
        "afterFileEdit": [
            {
                "command": "./hooks/format.sh"
            }
        ]
    }
}
`,
	"copilot": `{
  "version": 1,
  "hooks": {
    "preToolUse": [
      {
        "type": "command",
        "bash": "./audit.sh",
        "timeoutSec": 10
      }
    ]
  }
}
`,
	"gemini": `{
  "theme": "GitHub",
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "write_file|replace",
        "hooks": [
          {
            "type": "command",
            "command": "$GEMINI_PROJECT_DIR/.gemini/hooks/secret-scan.sh",
            "timeout": 5000
          }
        ]
      }
    ]
  }
}
`,
	"qwen-code": `{
  "general": {"enableAutoUpdate": false},
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "run_shell_command",
        "hooks": [
          {"type": "command", "command": "./scripts/check-shell.sh", "timeout": 10}
        ]
      }
    ]
  }
}
`,
	"droid": `{
  "model": "custom:local",
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Edit|Create",
        "hooks": [
          {"type": "command", "command": "gofmt -l .", "timeout": 20}
        ]
      }
    ]
  }
}
`,
	"codex": `{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "^apply_patch$",
        "hooks": [
          {
            "type": "command",
            "command": "python3 .codex/hooks/check_patch.py",
            "timeout": 10,
            "statusMessage": "Checking the patch"
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "./scripts/notify.sh done"
          }
        ]
      }
    ]
  }
}
`,
}

const exe = "/opt/agentledger/bin/engine"

// commands lists every hook command in a host configuration file.
func commands(t *testing.T, host string, data []byte) map[string][]string {
	t.Helper()
	var doc struct {
		Hooks map[string][]map[string]any `json:"hooks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v\n%s", host, err, data)
	}
	out := map[string][]string{}
	for event, list := range doc.Hooks {
		for _, entry := range list {
			handlers := []any{entry}
			if hs, ok := entry["hooks"].([]any); ok {
				handlers = hs
			}
			for _, h := range handlers {
				m := h.(map[string]any)
				c, _ := m[specs[host].commandKey].(string)
				out[event] = append(out[event], c)
			}
		}
	}
	return out
}

// configHosts are the hosts whose hooks go into a configuration file of
// theirs (not a plugin of agentledger's: plugin_test.go).
func configHosts() []string {
	var out []string
	for _, h := range Hosts() {
		if specs[h] != nil {
			out = append(out, h)
		}
	}
	return out
}

// TestInstallMergesAndUninstallIsExact: for every host, an install into a
// configuration with the user's own hooks adds agentledger's hook to every
// event the adapter handles and keeps everything else; a second install
// changes nothing; an uninstall gives back the file byte for byte.
func TestInstallMergesAndUninstallIsExact(t *testing.T) {
	for _, host := range configHosts() {
		t.Run(host, func(t *testing.T) {
			dir := t.TempDir()
			scope := Scope{Dir: dir}
			c, err := Install(host, scope, Command(exe, host))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(c.Path, []byte(existing[host]), 0o600); err != nil {
				t.Fatal(err)
			}
			before := commands(t, host, []byte(existing[host]))

			c, err = Install(host, scope, Command(exe, host))
			if err != nil {
				t.Fatal(err)
			}
			if !c.Changed() || !strings.Contains(c.Diff(), "+") {
				t.Fatalf("install plans no change:\n%s", c.Diff())
			}
			if err := c.Apply(); err != nil {
				t.Fatal(err)
			}
			installed, _ := os.ReadFile(c.Path)
			after := commands(t, host, installed)
			for _, event := range Events(host) {
				n := 0
				for _, cmd := range after[event] {
					if cmd == exe+" hook "+host {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%s: %d agentledger hooks, want 1: %v", event, n, after[event])
				}
			}
			for event, cmds := range before {
				for _, cmd := range cmds {
					if !strings.Contains(strings.Join(after[event], "\n"), cmd) {
						t.Errorf("%s: the user's hook %q is gone", event, cmd)
					}
				}
			}
			if fi, _ := os.Stat(c.Path); fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want the file's own 0600", fi.Mode().Perm())
			}
			// The user's members keep their order and their text.
			if host == "claude-code" && !(strings.Index(string(installed), `"permissions"`) < strings.Index(string(installed), `"hooks"`) &&
				strings.Index(string(installed), `"hooks"`) < strings.Index(string(installed), `"model"`)) ||
				!strings.Contains(string(installed), strings.Split(existing[host], "\n")[1]) {
				t.Errorf("the user's members moved:\n%s", installed)
			}

			again, err := Install(host, scope, Command(exe, host))
			if err != nil {
				t.Fatal(err)
			}
			if again.Changed() || again.Diff() != "" {
				t.Errorf("a second install changes the file:\n%s", again.Diff())
			}

			u, err := Uninstall(host, scope, Command(exe, host))
			if err != nil {
				t.Fatal(err)
			}
			if err := u.Apply(); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(c.Path); string(got) != existing[host] {
				t.Errorf("after uninstall:\n%s\nwant the file as it was:\n%s", got, existing[host])
			}
			if u, _ := Uninstall(host, scope, Command(exe, host)); u.Changed() {
				t.Errorf("a second uninstall changes the file:\n%s", u.Diff())
			}
		})
	}
}

// TestInstallIntoNothing: with no configuration file, an install creates
// one (the user's, under the home directory, for --user) and an
// uninstall removes it again.
func TestInstallIntoNothing(t *testing.T) {
	for _, host := range configHosts() {
		for _, user := range []bool{false, true} {
			home, dir := t.TempDir(), t.TempDir()
			scope := Scope{Dir: dir, User: user, Home: home, Getenv: func(string) string { return "" }}
			c, err := Install(host, scope, Command(exe, host))
			if err != nil {
				t.Fatal(err)
			}
			root := dir
			if user {
				root = home
			}
			if !strings.HasPrefix(c.Path, root+string(filepath.Separator)) || c.Existed {
				t.Fatalf("%s user=%v: path %s (existed %v), want a new file under %s", host, user, c.Path, c.Existed, root)
			}
			if err := c.Apply(); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(c.Path)
			if n := len(commands(t, host, data)); n != len(Events(host)) {
				t.Errorf("%s: %d events configured, want %d", host, n, len(Events(host)))
			}
			u, err := Uninstall(host, scope, Command(exe, host))
			if err != nil {
				t.Fatal(err)
			}
			if err := u.Apply(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(c.Path); !os.IsNotExist(err) {
				t.Errorf("%s user=%v: uninstall left %s", host, user, c.Path)
			}
		}
	}
}

// TestInstallUpdatesItsOwnHook: a hook of agentledger written by an older
// install (another path, other flags, a duplicate) is brought up to date,
// not added again; a program of another name running "hook cursor" is the
// user's and stays.
func TestInstallUpdatesItsOwnHook(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".cursor", "hooks.json")
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte(`{"version":1,"hooks":{"beforeShellExecution":[
		{"command":"/usr/local/bin/engine hook cursor --fail-open"},
		{"command":"'/home/dev/my tools/engine' hook cursor"},
		{"command":"./my-hook hook cursor"}]}}`), 0o644)
	want := Command("/home/dev/go bin/engine", "cursor", "--policy", "team.rego")
	c, err := Install("cursor", Scope{Dir: dir}, want)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	got := commands(t, "cursor", data)["beforeShellExecution"]
	if len(got) != 2 || got[0] != want || got[1] != "./my-hook hook cursor" {
		t.Errorf("beforeShellExecution %q, want [%q, ./my-hook hook cursor]", got, want)
	}
	if want != `'/home/dev/go bin/engine' hook cursor --policy team.rego` {
		t.Errorf("command %q: the path is not quoted for the shell", want)
	}
}

// TestInstallRefusesWhatItCannotRead: a configuration file that is not
// plain JSON (comments, a duplicate member, an array, a hooks member of
// another type) is refused with the file named, and nothing is changed.
func TestInstallRefusesWhatItCannotRead(t *testing.T) {
	for _, content := range []string{
		"{\n  // my settings\n  \"model\": \"opus\"\n}\n",
		`{"hooks":{},"hooks":{}}`,
		`[1,2]`,
		`{"hooks":[]}`,
		`{"hooks":{"PreToolUse":{"matcher":"*"}}}`,
		`{"model": "opus"`,
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, ".claude", "settings.json")
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte(content), 0o644)
		for _, plan := range []func(string, Scope, string) (*Change, error){Install, Uninstall} {
			if c, err := plan("claude-code", Scope{Dir: dir}, Command(exe, "claude-code")); err == nil && c.Changed() {
				t.Errorf("%s: planned a change:\n%s", content, c.Diff())
			} else if err != nil && !strings.Contains(err.Error(), path) {
				t.Errorf("%s: error %q does not name the file", content, err)
			}
		}
		if got, _ := os.ReadFile(path); string(got) != content {
			t.Errorf("%s: the file changed", content)
		}
	}
	if _, err := Install("vscode", Scope{Dir: t.TempDir()}, "engine hook vscode"); err == nil {
		t.Error("an unknown host was accepted")
	}
}

// TestDiff: the plan's diff shows what is added and removed with context.
func TestDiff(t *testing.T) {
	d := Diff("f", []byte("a\nb\nc\nd\ne\nf\ng\nh\ni\n"), []byte("a\nb\nc\nd\nX\nf\ng\nh\ni\nj\n"))
	want := "--- f\n+++ f\n@@ -2,8 +2,9 @@\n b\n c\n d\n-e\n+X\n f\n g\n h\n i\n+j\n"
	if d != want {
		t.Errorf("diff:\n%s\nwant:\n%s", d, want)
	}
	if Diff("f", []byte("x\n"), []byte("x\n")) != "" {
		t.Error("a diff of equal files")
	}
}
