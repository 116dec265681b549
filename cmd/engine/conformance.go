package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/conformance"
)

// conformanceCommand is `conformance`.
func conformanceCommand(a *app) *cli.Command {
	return cmdline.FormatUsage(cmdline.WithGlobals(&cli.Command{
		Name:  "conformance",
		Usage: "run the AARTS adapter conformance suite; print each host's AARTS conformance level",
		Description: "Runs the versioned pack of cases (one file per host: a native hook input, the AARTS event it\n" +
			"must map to, the host answer each verdict must give) against the built-in adapters, or with\n" +
			"--adapter against any adapter command: it is given one JSON request per case and verdict on\n" +
			"stdin, {\"aarts_conformance\",\"host\",\"input\",\"verdict\"}, and prints {\"event\",\"rejected\",\"answer\"}\n" +
			"(docs/conformance.md: The adapter conformance suite). A level needs every case of it and below to\n" +
			"pass; each pack is named by its SHA-256; a pack below its host's documented coverage is refused.\n" +
			"Exit 0 when every case passes, 1 when one fails, 2 on bad usage or a refused pack.",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "host", Usage: "run the pack of `HOST` only (repeatable; default: every pack)"},
			&cli.StringFlag{Name: "adapter", Usage: "test the adapter `COMMAND` (run with sh -c) instead of the built-in ones"},
			&cli.StringFlag{Name: "pack", Usage: "read the pack files (*.json) in `DIR` instead of the shipped pack"},
			&cli.DurationFlag{Name: "case-timeout", Value: 10 * time.Second, Usage: "how long an adapter command may take for one case"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "also write the report to `FILE` (in --format)"},
		},
		Action: a.conformance,
		Subcommands: []*cli.Command{{
			Name:   "adapter",
			Hidden: true,
			Usage:  "answer one conformance request on stdin with the built-in adapters (the reference --adapter)",
			Action: a.conformanceAdapter,
		}},
	}), conformance.Formats)
}

func (a *app) conformance(c *cli.Context) error {
	format := cmdline.Resolve(c, cmdline.FlagFormat)
	if !slices.Contains(conformance.Formats, format) {
		return cmdline.Usage(fmt.Errorf("--format %q: want one of %s", format, strings.Join(conformance.Formats, ", ")))
	}
	packs, err := conformance.LoadPacks(c.String("pack"))
	if err != nil {
		return cmdline.Usage(err)
	}
	if hosts := c.StringSlice("host"); len(hosts) > 0 {
		packs = slices.DeleteFunc(packs, func(p *conformance.Pack) bool { return !slices.Contains(hosts, p.Host) })
		if len(packs) == 0 {
			return cmdline.Usage(fmt.Errorf("no pack for --host %s", strings.Join(hosts, ", ")))
		}
	}
	var adapter conformance.Adapter = conformance.Builtin{}
	name := "built-in"
	if line := c.String("adapter"); line != "" {
		adapter, name = conformance.Command{Line: line, Timeout: c.Duration("case-timeout")}, line
	}
	rep, err := conformance.Run(c.Context, packs, adapter, name)
	if err != nil {
		return err
	}
	if out := c.String("output"); out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := conformance.Render(f, format, rep); err != nil {
			return err
		}
	}
	if err := conformance.Render(a.stdout, format, rep); err != nil {
		return err
	}
	if failing := rep.Failing(); len(failing) > 0 {
		return cmdline.Fault(fmt.Errorf("%d conformance cases fail: %s", len(failing), strings.Join(failing, ", ")))
	}
	return nil
}

// conformanceAdapter answers one request with the built-in adapters.
func (a *app) conformanceAdapter(c *cli.Context) error {
	var req conformance.Request
	data, err := io.ReadAll(a.stdin)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &req); err != nil {
		return cmdline.Usage(fmt.Errorf("stdin: not a conformance request: %w", err))
	}
	res, err := conformance.Builtin{}.Run(c.Context, req)
	if err != nil {
		return cmdline.Usage(err)
	}
	return json.NewEncoder(a.stdout).Encode(res)
}
