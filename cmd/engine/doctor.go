package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/hostconfig"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/localengine"
)

// finding is one check of `engine doctor`.
type finding struct {
	Check  string `json:"check"`
	Status string `json:"status"` // ok, warn or fail
	Detail string `json:"detail"`
}

// doctor checks this machine's agentledger installs: the programs, every
// host's hooks (the user's and the project's), the data directory and the
// engine.
func (a *app) doctor(c *cli.Context) error {
	if c.NArg() > 0 {
		return cmdline.Usage(fmt.Errorf("doctor takes no arguments, got %q", c.Args().First()))
	}
	format, err := cmdline.Format(c)
	if err != nil {
		return err
	}
	project, err := filepath.Abs(c.String("project"))
	if err != nil {
		return cmdline.Usage(err)
	}
	var fs []finding
	add := func(check, status, detail string, args ...any) {
		fs = append(fs, finding{check, status, fmt.Sprintf(detail, args...)})
	}
	thin := lookProgram(hostconfig.ThinHook)
	if eng := hookwire.EngineProgram(); eng != "" {
		add("engine program", "ok", "%s", eng)
	} else {
		add("engine program", "fail", "not beside this program nor on PATH")
	}
	if thin != "" {
		add(hostconfig.ThinHook, "ok", "%s", thin)
	} else {
		add(hostconfig.ThinHook, "warn", "not on PATH: a project's hook wrapper blocks every call (go install ./cmd/... in a clone of agentledger)")
	}
	doctorHosts(project, thin, add)
	a.doctorData(c, add)
	failed := slices.ContainsFunc(fs, func(f finding) bool { return f.Status == "fail" })
	err = cmdline.Render(a.stdout, format, fs, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, f := range fs {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", strings.ToUpper(f.Status), f.Check, f.Detail)
		}
		return tw.Flush()
	})
	if err == nil && failed {
		err = cmdline.Fault(errors.New("some checks failed"))
	}
	return err
}

// doctorHosts checks every host's hooks, the user's and project's.
func doctorHosts(project, thin string, add func(check, status, detail string, args ...any)) {
	installed := 0
	for _, host := range hostconfig.Hosts() {
		for _, scope := range []hostconfig.Scope{{User: true}, {Dir: project}} {
			where := "user"
			if !scope.User {
				where = "project " + project
			}
			check := fmt.Sprintf("%s (%s)", host, where)
			in, err := hostconfig.Inspect(host, scope)
			switch {
			case err != nil:
				add(check, "fail", "%v", err)
				continue
			case len(in.Commands) == 0:
				continue // not installed here
			}
			installed++
			if missing := in.Missing(host); len(missing) > 0 {
				add(check, "warn", "%s: no agentledger hook for %s (engine install %s again)", in.Path, strings.Join(missing, ", "), host)
			} else {
				add(check, "ok", "%s: every event the adapter handles", in.Path)
			}
			var commands []string
			for _, cs := range in.Commands {
				for _, cmd := range cs {
					if !slices.Contains(commands, cmd) {
						commands = append(commands, cmd)
					}
				}
			}
			slices.Sort(commands)
			for _, cmd := range commands {
				status, detail := resolveHook(cmd, project, thin)
				add(check+" command", status, "%s: %s", cmd, detail)
			}
		}
	}
	if installed == 0 {
		add("hosts", "warn", "no agentledger hooks in the user's configuration nor in %s (engine install HOST)", project)
	}
}

// doctorData checks the data directory and its engine.
func (a *app) doctorData(c *cli.Context, add func(check, status, detail string, args ...any)) {
	dir, err := cmdline.HookDataDir(c)
	if err != nil {
		add("data directory", "fail", "%v", err)
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		add("data directory", "fail", "%s: %v", dir, err)
		return
	}
	probe, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		add("data directory", "fail", "%s is not writable: %v (every hook would answer by its failure policy)", dir, err)
		return
	}
	probe.Close()
	os.Remove(probe.Name())
	add("data directory", "ok", "%s is writable", dir)
	if ents, err := os.ReadDir(filepath.Join(dir, engine.SpoolName)); err == nil {
		n := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".json") {
				n++
			}
		}
		if n > 0 {
			add("spool", "warn", "%d call(s) answered while no engine could, waiting for an engine to record them", n)
		}
	}
	h, held := store.HeldBy(dir)
	switch {
	case !held:
		add("engine", "ok", "not running; the next hook starts one")
	case h.Socket == "":
		add("engine", "warn", "%s (pid %d) holds the data directory without a hooks socket: hooks cannot start their engine while it runs", h.Program, h.PID)
	default:
		ctx, cancel := context.WithTimeout(c.Context, 3*time.Second)
		defer cancel()
		if localengine.Healthy(ctx, localengine.UnixClient(h.Socket)) {
			add("engine", "ok", "%s (pid %d) answers on %s", h.Program, h.PID, h.Socket)
		} else {
			add("engine", "fail", "%s (pid %d) holds the data directory but does not answer on %s (engine stop, or kill it)", h.Program, h.PID, h.Socket)
		}
	}
}

