package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/policy"
)

type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	return &cli.App{
		Name:   "engine",
		Usage:  "decide AARTS hook events with an OPA policy and a capability manifest",
		Writer: stdout,
		Flags:  cmdline.GlobalFlags(),
		Commands: []*cli.Command{
			cmdline.WithGlobals(&cli.Command{
				Name:      "serve",
				Usage:     "decide and record hook events over HTTP",
				ArgsUsage: " ",
				Flags: append(policyFlags()[:2],
					&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "`HOST:PORT` to serve the API on"},
					&cli.StringFlag{Name: "tokens", EnvVars: []string{"ENGINE_TOKENS"}, Usage: "bearer tokens `FILE`: {\"tokens\":[{\"sha256\":\"...\",\"tenant\":\"acme\"}]}"},
					&cli.BoolFlag{Name: "insecure-dev", Usage: "accept requests without a token as tenant default (local experiments only)"},
					&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, Usage: "per-request decision timeout"},
				),
				Action: a.serve,
			}),
			cmdline.WithGlobals(&cli.Command{
				Name:      "eval",
				Usage:     "fold and evaluate NDJSON hook events without recording anything",
				ArgsUsage: "[FILE|-]",
				Description: "Reads AARTS hook events (one JSON object per line, any number of sessions),\n" +
					"folds each into its session's snapshot and evaluates it, in order. Prints one line per\n" +
					"event: session_id, index, hook_point, decision, aarm_decision, reason_code,\n" +
					"matched_rule_id, reasons, snapshot_hash.",
				Flags:  policyFlags(),
				Action: a.eval,
			}),
		},
	}
}

func policyFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "policy", Usage: "Rego policy `DIR` or bundle file (default: the built-in policy)"},
		&cli.StringFlag{Name: "manifest", Usage: "capability manifest `FILE` (default: the built-in manifest)"},
		&cli.StringFlag{Name: "tenant", Value: ledger.DefaultTenant, Usage: "`TENANT` the sessions belong to"},
	}
}

// loadPolicy loads --manifest and --policy; a bad file is exit 2 naming it.
func loadPolicy(c *cli.Context) (*policy.Policy, error) {
	m := policy.DefaultManifest()
	if f := c.String("manifest"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, cmdline.Usage(err)
		}
		if m, err = manifest.Parse(b); err != nil {
			return nil, cmdline.Usage(fmt.Errorf("%s: %w", f, err))
		}
	}
	p, err := policy.Load(c.Context, c.String("policy"), m)
	if err != nil {
		return nil, cmdline.Usage(err)
	}
	return p, nil
}

func (a *app) serve(c *cli.Context) error {
	if c.NArg() > 0 {
		return cmdline.Usage(fmt.Errorf("serve takes no arguments, got %q", c.Args().First()))
	}
	var tokens *engine.Tokens
	if f := c.String("tokens"); f != "" {
		var err error
		if tokens, err = engine.LoadTokens(f); err != nil {
			return cmdline.Usage(err)
		}
	} else if !c.Bool("insecure-dev") {
		return cmdline.Usage(errors.New("serve needs --tokens FILE (or --insecure-dev for a local experiment)"))
	}
	if c.Bool("insecure-dev") {
		fmt.Fprintln(a.stderr, "engine: WARNING: --insecure-dev: requests without a token act as tenant default")
	}
	p, err := loadPolicy(c)
	if err != nil {
		return err
	}
	st, err := cmdline.OpenStore(c)
	if err != nil {
		return err
	}
	defer st.Close()
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	d := engine.NewDecider(p)
	d.Limits = lim
	h := engine.Handler(engine.ServerConfig{Engine: engine.New(d, st), Store: st, Tokens: tokens,
		Insecure: c.Bool("insecure-dev"), Timeout: c.Duration("timeout")})
	srv := engine.NewHTTPServer(c.String("listen"), h)
	ln, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		return cmdline.Usage(err)
	}
	fmt.Fprintf(a.stderr, "engine: serving http://%s (policy %s, manifest %s)\n", ln.Addr(), p.Digest()[:12], p.Manifest().Name)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-c.Context.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}

func (a *app) eval(c *cli.Context) error {
	if c.NArg() > 1 {
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
	in := a.stdin
	if name := c.Args().First(); name != "" && name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return cmdline.Usage(err)
		}
		defer f.Close()
		in = f
	}
	d := engine.NewDecider(p)
	d.Limits = lim
	if err := engine.Eval(c.Context, d, c.String("tenant"), in, a.stdout); err != nil {
		if engine.IsInputError(err) {
			return cmdline.Usage(err)
		}
		return err
	}
	return nil
}
