package hookwire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentledger/agentledger/detect"
)

// MissingExit is the exit code of a hook that cannot reach agentledger at
// all (no engine program): every host blocks the call on it (Claude Code,
// Cursor and Codex on exit 2 with a reason on stderr, Copilot and Gemini CLI
// on any exit but 0 and 1).
const MissingExit = 2

// Options are what a hook's command line says (cmd/agentledger-hook
// parses it): the host, and the flags of `engine hook HOST` the thin hook
// reads itself.
type Options struct {
	Host, Data, Tenant, Manifest string
	Policy                       []string
	FailOpen, AutoApprove        bool
	HostAsks                     bool
	// Monitor: the host runs agentledger in monitor mode (engine hook
	// --monitor): the engine judges and records, the host gets no
	// decision; failures give none either.
	Monitor bool
	Timeout time.Duration // default 8s
	// EngineProgram is the engine program (default: EngineProgram()).
	EngineProgram string
	// Args are the hook's arguments after the program name, as given:
	// what the engine program's own hook gets when a call is handed over.
	Args []string
	// Unread is why the command line could not be read (a flag only
	// `engine hook` knows): every call goes to the engine program's hook.
	Unread error
}

// Hook is the hook a host runs for every call (cmd/agentledger-hook). It
// hands the host's input to the local engine with the call's configuration
// and prints the host's answer, linking neither the policy engine nor the
// store. Whatever it cannot do itself — start an engine, answer by the
// failure policy when none can decide, a flag it does not know — it leaves
// to the engine program's own `engine hook HOST`, given the same input.
// Without an engine program it blocks the call (MissingExit, the reason on
// stderr) and spools it for the record. It returns the exit code.
func Hook(ctx context.Context, o Options, stdin io.Reader, stdout, stderr io.Writer) int {
	in := Input{Host: o.Host, AutoApprove: o.AutoApprove, HostAsks: o.HostAsks, Unattended: Unattended(), Monitor: o.Monitor}
	var readErr error
	in.Body, in.Size, in.SHA256, in.Truncated, readErr = ReadBounded(stdin, MaxInput, 2*MaxInput)
	eng := o.EngineProgram
	if eng == "" {
		eng = EngineProgram()
	}
	dir, dirErr := dataDir(o.Data)
	if eng == "" {
		return missing(dir, dirErr, o.Host, o.Tenant, in, stderr)
	}
	handOver := func() int { return engineHook(ctx, eng, o.Args, in.Body, stdout, stderr) }
	if o.Unread != nil || readErr != nil || dirErr != nil {
		return handOver()
	}
	if configure(o, eng, &in) != nil {
		return handOver()
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 8 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := Exchange(pctx, SocketPath(dir), in)
	var ans Answer
	if err == nil {
		err = json.Unmarshal(raw, &ans)
	}
	if err != nil {
		// No engine answered (none runs, it runs another program, it
		// failed): the engine program's own hook starts one, or answers by
		// the failure policy and spools the call.
		return handOver()
	}
	out := ans.HostOutput
	if len(out) == 0 {
		out = []byte("{}")
	}
	if _, err := stdout.Write(append(bytes.Clone(out), '\n')); err != nil {
		return 1
	}
	return 0
}

// configure sets what in says of the call's configuration besides the
// host's input: the configuration it is decided under and the engine
// program's identity.
func configure(o Options, eng string, in *Input) error {
	cfg := Config{Tenant: o.Tenant, FailOpen: o.FailOpen || o.Monitor}
	if exe, err := os.Executable(); err == nil {
		cfg.Hook = exe
	}
	var err error
	if cfg.Manifest, err = absolute(o.Manifest); err != nil {
		return err
	}
	for _, p := range o.Policy {
		ap, err := absolute(p)
		if err != nil {
			return err
		}
		cfg.Policy = append(cfg.Policy, ap)
	}
	in.Config, in.Binary = &cfg, BinaryIdentity(eng)
	return nil
}

// Wire is how a hook that runs in its host's own process (agentledger's
// plugin for opencode and Kilo CLI) reaches the local engine without a
// process per call: the engine's socket, the request path and the headers
// every call carries, as this hook would send them. It posts each input
// there itself, and runs the hook command for any call that gets no 200
// (no engine yet, another engine program, a failure), which starts the
// engine or answers by the failure policy, as for any host.
type Wire struct {
	Socket  string            `json:"socket"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	// MaxBody is the longest input to post directly; a longer one goes
	// through the hook command (which reads and bounds it).
	MaxBody int `json:"max_body"`
}

// WireOf is the Wire of a hook's command line; an error where every call
// must go through a hook process: no engine program, a flag only `engine
// hook` reads, or a socket outside the data directory (a short one under
// /tmp, whose directory the hook process checks before it connects).
func WireOf(o Options) (Wire, error) {
	eng := o.EngineProgram
	if eng == "" {
		eng = EngineProgram()
	}
	if eng == "" {
		return Wire{}, errors.New("agentledger's engine program is not installed")
	}
	if o.Unread != nil {
		return Wire{}, o.Unread
	}
	dir, err := dataDir(o.Data)
	if err != nil {
		return Wire{}, err
	}
	sock := SocketPath(dir)
	if filepath.Dir(sock) != dir {
		return Wire{}, fmt.Errorf("the engine's socket %s is not in the data directory", sock)
	}
	in := Input{Host: o.Host, AutoApprove: o.AutoApprove, HostAsks: o.HostAsks, Unattended: Unattended(), Monitor: o.Monitor}
	if err := configure(o, eng, &in); err != nil {
		return Wire{}, err
	}
	w := Wire{Socket: sock, Path: HookPath(o.Host), Headers: map[string]string{"Content-Type": "application/json"}, MaxBody: 1 << 20}
	for _, h := range Headers(in) {
		w.Headers[h[0]] = h[1]
	}
	return w, nil
}

// dataDir is --data, else LEDGER_DATA, else UserDataDir, absolute.
func dataDir(flagValue string) (string, error) {
	d := flagValue
	if d == "" {
		d = os.Getenv("LEDGER_DATA")
	}
	if d == "" {
		return UserDataDir()
	}
	return filepath.Abs(d)
}

func absolute(p string) (string, error) {
	if p == "" || p == "default" {
		return p, nil
	}
	return filepath.Abs(p)
}

// engineHook runs `ENGINE hook ARGS...` on body (without this hook's own
// --engine-program) and passes its answer and exit code on.
func engineHook(ctx context.Context, eng string, args []string, body []byte, stdout, stderr io.Writer) int {
	var pass []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--engine-program" || a == "-engine-program":
			i++
		case strings.HasPrefix(a, "--engine-program=") || strings.HasPrefix(a, "-engine-program="):
		default:
			pass = append(pass, a)
		}
	}
	if exe, err := os.Executable(); err == nil && len(pass) > 0 && !strings.HasPrefix(pass[0], "-") {
		// The configuration names the program the host runs, as this
		// hook's own requests do: one policy digest either way. (The
		// flag is the host command's: it follows the host's name.)
		pass = append([]string{pass[0], "--hook-program=" + exe}, pass[1:]...)
	}
	cmd := exec.CommandContext(ctx, eng, append([]string{"hook"}, pass...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(body), stdout, stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	fmt.Fprintf(stderr, "agentledger: %s could not run: %s; this call is blocked\n", eng, detect.RedactJSONText(err.Error()))
	return MissingExit
}

// missing blocks a call when no engine program is installed, and spools it
// for the record, which the next engine on the data directory makes.
func missing(dir string, dirErr error, host, tenant string, in Input, stderr io.Writer) int {
	cause := errors.New("agentledger's engine program is not installed (not beside agentledger-hook, not on PATH)")
	fmt.Fprintf(stderr, "agentledger: %s; this call is blocked. Install agentledger (go install ./cmd/... in a clone of agentledger) or remove its hooks.\n", cause)
	if dirErr == nil {
		u := Unanswered{Tenant: tenant, Host: host, Input: in.Body, SHA256: in.SHA256, Size: in.Size, Answered: "deny", Cause: cause}
		if err := SpoolUnanswered(dir, u, time.Now()); err != nil {
			fmt.Fprintf(stderr, "agentledger: this call could not be spooled for the record either: %v\n", err)
		}
	}
	return MissingExit
}
