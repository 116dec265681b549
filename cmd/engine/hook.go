package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
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
			&cli.BoolFlag{Name: "fail-open", Usage: "when no engine can be reached, give no decision so the host's own permission flow decides (default: deny)"},
			&cli.BoolFlag{Name: "fail-closed", Hidden: true, Usage: "the default; kept for old settings"},
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
	req := engine.Request{Tenant: c.String("tenant"), Host: host, AutoApprove: c.Bool("auto-approve")}
	var readErr, err error
	req.Body, req.Size, req.SHA256, req.Truncated, readErr = engine.ReadBounded(a.stdin, engine.MaxInput, hookInputCap)
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	var resp engine.HookResponse
	if readErr == nil {
		resp, err = a.post(ctx, c, req)
	} else {
		err = fmt.Errorf("read stdin: %w", readErr)
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "agentledger: no engine could decide this %s event: %v\n", host, err)
		resp = engine.FailureResponse(c.Bool("fail-open"), err)
		a.spoolUnanswered(c, host, req, resp, err)
	}
	_, err = a.stdout.Write(engine.HostOutput(host, req.Body, resp))
	return err
}

// spoolUnanswered puts a call no engine answered on the local data
// directory's spool before the answer is given, for the next engine there
// to record (with --engine URL the record is the remote engine's business:
// nothing is spooled).
func (a *app) spoolUnanswered(c *cli.Context, host string, req engine.Request, resp engine.HookResponse, cause error) {
	if c.String("engine") != "" {
		return
	}
	answered := resp.Decision
	if resp.HostAnswer == aarts.HostAnswerNone {
		answered = aarts.HostAnswerNone
	}
	u := engine.Unanswered{Tenant: req.Tenant, Host: host, Input: req.Body, SHA256: req.SHA256, Size: req.Size, Answered: answered, Cause: cause}
	if err := engine.SpoolUnanswered(cmdline.Resolve(c, cmdline.FlagData), u, time.Now()); err != nil {
		fmt.Fprintf(a.stderr, "agentledger: this call could not be spooled for the record either: %v\n", err)
	}
}

// post sends the input to --engine, or to the user's local engine,
// starting it with this hook's policy and store flags when none answers.
func (a *app) post(ctx context.Context, c *cli.Context, req engine.Request) (engine.HookResponse, error) {
	if url := c.String("engine"); url != "" {
		return engine.PostHook(ctx, http.DefaultClient, url, c.String("token"), req)
	}
	dir, err := cmdline.HookDataDir(c)
	if err != nil {
		return engine.HookResponse{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return engine.HookResponse{}, err
	}
	cmd := []string{exe, "serve", "--listen", "", "--data", dir, "--tenant", req.Tenant,
		"--idle-exit", c.Duration("idle-exit").String()}
	if c.Bool("atomic-batch") {
		cmd = append(cmd, "--atomic-batch")
	}
	for _, p := range c.StringSlice("policy") {
		cmd = append(cmd, "--policy", p)
	}
	if m := c.String("manifest"); m != "" {
		cmd = append(cmd, "--manifest", m)
	}
	for _, f := range []string{cmdline.FlagNATS, cmdline.FlagStream, cmdline.FlagSync, cmdline.FlagSyncInterval, cmdline.FlagMaxDepth, cmdline.FlagMaxBytes} {
		cmd = append(cmd, "--"+f, cmdline.Resolve(c, f))
	}
	if req.Tenant == "" {
		cmd[6] = ledger.DefaultTenant
	}
	files := append([]string{exe}, c.StringSlice("policy")...)
	if m := c.String("manifest"); m != "" {
		files = append(files, m)
	}
	digest := engine.ConfigDigest(cmd, files)
	l := &engine.Local{DataDir: dir, Command: append(cmd, "--config-digest", digest), Wait: c.Duration("timeout"), Config: digest}
	return l.Post(ctx, req)
}
