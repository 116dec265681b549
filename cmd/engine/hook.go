package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/localengine"
)

// hookInputCap bounds how much of a host's input a hook reads (and hashes)
// at all; the engine keeps at most its size limit of it.
const hookInputCap = 64 << 20

// hookCommand is `engine hook HOST`: it reads the host's native hook input
// on stdin, has it decided and recorded by an engine (the user's local one,
// or --engine), and prints the host's native answer. It always exits 0 with
// an answer: when no engine can be reached, the failure policy answers
// (deny; with --fail-open, no decision, so the host's own permission flow
// applies).
func hookCommand(a *app, host, title, description string) *cli.Command {
	return cmdline.FlagUsage(cmdline.WithGlobals(&cli.Command{
		Name:        host,
		Usage:       fmt.Sprintf("read a %s hook input on stdin, print %s's answer", title, title),
		ArgsUsage:   " ",
		Description: description,
		Flags: append(policyFlags(),
			&cli.StringFlag{Name: "engine", EnvVars: []string{"AGENTLEDGER_ENGINE"}, Usage: "`URL` of a running engine serve (default: the local engine on DATA/engine.sock, started when none answers)"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"AGENTLEDGER_TOKEN"}, Usage: "bearer `TOKEN` for --engine"},
			&cli.BoolFlag{Name: "auto-approve", Usage: "answer every allow with the host's own allow, which skips its permission prompt (default: only explicit allows do)"},
			&cli.BoolFlag{Name: "host-asks", Usage: "the host prompts its user for an ask (Copilot's interactive CLI); without it Copilot, which may have no one to prompt, is answered deny for an ask"},
			&cli.BoolFlag{Name: "fail-open", Usage: "when no engine can be reached, give no decision so the host's own permission flow decides (default: deny)"},
			&cli.BoolFlag{Name: "monitor", Usage: "monitor mode: the engine judges and records every call and the host gets no decision from agentledger (nor when no engine can be reached)"},
			&cli.BoolFlag{Name: "fail-closed", Hidden: true, Usage: "the default; kept for old settings"},
			&cli.StringFlag{Name: "hook-program", Hidden: true, Usage: "the `PATH` of the program the host runs for every call, when it is not this one (agentledger-hook hands calls it cannot post itself to engine hook): the configuration names it, so that a call decided either way is decided under the same policy digest"},
			&cli.DurationFlag{Name: "timeout", Value: 8 * time.Second, Usage: "how long to wait for the engine (keep it under the host's hook timeout)"},
			&cli.DurationFlag{Name: "idle-exit", Value: 30 * time.Minute, Usage: "how long the local engine a hook starts stays up without hooks"},
			&cli.BoolFlag{Name: "atomic-batch", Usage: "the local engine a hook starts stores an event and its verdict as one atomic batch (default: two publishes, faster)"},
		),
		Action: func(c *cli.Context) error { return a.hook(c, host) },
	}), cmdline.FlagData, "data `DIR` of the local engine (env LEDGER_DATA, default $XDG_DATA_HOME/agentledger, else ~/.local/share/agentledger)")
}

func (a *app) hook(c *cli.Context, host string) error {
	if _, err := cmdline.Limits(c); err != nil {
		return err
	}
	in := hookwire.Input{Host: host, AutoApprove: c.Bool("auto-approve"), HostAsks: c.Bool("host-asks"), Unattended: hookwire.Unattended(), Monitor: c.Bool("monitor")}
	var readErr, err error
	in.Body, in.Size, in.SHA256, in.Truncated, readErr = hookwire.ReadBounded(a.stdin, hookwire.MaxInput, hookInputCap)
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	var resp engine.HookResponse
	if readErr == nil {
		resp, err = a.post(ctx, c, in)
	} else {
		err = fmt.Errorf("read stdin: %w", readErr)
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "agentledger: no engine could decide this %s event: %v\n", host, err)
		resp = engine.FailureResponse(c.Bool("fail-open"), in.Unattended, err)
		if c.Bool("monitor") {
			resp = engine.MonitorFailureResponse(err)
		}
		a.spoolUnanswered(c, in, resp, err)
	}
	_, err = a.stdout.Write(engine.HostOutput(host, in.Body, resp))
	return err
}

// spoolUnanswered puts a call no engine answered on the local data
// directory's spool before the answer is given, for the next engine there
// to record (with --engine URL the record is the remote engine's business:
// nothing is spooled).
func (a *app) spoolUnanswered(c *cli.Context, in hookwire.Input, resp engine.HookResponse, cause error) {
	if c.String("engine") != "" {
		return
	}
	answered := resp.Decision
	if resp.HostAnswer == aarts.HostAnswerNone {
		answered = aarts.HostAnswerNone
	}
	u := hookwire.Unanswered{Tenant: c.String("tenant"), Host: in.Host, Input: in.Body, SHA256: in.SHA256, Size: in.Size, Answered: answered, Cause: cause}
	if err := hookwire.SpoolUnanswered(cmdline.Resolve(c, cmdline.FlagData), u, time.Now()); err != nil {
		fmt.Fprintf(a.stderr, "agentledger: this call could not be spooled for the record either: %v\n", err)
	}
}

// post sends the input to --engine, or to the user's local engine with
// this hook's configuration (tenant, policy, manifest, failure policy),
// starting the engine when none answers.
func (a *app) post(ctx context.Context, c *cli.Context, in hookwire.Input) (engine.HookResponse, error) {
	if url := c.String("engine"); url != "" {
		return engine.PostHook(ctx, http.DefaultClient, url, c.String("token"), in)
	}
	dir, err := cmdline.HookDataDir(c)
	if err != nil {
		return engine.HookResponse{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return engine.HookResponse{}, err
	}
	hook := exe
	if h := c.String("hook-program"); h != "" {
		hook = h
	}
	cfg, err := hookConfig(c, hook)
	if err != nil {
		return engine.HookResponse{}, err
	}
	in.Config = &cfg
	l := &localengine.Local{DataDir: dir, Command: localEngineCommand(c, exe, dir), Wait: c.Duration("timeout"), Binary: hookwire.BinaryIdentity(exe)}
	return engine.PostLocal(ctx, l, in)
}

// hookConfig is the configuration a hook's flags name, its paths made
// absolute (the engine does not share the hook's working directory).
func hookConfig(c *cli.Context, hook string) (hookwire.Config, error) {
	cfg := hookwire.Config{Tenant: c.String("tenant"), FailOpen: c.Bool("fail-open"), Hook: hook}
	abs := func(p string) (string, error) {
		if p == "" || p == "default" {
			return p, nil
		}
		return filepath.Abs(p)
	}
	var err error
	if cfg.Manifest, err = abs(c.String("manifest")); err != nil {
		return cfg, err
	}
	for _, p := range c.StringSlice("policy") {
		ap, err := abs(p)
		if err != nil {
			return cfg, err
		}
		cfg.Policy = append(cfg.Policy, ap)
	}
	return cfg, nil
}

// localEngineCommand starts the local engine of dir as a hook does:
// exiting after --idle-exit without hooks, with --atomic-batch if given.
func localEngineCommand(c *cli.Context, exe, dir string) []string {
	cmd := cmdline.LocalEngineCommand(c, exe, dir, c.Duration("idle-exit"))
	if c.Bool("atomic-batch") {
		cmd = append(cmd, "--atomic-batch")
	}
	return cmd
}
