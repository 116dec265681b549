package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// offlineEnv marks the test binary running inside its own network
// namespace.
const offlineEnv = "AGENTLEDGER_E2E_OFFLINE"

// TestMain runs the package's tests in a network namespace that has only
// loopback (unshare -n, as root or with user namespaces): a scripted
// command that a hook let through, or a host that would call home, can
// reach the scripted model on 127.0.0.1 and nothing else. The test binary
// runs itself again inside; agentledger's programs are built there from
// the module cache. Where no namespace can be made, the tests run as they
// are (curl and wget are stand-ins either way), unless
// AGENTLEDGER_E2E_REQUIRED=1, which fails them.
func TestMain(m *testing.M) {
	if os.Getenv(offlineEnv) == "1" || os.Getenv("AGENTLEDGER_E2E_NO_NETNS") == "1" {
		code := m.Run()
		sayWhatSkipped()
		os.Exit(code)
	}
	code, err := runOffline()
	if err == nil {
		os.Exit(code)
	}
	if os.Getenv("AGENTLEDGER_E2E_REQUIRED") == "1" {
		fmt.Fprintf(os.Stderr, "e2e: cannot run the hosts in a loopback-only network namespace: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "e2e: no loopback-only network namespace (%v): the hosts run on this machine's network\n", err)
	code = m.Run()
	sayWhatSkipped()
	os.Exit(code)
}

// sayWhatSkipped names the hosts whose tests skipped (their CLI is not
// installed): in the test's output, which go test shows with -v or on a
// failure, and on the terminal, where a plain go test ./... that passes
// shows nothing else of this package.
func sayWhatSkipped() {
	hosts := skipped.list()
	if len(hosts) == 0 {
		return
	}
	msg := fmt.Sprintf("e2e: skipped the tests of %s: not installed (bash .ci/run installs them; see e2e/hosts.tsv)\n", strings.Join(hosts, ", "))
	fmt.Fprint(os.Stderr, msg)
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		fmt.Fprint(tty, msg)
		tty.Close()
	}
}

// runOffline runs this test binary again, with the same arguments, in a
// new network namespace with loopback up, and returns its exit code; an
// error means no namespace could be made.
func runOffline() (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	args := []string{"-n"}
	if os.Getuid() != 0 {
		args = []string{"-r", "-n"}
	}
	probe := exec.Command("unshare", append(args, "--", "ip", "link", "set", "lo", "up")...)
	if out, err := probe.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("unshare: %v: %s", err, strings.TrimSpace(string(out)))
	}
	cmd := exec.Command("unshare", append(args, "--", "sh", "-c", `ip link set lo up && exec "$@"`, "offline", self)...)
	cmd.Args = append(cmd.Args, os.Args[1:]...)
	cmd.Env = append(os.Environ(), offlineEnv+"=1", "GOPROXY=off")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.ExitCode(), nil
	}
	return 0, err
}

// TestOffline: inside the namespace nothing but loopback is up.
func TestOffline(t *testing.T) {
	if os.Getenv(offlineEnv) != "1" {
		if os.Getenv("AGENTLEDGER_E2E_REQUIRED") == "1" {
			t.Fatal("the e2e tests are not in a loopback-only network namespace")
		}
		t.Skip("not in a loopback-only network namespace")
	}
	out, err := exec.Command("ip", "-o", "link", "show", "up").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.Contains(line, ": lo:") {
			t.Errorf("an interface other than loopback is up: %s", line)
		}
	}
}
