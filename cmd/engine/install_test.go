package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/hostconfig"
)

// TestInstallCommand: `engine install HOST --dry-run` prints the diff and
// writes nothing; without it the file is written, a second run reports no
// change, and uninstall removes what install wrote; usage errors exit 2.
func TestInstallCommand(t *testing.T) {
	for _, host := range []string{"claude-code", "cursor", "copilot", "gemini"} {
		dir := t.TempDir()
		code, out, errOut := run(t, "", "install", host, "--project", dir, "--dry-run", "--command", "engine hook "+host)
		if code != 0 || !strings.Contains(out, "+") || !strings.Contains(out, "dry run, nothing written") {
			t.Fatalf("%s dry run: exit %d\n%s%s", host, code, out, errOut)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%s: --dry-run wrote %v", host, entries)
		}
		if code, out, errOut = run(t, "", "install", host, "--project", dir, "--command", "engine hook "+host); code != 0 || !strings.Contains(out, "wrote ") {
			t.Fatalf("%s install: exit %d\n%s%s", host, code, out, errOut)
		}
		path := strings.TrimSpace(strings.TrimPrefix(out[strings.LastIndex(out, "wrote "):], "wrote "))
		data, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(data), `"engine hook `+host+`"`) || !strings.HasPrefix(path, dir) {
			t.Fatalf("%s: %s: %v\n%s", host, path, err, data)
		}
		if code, out, _ = run(t, "", "install", host, "--project", dir, "--command", "engine hook "+host); code != 0 || !strings.HasSuffix(out, ": no change\n") {
			t.Errorf("%s second install: exit %d\n%s", host, code, out)
		}
		if code, out, _ = run(t, "", "uninstall", host, "--project", dir, "--dry-run", "--command", "engine hook "+host); code != 0 || !strings.Contains(out, "-") {
			t.Errorf("%s uninstall dry run: exit %d\n%s", host, code, out)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: uninstall --dry-run removed the file", host)
		}
		if code, out, _ = run(t, "", "uninstall", host, "--project", dir); code != 0 || !strings.Contains(out, "removed ") {
			t.Errorf("%s uninstall: exit %d\n%s", host, code, out)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s: uninstall left %v", host, entries)
		}
	}
	for _, args := range [][]string{
		{"install"},
		{"install", "vscode"},
		{"install", "cursor", "--user", "--project", t.TempDir()},
	} {
		if code, _, errOut := run(t, "", args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d (%q), want 2 with a message", args, code, errOut)
		}
	}
	bad := t.TempDir()
	os.MkdirAll(filepath.Join(bad, ".cursor"), 0o755)
	os.WriteFile(filepath.Join(bad, ".cursor", "hooks.json"), []byte(`{"version":1,"hooks":{"stop":[],"stop":[]}}`), 0o644)
	if code, _, errOut := run(t, "", "install", "cursor", "--project", bad); code != 2 || !strings.Contains(errOut, "appears twice") {
		t.Errorf("a duplicate member: exit %d %q, want 2 naming it", code, errOut)
	}
}

// TestInstallMonitor (issue 24): engine install --monitor writes hooks in
// monitor mode for every host; installing again without it enforces.
func TestInstallMonitor(t *testing.T) {
	for _, host := range []string{"claude-code", "cursor", "copilot", "gemini", "codex"} {
		dir := t.TempDir()
		code, out, errOut := run(t, "", "install", host, "--project", dir, "--command", "engine hook "+host, "--monitor")
		if code != 0 {
			t.Fatalf("%s: install --monitor: %d %s", host, code, errOut)
		}
		written := readInstalled(t, dir)
		if !strings.Contains(written, "engine hook "+host+" --monitor") {
			t.Errorf("%s: the hooks are not in monitor mode: %s\n%s", host, out, written)
		}
		if code, _, errOut := run(t, "", "install", host, "--project", dir, "--command", "engine hook "+host); code != 0 {
			t.Fatalf("%s: install: %d %s", host, code, errOut)
		}
		if written := readInstalled(t, dir); strings.Contains(written, "--monitor") {
			t.Errorf("%s: installing without --monitor left hooks in monitor mode:\n%s", host, written)
		}
	}
}

// readInstalled is every hook configuration file under dir, concatenated.
func readInstalled(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".toml")) {
			raw, _ := os.ReadFile(p)
			b.Write(raw)
		}
		return nil
	})
	return b.String()
}

// TestUserInstallWrapper: a user's install names the user's wrapper
// (~/.agentledger/hook), which runs the program the install found; doctor
// follows the wrapper to that program and fails when the wrapper is gone;
// the wrapper stays while any host's user configuration names it and goes
// with the last.
func TestUserInstallWrapper(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	t.Setenv("COPILOT_HOME", "")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(home, hostconfig.WrapperPath)
	hosts := hostconfig.Hosts()
	for _, host := range hosts {
		if code, _, errOut := run(t, "", "install", host, "--user"); code != 0 {
			t.Fatalf("install %s --user: %d %s", host, code, errOut)
		}
		in, err := hostconfig.Inspect(host, hostconfig.Scope{User: true, Home: home})
		if err != nil {
			t.Fatal(err)
		}
		for event, cmds := range in.Commands {
			if len(cmds) != 1 || cmds[0] != hostconfig.UserCommand(home, host) {
				t.Errorf("%s %s: hook commands %q, want the user's wrapper", host, event, cmds)
			}
		}
	}
	raw, err := os.ReadFile(wrapper)
	if info, serr := os.Stat(wrapper); err != nil || serr != nil || info.Mode().Perm()&0o111 == 0 {
		t.Fatalf("the user's wrapper: %v %v", err, serr)
	}
	abs, _ := filepath.Abs(exe)
	if got, want := hostconfig.InstalledBy(raw), hostconfig.ShellCommand(abs, "hook"); got != want {
		t.Errorf("the wrapper runs %q, want %q", got, want)
	}
	if status, detail := resolveHook(hostconfig.UserCommand(home, "codex"), t.TempDir(), ""); status != "ok" || !strings.Contains(detail, abs) {
		t.Errorf("doctor on the user's wrapper: %s %s", status, detail)
	}
	for i, host := range hosts {
		if code, _, errOut := run(t, "", "uninstall", host, "--user"); code != 0 {
			t.Fatalf("uninstall %s --user: %d %s", host, code, errOut)
		}
		_, err := os.Stat(wrapper)
		if last := i == len(hosts)-1; (err == nil) == last {
			t.Errorf("after uninstalling %s (the last: %v) the wrapper exists: %v", host, last, err == nil)
		}
	}
	if status, _ := resolveHook(hostconfig.UserCommand(home, "codex"), t.TempDir(), ""); status != "fail" {
		t.Errorf("doctor on a missing user's wrapper: %s, want fail", status)
	}
}