// resolveHook says whether a hook command runs anything: a project's
// wrapper (and agentledger-hook on PATH behind it), or a program by path or
// name.
func resolveHook(command, project, thin string) (string, string) {
	if url, ok := strings.CutPrefix(command, "http "); ok {
		addr := strings.TrimPrefix(url, "http://")
		addr, _, _ = strings.Cut(addr, "/")
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return "ok", "the engine serves it"
		}
		return "warn", "no engine listens on " + addr + ": the host blocks these calls until a session start starts one"
	}
	prog := hostconfig.CommandProgram(command)
	if filepath.IsAbs(prog) && strings.HasSuffix(prog, "/"+hostconfig.WrapperPath) {
		return resolveUserWrapper(prog, thin)
	}
	if strings.HasSuffix(prog, "/"+hostconfig.WrapperPath) || prog == hostconfig.WrapperPath {
		w := filepath.Join(project, hostconfig.WrapperPath)
		switch {
		case !hookwire.IsProgram(w):
			return "fail", "the project's wrapper " + w + " is missing or not executable (engine install HOST writes it)"
		case thin == "":
			return "fail", "the wrapper finds no agentledger-hook on PATH: every call is blocked"
		}
		return "ok", "the project's wrapper runs " + thin
	}
	if filepath.IsAbs(prog) {
		if hookwire.IsProgram(prog) {
			return "ok", "runs " + prog
		}
		return "fail", prog + " is missing or not executable: the host treats the hook as failed (most let the call through)"
	}
	if p := lookProgram(prog); p != "" {
		return "ok", "runs " + p
	}
	return "fail", prog + " is not on PATH"
}

// resolveUserWrapper says what a user's wrapper at w runs: the program
// its install found, else agentledger-hook on PATH, else nothing (every
// call blocked).
func resolveUserWrapper(w, thin string) (string, string) {
	raw, err := os.ReadFile(w)
	if err != nil || !hookwire.IsProgram(w) {
		return "fail", "the user's wrapper " + w + " is missing or not executable: the host lets every call through (engine install HOST --user writes it)"
	}
	prog := hostconfig.CommandProgram(hostconfig.InstalledBy(raw))
	switch {
	case prog != "" && hookwire.IsProgram(prog):
		return "ok", "the user's wrapper runs " + prog
	case prog == "" && thin != "":
		return "ok", "the user's wrapper runs " + thin + " from PATH"
	case thin != "":
		return "warn", "the program the user's wrapper was installed with (" + prog + ") is gone; it runs " + thin + " from PATH (engine install HOST --user again)"
	}
	return "fail", "the user's wrapper finds no agentledger program: every call is blocked and noted for the record (engine install HOST --user again)"
}

func lookProgram(name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	abs, _ := filepath.Abs(p)
	return abs
}

// doctorCommand is `doctor`.
func doctorCommand(a *app) *cli.Command {
	return cmdline.FormatUsage(cmdline.WithGlobals(&cli.Command{
		Name:      "doctor",
		Usage:     "check this machine's agentledger installs: programs, every host's hooks, the data directory, the engine",
		ArgsUsage: " ",
		Description: "Checks the user's and the project's hook configuration of every host (hooks present for every\n" +
			"event, each command resolvable: a project's wrapper and agentledger-hook on PATH, or a program\n" +
			"by path), the data directory (writable, calls waiting in the spool) and the engine (running and\n" +
			"answering, or startable). Exit 1 when a check fails.",
		Flags:  []cli.Flag{&cli.StringFlag{Name: "project", Value: ".", Usage: "project `DIR` whose hook configuration is checked too"}},
		Action: a.doctor,
	}), []string{"text", "json"})
}
