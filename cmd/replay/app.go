package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/replay"
	"github.com/agentledger/agentledger/replay/fromstore"
	"github.com/agentledger/agentledger/seal"
)

type app struct {
	stdout, stderr io.Writer
}

func newApp(stdout, stderr io.Writer) *cli.App {
	a := &app{stdout: stdout, stderr: stderr}
	return &cli.App{
		Name:    "replay",
		Usage:   "re-run recorded sessions against a candidate policy and report what changed",
		Writer:  stdout,
		Version: cmdline.Version(),
		Flags:   cmdline.GlobalFlags(),
		Commands: []*cli.Command{
			cmdline.FormatUsage(cmdline.WithGlobals(&cli.Command{
				Name:      "exact",
				Usage:     "re-fold and re-judge every recorded step with a candidate policy and manifest (no network, no clock)",
				ArgsUsage: " ",
				Description: "Sessions come from --bundle files or directories, else from the ledger (--data/--nats).\n" +
					"Every chain is verified first; a faulty one is reported and fails the gate. Exit 0: the gate\n" +
					"passed; 1: it failed or a session is faulty; 2: bad usage or input; 3: store unreachable.",
				Flags: append(append(sourceFlags(),
					&cli.StringFlag{Name: "fail-on", Value: replay.FailOnLoosening, Usage: "what fails the gate: any, loosening (a move toward allow), tightening, none"},
					&cli.StringFlag{Name: "expect", Usage: "`FILE` of accepted differences: [{\"session_id\",\"seq\",\"field\",\"value\"}]"},
					&cli.IntFlag{Name: "workers", Usage: "sessions replayed in parallel (default: one per CPU)"},
					&cli.BoolFlag{Name: "distribute", Usage: "put one task per session on the task queue of --nats for `replay worker` processes, and fold their reports"},
				), queueFlags()...),
				Action: a.exact,
			}), replay.Formats),
			workerCommand(a),
			cmdline.FormatUsage(cmdline.WithGlobals(&cli.Command{
				Name:      "live",
				Usage:     "re-drive recorded sessions with a candidate model (OpenAI-compatible) and MCP tools, recording the live run",
				ArgsUsage: " ",
				Description: "Each recorded PreLLMRequest is sent to --model at --model-url (chat completions, tools included)\n" +
					"and its planned tool calls and stop reason are compared with the recorded PostLLMResponse;\n" +
					"the candidate's calls are judged by the policy. Each recorded, allowed MCP tool call runs again\n" +
					"on the MCP server and its result is compared with the recorded one. The live run is recorded\n" +
					"in the ledger (--data/--nats) as SESSION~live-<ms>, linked to the original by replay_of.",
				Flags: append(sourceFlags(),
					&cli.StringFlag{Name: "model-url", Required: true, Usage: "base `URL` of an OpenAI-compatible server"},
					&cli.StringFlag{Name: "model", Required: true, Usage: "candidate model `NAME`"},
					&cli.StringFlag{Name: "api-key-env", Usage: "environment `VAR` holding the model API key"},
					&cli.StringFlag{Name: "mcp-command", Usage: "MCP server to start, `\"CMD ARGS\"` (split on spaces)"},
					&cli.StringFlag{Name: "mcp-url", Usage: "Streamable HTTP MCP endpoint `URL`"},
				),
				Action: a.live,
			}), replay.Formats),
		},
	}
}

