package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/receipt"
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
					&cli.DurationFlag{Name: "pending-timeout", Value: engine.DefaultPendingTimeout, Usage: "how long an ask waits for its resolution before it is recorded as a timeout (deny)"},
					&cli.StringFlag{Name: "signing-key", Usage: "Ed25519 PKCS#8 PEM `FILE` that signs receipts (default: generated into DATA/keys on first run)"},
					&cli.BoolFlag{Name: "fail-open", Usage: "answer allow when an event cannot be decided and recorded (default: deny); the failure is recorded either way"},
					&cli.StringFlag{Name: "telemetry", Usage: "append a redacted OpenTelemetry span per decision to `FILE` (NDJSON)"},
					&cli.DurationFlag{Name: "checkpoint-every", Value: 10 * time.Minute, Usage: "take a signed checkpoint of the ledger this often (0: only after SessionEnd; negative: never)"},
					&cli.StringFlag{Name: "checkpoint-dir", Usage: "where checkpoint files go (default DATA/checkpoints); keep a copy where the ledger's operators cannot rewrite it"},
					&cli.BoolFlag{Name: "no-atomic-batch", Usage: "publish an event and its verdict one after the other instead of as one atomic batch (faster on a single-node file store; a crash between them is recorded as an EngineFailure on rebuild)"},
				),
				Action: a.serve,
			}),
			cmdline.WithGlobals(&cli.Command{
				Name:      "stdio",
				Usage:     "decide and record hook events on stdin/stdout (the AARTS subprocess model)",
				ArgsUsage: " ",
				Description: "The first line must be the version check {\"aarts_version\": \"0.1\"}; every line after\n" +
					"it is a hook event (answered with the verdict) or a resolution {\"pending_id\", \"resolution\"}.",
				Flags: append(policyFlags(),
					&cli.DurationFlag{Name: "pending-timeout", Value: engine.DefaultPendingTimeout, Usage: "how long an ask waits for its resolution"},
					&cli.StringFlag{Name: "signing-key", Usage: "Ed25519 PKCS#8 PEM `FILE` that signs receipts (default: DATA/keys)"},
				),
				Action: a.stdio,
			}),
			{
				Name:  "hook",
				Usage: "answer an agent host's hook with a recorded verdict",
				Subcommands: []*cli.Command{
					cmdline.WithGlobals(&cli.Command{
						Name:      "claude-code",
						Usage:     "read a Claude Code hook input on stdin, print Claude Code's answer",
						ArgsUsage: " ",
						Description: "Install in .claude/settings.json:\n" +
							`  {"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"engine hook claude-code --engine http://127.0.0.1:8080","timeout":10}]}]}}` +
							"\n(likewise for PostToolUse, UserPromptSubmit, SessionStart, SessionEnd, Stop). Without --engine the\n" +
							"decision is made and recorded in-process on --data/--nats. Exit 0 with Claude Code's JSON on\n" +
							"stdout; a malformed input is exit 1 (a non-blocking error Claude Code shows) — never 2,\n" +
							"which Claude Code reads as a block.",
						Flags: append(policyFlags()[:2],
							&cli.StringFlag{Name: "engine", EnvVars: []string{"AGENTLEDGER_ENGINE"}, Usage: "`URL` of a running engine serve"},
							&cli.StringFlag{Name: "token", EnvVars: []string{"AGENTLEDGER_TOKEN"}, Usage: "bearer `TOKEN` for --engine"},
							&cli.BoolFlag{Name: "fail-closed", Usage: "when the engine cannot decide, deny (default: let Claude Code's own permissions decide)"},
							&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, Usage: "how long to wait for the engine"},
						),
						Action: a.hookClaudeCode,
					}),
				},
			},
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
		cmdline.PolicyFlag(),
		&cli.StringFlag{Name: "manifest", Usage: "capability manifest `FILE` (default: the built-in manifest)"},
		&cli.StringFlag{Name: "tenant", Value: ledger.DefaultTenant, Usage: "`TENANT` the sessions belong to"},
	}
}

