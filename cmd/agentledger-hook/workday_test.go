package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRecordReadableWhileAgentWorks: hooks installed as README says, calls
// made through them as Claude Code makes them, and while they run (the
// engine holding the data directory) every ledger command README shows
// works with no flags beyond README's — sessions, show, export, verify
// --deep --pubkey, tail — and no hook is denied or left to the failure
// policy because of them.
func TestRecordReadableWhileAgentWorks(t *testing.T) {
	bin, _, data, env := userHome(t)
	project := t.TempDir()
	program := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Env, cmd.Dir = env, project
		return cmd
	}
	if out, err := program("engine", "install", "claude-code").CombinedOutput(); err != nil {
		t.Fatalf("install: %v: %s", err, out)
	}
	command, _ := hookCommandOf(t, filepath.Join(project, ".claude", "settings.json"))
	call := func(i int) (string, string, error) {
		cmd := exec.Command("/bin/sh", "-c", command)
		cmd.Env, cmd.Dir = append(env, "CLAUDE_PROJECT_DIR="+project), project
		cmd.Stdin = strings.NewReader(fmt.Sprintf(hostInputs["claude-code"], fmt.Sprintf("workday-%d", i%3), i))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	for i := range 3 { // one call in each of the three sessions, before the reading starts
		if out, errs, err := call(i); err != nil || strings.Contains(out, "deny") {
			t.Fatalf("call %d: %v %q %q", i, err, out, errs)
		}
	}

	// The agent works: hooks keep coming while the record is read.
	stop := make(chan struct{})
	var calls atomic.Int32
	var bad []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 3; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			out, errs, err := call(i)
			calls.Add(1)
			if err != nil || strings.Contains(out, `"deny"`) || strings.Contains(errs, "no engine could decide") {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("call %d: %v %q %q", i, err, out, errs))
				mu.Unlock()
			}
		}
	}()

	// ledger tail follows what the hooks record.
	tail := program("ledger", "tail")
	tailOut, err := tail.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var tailErr bytes.Buffer
	tail.Stderr = &tailErr
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	tailed := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(tailOut)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "workday-") {
				tailed <- sc.Text()
				return
			}
		}
		close(tailed)
	}()

	export := filepath.Join(t.TempDir(), "record.ndjson")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions"}, "workday-0"},
		{[]string{"show", "workday-1"}, "PreToolUse"},
		{[]string{"export", "-o", export}, ""},
		{[]string{"verify", "--deep", "--pubkey", filepath.Join(data, "keys", "receipt-ed25519.pub.pem")}, "OK"},
		{[]string{"sessions"}, "workday-2"},
	} {
		out, err := program("ledger", c.args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("ledger %s: %v\n%s", strings.Join(c.args, " "), err, out)
		}
	}
	if raw, err := os.ReadFile(export); err != nil || !bytes.Contains(raw, []byte(`"workday-0"`)) {
		t.Errorf("export: %v, %d bytes", err, len(raw))
	}
	select {
	case line, ok := <-tailed:
		if !ok {
			t.Errorf("ledger tail ended without an envelope: %s", tailErr.String())
		}
		_ = line
	case <-time.After(60 * time.Second):
		t.Errorf("ledger tail printed no envelope of the hooks within a minute: %s", tailErr.String())
	}
	tail.Process.Kill()
	tail.Wait()
	close(stop)
	wg.Wait()
	if calls.Load() < 3 {
		t.Errorf("only %d hook calls ran beside the ledger commands", calls.Load())
	}
	for _, b := range bad {
		t.Error(b)
	}

	// With no engine running, a ledger command starts the local engine and
	// reads through it, so a hook that comes meanwhile is answered.
	stopEngine(t, data)
	if out, err := program("ledger", "sessions").CombinedOutput(); err != nil || !strings.Contains(string(out), "workday-0") {
		t.Fatalf("ledger sessions with no engine running: %v\n%s", err, out)
	}
	if out, errs, err := call(1000); err != nil || strings.Contains(out, `"deny"`) || strings.Contains(errs, "no engine could decide") {
		t.Errorf("a hook after ledger sessions: %v %q %q", err, out, errs)
	}
}