// sourceFlags are the flags both modes share: the candidate, where the
// sessions come from, and where the report goes.
func sourceFlags() []cli.Flag {
	return []cli.Flag{
		cmdline.PolicyFlag(),
		&cli.StringFlag{Name: "manifest", Usage: "capability manifest `FILE` (default: the built-in manifest)"},
		&cli.StringSliceFlag{Name: "bundle", Usage: "NDJSON bundle `FILE` or directory of them (repeatable); default: the ledger"},
		&cli.StringFlag{Name: "tenant", Usage: "replay only this tenant's sessions"},
		&cli.StringFlag{Name: "session", Usage: "replay only this session"},
		&cli.StringFlag{Name: "since", Usage: "replay only sessions active at or after `TIME` (RFC 3339)"},
		&cli.StringFlag{Name: "until", Usage: "replay only sessions active at or before `TIME` (RFC 3339)"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the report to `FILE` instead of stdout"},
		&cli.StringFlag{Name: "keys", Usage: "sealing key store `DIR` that unseals recorded values (default: DATA/keys/sealing, when it exists); without it, sealed events replay as recorded"},
	}
}

// keyStore opens --keys, or the data directory's sealing key store when
// there is one; nil when there is none.
func keyStore(c *cli.Context) (seal.KeyStore, error) {
	dir := c.String("keys")
	if dir == "" {
		dir = filepath.Join(cmdline.Resolve(c, cmdline.FlagData), "keys", "sealing")
		if _, err := os.Stat(filepath.Join(dir, "master.key")); err != nil {
			return nil, nil
		}
	}
	ks, err := seal.OpenFileStore(dir)
	if err != nil {
		return nil, cmdline.Usage(err)
	}
	return ks, nil
}

// candidate loads the input limits, the candidate policy and manifest, and
// the source of the sessions to replay. When the sessions come from the
// ledger, the open store is returned too; the caller closes it.
func (a *app) candidate(c *cli.Context) (ledger.Limits, *policy.Policy, replay.Source, *store.Store, error) {
	lim, err := cmdline.Limits(c)
	if err != nil {
		return lim, nil, nil, nil, err
	}
	p, err := cmdline.LoadPolicy(c.Context, c.StringSlice("policy"), c.String("manifest"))
	if err != nil {
		return lim, nil, nil, nil, err
	}
	src, st, err := a.source(c, lim)
	return lim, p, src, st, err
}

// sourceErr classifies an error met while reading sessions: a bad bundle
// is bad input (exit 2), a store that fails is unavailable (exit 3).
func sourceErr(st *store.Store, err error) error {
	if st == nil {
		return cmdline.Usage(err)
	}
	return cmdline.Unavailable(err)
}

func (a *app) exact(c *cli.Context) error {
	defer replay.BatchGC()()
	if c.NArg() > 0 {
		return cmdline.Usage(fmt.Errorf("exact takes no arguments, got %q (sessions come from --bundle or the ledger)", c.Args().First()))
	}
	format := cmdline.Resolve(c, cmdline.FlagFormat)
	if !slices.Contains(replay.Formats, format) {
		return cmdline.Usage(fmt.Errorf("--format %q: want one of %s", format, strings.Join(replay.Formats, ", ")))
	}
	failOn := c.String("fail-on")
	if err := replay.CheckFailOn(failOn); err != nil {
		return cmdline.Usage(err)
	}
	expect, err := readExpectations(c.String("expect"))
	if err != nil {
		return err
	}
	lim, p, src, st, err := a.candidate(c)
	if err != nil {
		return err
	}
	if st != nil {
		defer st.Close()
	}
	keys, err := keyStore(c)
	if err != nil {
		return err
	}
	d := decide.NewDecider(p)
	d.Limits, d.Keys = lim, keys
	reports, err := a.runExact(c, src, d)
	if err != nil {
		return sourceErr(st, err)
	}
	if len(reports) == 0 {
		return cmdline.Usage(errors.New("no sessions to replay"))
	}
	rep := replay.NewReport(reports, p.Digest())
	if err := rep.ApplyGate(failOn, expect); err != nil {
		return cmdline.Usage(err)
	}
	if err := a.write(c.String("output"), format, rep); err != nil {
		return cmdline.Unavailable(err)
	}
	if !rep.Gate.Passed {
		return cmdline.Fault(fmt.Errorf("gate failed (--fail-on %s); first of %d: %s", failOn, len(rep.Gate.Failures), rep.Gate.Failures[0]))
	}
	return nil
}

// readExpectations reads the --expect file, if any.
func readExpectations(file string) ([]replay.Expectation, error) {
	if file == "" {
		return nil, nil
	}
	r, err := os.Open(file)
	if err != nil {
		return nil, cmdline.Usage(err)
	}
	defer r.Close()
	expect, err := replay.ReadExpectations(r)
	if err != nil {
		return nil, cmdline.Usage(fmt.Errorf("%s: %w", file, err))
	}
	return expect, nil
}

// runExact replays src with d on --workers, showing progress.
func (a *app) runExact(c *cli.Context, src replay.Source, d *decide.Decider) ([]*replay.SessionReport, error) {
	if c.Bool("distribute") {
		return a.runDistributed(c, src, d)
	}
	progress := cmdline.NewProgress(a.stderr, "replay")
	progress.Unit = "sessions"
	defer progress.Done()
	var mu sync.Mutex
	started := uint64(0)
	return replay.RunExact(c.Context, src, func(ledger.SessionKey) (*decide.Decider, error) {
		mu.Lock()
		started++
		progress.Update(started)
		mu.Unlock()
		return d, nil
	}, c.Int("workers"))
}

// source names the sessions to replay: --bundle, else the ledger (whose
// open store it returns).
func (a *app) source(c *cli.Context, lim ledger.Limits) (replay.Source, *store.Store, error) {
	if bundles := c.StringSlice("bundle"); len(bundles) > 0 {
		if c.IsSet("tenant") || c.IsSet("session") || c.IsSet("since") || c.IsSet("until") {
			return nil, nil, cmdline.Usage(errors.New("--tenant, --session, --since and --until select stored sessions; with --bundle every session in the bundles is replayed"))
		}
		src, err := replay.BundleSource(bundles, lim)
		if err != nil {
			return nil, nil, cmdline.Usage(err)
		}
		return src, nil, nil
	}
	f := fromstore.Filter{Filter: store.Filter{Tenant: c.String("tenant"), Session: c.String("session")}}
	for name, dst := range map[string]*int64{"since": &f.SinceMs, "until": &f.UntilMs} {
		if v := c.String(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, nil, cmdline.Usage(fmt.Errorf("--%s %q: want an RFC 3339 time such as 2026-11-22T09:00:00Z", name, v))
			}
			*dst = t.UnixMilli()
		}
	}
	st, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return nil, nil, err
	}
	return fromstore.Source(c.Context, st, f, lim), st, nil
}

func (a *app) write(path, format string, rep *replay.Report) error {
	if path == "" {
		return replay.Render(a.stdout, format, rep)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := replay.Render(f, format, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