// loadPolicy loads --manifest and --policy; a bad file is exit 2 naming it.
func loadPolicy(c *cli.Context) (*policy.Policy, error) {
	return cmdline.LoadPolicy(c.Context, c.StringSlice("policy"), c.String("manifest"))
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
	cfg, err := cmdline.StoreConfig(c)
	if err != nil {
		return err
	}
	cfg.NoAtomicBatch = c.Bool("no-atomic-batch")
	st, err := store.Open(c.Context, cfg)
	if err != nil {
		return cmdline.Unavailable(err)
	}
	defer st.Close()
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	d := engine.NewDecider(p)
	d.Limits = lim
	key, pub, err := cmdline.SigningKey(c.String("signing-key"), cmdline.Resolve(c, cmdline.FlagData))
	if err != nil {
		return err
	}
	d.Signer = receipt.NewSigner(key)
	if pub != "" {
		fmt.Fprintf(a.stderr, "engine: receipts are signed; verify them with ledger verify --pubkey %s\n", pub)
	}
	opts := []engine.Option{engine.WithPendingTimeout(c.Duration("pending-timeout"))}
	if f := c.String("telemetry"); f != "" {
		tf, err := os.OpenFile(f, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return cmdline.Usage(err)
		}
		defer tf.Close()
		opts = append(opts, engine.WithTelemetry(engine.NewTelemetry(tf)))
	}
	if every := c.Duration("checkpoint-every"); every >= 0 {
		dir := c.String("checkpoint-dir")
		if dir == "" {
			dir = filepath.Join(cmdline.Resolve(c, cmdline.FlagData), "checkpoints")
		}
		cp := engine.NewCheckpointer(st, key, dir)
		opts = append(opts, engine.WithCheckpoints(cp))
		go cp.Run(c.Context, every, func(err error) { fmt.Fprintf(a.stderr, "engine: %v\n", err) })
		fmt.Fprintf(a.stderr, "engine: signed checkpoints go to %s (every %s and after each SessionEnd)\n", dir, every)
	}
	h := engine.Handler(engine.ServerConfig{Engine: engine.New(d, st, opts...), Store: st, Tokens: tokens,
		Insecure: c.Bool("insecure-dev"), Timeout: c.Duration("timeout"), FailOpen: c.Bool("fail-open")})
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

// hookClaudeCode is the Claude Code command hook. Its exit codes follow
// Claude Code's: 0 with the answer on stdout, 1 (non-blocking) with a message
// on stderr for a malformed input; never 2, which would block.
func (a *app) hookClaudeCode(c *cli.Context) error {
	raw, err := io.ReadAll(io.LimitReader(a.stdin, 4<<20))
	if err != nil {
		return cmdline.Fault(fmt.Errorf("read stdin: %w", err))
	}
	in, err := engine.ParseClaudeCode(raw)
	if err != nil {
		return cmdline.Fault(err)
	}
	event, ok, err := in.AARTS(time.Now())
	if err != nil {
		return cmdline.Fault(err)
	}
	if !ok {
		fmt.Fprintln(a.stdout, "{}")
		return nil
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	resp, err := a.decideRemoteOrLocal(ctx, c, event)
	if err != nil {
		fmt.Fprintf(a.stderr, "agentledger: could not decide %s: %v\n", in.HookEventName, err)
		if !c.Bool("fail-closed") {
			fmt.Fprintln(a.stdout, "{}") // fail open: Claude Code's own permissions decide
			return nil
		}
		resp = engine.HookResponse{Verdict: aarts.Verdict{Decision: aarts.Deny, Reasons: []string{"the security engine could not decide (fail-closed)"}}, ReasonCode: "ENGINE_FAILURE"}
	}
	_, err = a.stdout.Write(engine.ClaudeCodeOutput(in.HookEventName, resp))
	return err
}

func (a *app) decideRemoteOrLocal(ctx context.Context, c *cli.Context, event []byte) (engine.HookResponse, error) {
	if url := c.String("engine"); url != "" {
		return engine.PostHook(ctx, http.DefaultClient, url, c.String("token"), event)
	}
	p, err := loadPolicy(c)
	if err != nil {
		return engine.HookResponse{}, err
	}
	st, err := cmdline.OpenStore(c)
	if err != nil {
		return engine.HookResponse{}, err
	}
	defer st.Close()
	d := engine.NewDecider(p)
	if d.Signer, _, err = cmdline.Signer("", cmdline.Resolve(c, cmdline.FlagData)); err != nil {
		return engine.HookResponse{}, err
	}
	step, err := engine.New(d, st).Decide(ctx, ledger.DefaultTenant, event)
	if err != nil {
		return engine.HookResponse{}, err
	}
	return engine.ResponseOf(step), nil
}

func (a *app) stdio(c *cli.Context) error {
	e, closeStore, err := a.recordingEngine(c)
	if err != nil {
		return err
	}
	defer closeStore()
	return engine.ServeStdio(c.Context, e, c.String("tenant"), a.stdin, a.stdout)
}

// recordingEngine builds an Engine from the policy, store and signing
// flags.
func (a *app) recordingEngine(c *cli.Context) (*engine.Engine, func(), error) {
	p, err := loadPolicy(c)
	if err != nil {
		return nil, nil, err
	}
	lim, err := cmdline.Limits(c)
	if err != nil {
		return nil, nil, err
	}
	d := engine.NewDecider(p)
	d.Limits = lim
	if d.Signer, _, err = cmdline.Signer(c.String("signing-key"), cmdline.Resolve(c, cmdline.FlagData)); err != nil {
		return nil, nil, err
	}
	st, err := cmdline.OpenStore(c)
	if err != nil {
		return nil, nil, err
	}
	return engine.New(d, st, engine.WithPendingTimeout(c.Duration("pending-timeout"))), func() { st.Close() }, nil
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
