package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger"
)

func (a *app) export(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	s, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return err
	}
	defer s.Close()
	out := a.stdout
	path := c.String("output")
	var tmp *os.File
	if path != "" && path != "-" {
		// Write beside the target and rename, so a failed export never
		// leaves a truncated bundle under the requested name.
		tmp, err = os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
		if err != nil {
			return cmdline.Usage(err)
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		out = tmp
	}
	p := cmdline.NewProgress(a.stderr, "export")
	err = s.Export(c.Context, filterOf(c), ledger.NewBundleWriter(out), p.Update)
	p.Done()
	if err != nil {
		return err
	}
	if tmp != nil {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := tmp.Close(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	return nil
}

// exportCommand is `export`.
func exportCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "export",
		Usage:     "write sessions as an NDJSON bundle ordered by tenant, session, seq",
		ArgsUsage: " ",
		Flags: append(filterFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
		),
		Action: a.export,
	})
}
