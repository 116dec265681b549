package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/adapter"
	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/engine"
)

// evalCommand is `eval`.
func evalCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "eval",
		Usage:     "fold and evaluate NDJSON hook events without recording anything; or score a corpus of cases",
		ArgsUsage: "[FILE|-]",
		Description: "Reads AARTS hook events (one JSON object per line, any number of sessions),\n" +
			"folds each into its session's snapshot and evaluates it, in order. Prints one line per\n" +
			"event: session_id, index, hook_point, decision, aarm_decision, reason_code,\n" +
			"matched_rule_id, reasons, snapshot_hash.\n\n" +
			"With --score CORPUS it scores a corpus of cases instead (docs/corpus.md): every case is one\n" +
			"session, sent through the --host adapter in that host's native shape; a case's answer is its\n" +
			"strictest step (deny > ask > none > explicit allow). Prints per class n, deny, ask, none and\n" +
			"explicit allow, and the totals: harmful cases caught (denied or asked), explicit allows of\n" +
			"harmful cases, ordinary cases denied and asked.",
		Flags: append(policyFlags(),
			&cli.StringFlag{Name: "score", Usage: "score the corpus `FILE` (NDJSON cases) instead of evaluating events"},
			&cli.StringFlag{Name: "host", Value: "claude-code", Usage: "with --score: send every case as `HOST` sends it: " + scoreHosts() + ", or aarts (AARTS events, no adapter)"},
			&cli.BoolFlag{Name: "misses", Usage: "with --score: list the harmful cases not caught and the ordinary cases denied"},
			&cli.StringFlag{Name: "home", Value: "/home/dev", Usage: "with --score: the home `DIR` {H} stands for"},
			&cli.StringFlag{Name: "project", Value: "/workspace/shop", Usage: "with --score: the project `DIR` {P} stands for, the working directory (score.py's is /home/dev/shop)"},
		),
		Action: a.eval,
	})
}

func scoreHosts() string {
	var names []string
	for _, h := range []string{"claude-code", "codex", "cursor", "copilot", "gemini", "qwen-code", "droid", "opencode", "kilo", "cline"} {
		if adapter.Named(h) != nil {
			names = append(names, h)
		}
	}
	return strings.Join(names, ", ")
}

func (a *app) eval(c *cli.Context) error {
	if c.NArg() > 1 || c.IsSet("score") && c.NArg() > 0 {
		return cmdline.Usage(fmt.Errorf("eval takes one input, got %d", c.NArg()))
	}
	p, err := loadPolicy(c)
	if err != nil {
		return err
	}
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	d := decide.NewDecider(p)
	d.Limits = lim
	if c.IsSet("score") {
		return a.score(c, d)
	}
	in := a.stdin
	if name := c.Args().First(); name != "" && name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return cmdline.Usage(err)
		}
		defer f.Close()
		in = f
	}
	if err := engine.Eval(c.Context, d, c.String("tenant"), in, a.stdout); err != nil {
		if decide.IsInputError(err) {
			return cmdline.Usage(err)
		}
		return err
	}
	return nil
}

// score is `eval --score`.
func (a *app) score(c *cli.Context, d *decide.Decider) error {
	format, err := cmdline.Format(c)
	if err != nil {
		return err
	}
	host := c.String("host")
	if host != engine.ScoreHostAARTS && adapter.Named(host) == nil {
		return cmdline.Usage(fmt.Errorf("--host %q: want %s or %s", host, scoreHosts(), engine.ScoreHostAARTS))
	}
	f, err := os.Open(c.String("score"))
	if err != nil {
		return cmdline.Usage(err)
	}
	defer f.Close()
	cases, err := engine.ReadCorpus(f)
	if err != nil {
		return cmdline.Usage(fmt.Errorf("%s: %w", c.String("score"), err))
	}
	s, err := engine.ScoreCorpus(c.Context, d, cases, engine.ScoreConfig{Host: host, Home: c.String("home"),
		Project: c.String("project"), Tenant: c.String("tenant")})
	if err != nil {
		if decide.IsInputError(err) {
			return cmdline.Usage(err)
		}
		return err
	}
	if !c.Bool("misses") {
		s.Misses = nil
	}
	return cmdline.Render(a.stdout, format, s, func(w io.Writer) error { return s.WriteText(w, c.Bool("misses")) })
}
