package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

func (a *app) export(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	format := cmdline.Resolve(c, cmdline.FlagFormat)
	switch {
	case format != "text" && format != "json" && format != "ocsf":
		return cmdline.Usage(fmt.Errorf("--format %q: export writes a bundle (text or json) or OCSF events (ocsf)", format))
	case format != "ocsf" && c.String("bundle") != "":
		return cmdline.Usage(fmt.Errorf("--bundle is read by --format ocsf only (a bundle is already a bundle)"))
	}
	return a.writeAtomically(c.String("output"), func(out io.Writer) error {
		if format == "ocsf" {
			return a.exportOCSF(c, out)
		}
		return a.exportBundle(c, out)
	})
}

// exportBundle writes the selected sessions of the store as a bundle.
func (a *app) exportBundle(c *cli.Context, out io.Writer) error {
	s, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := someSession(c, s); err != nil {
		return err
	}
	p := cmdline.NewProgress(a.stderr, "export")
	err = s.Export(c.Context, filterOf(c), ledger.NewBundleWriter(out), p.Update)
	p.Done()
	return err
}

// someSession fails when --session names a session the store does not
// have: an empty export is a mistake (most often the tenant), not a
// result.
func someSession(c *cli.Context, s *store.Store) error {
	f := filterOf(c)
	if f.Session == "" {
		return nil
	}
	infos, err := s.Sessions(c.Context, f)
	if err != nil {
		return err
	}
	if len(infos) == 0 {
		return noSession(f)
	}
	return nil
}

func noSession(f store.Filter) error {
	return cmdline.Usage(fmt.Errorf("no session %s/%s (sessions belong to a tenant: --tenant)", f.Tenant, f.Session))
}

// writeAtomically runs write into path (stdout when empty or "-"),
// writing beside the target and renaming, so that a failed export never
// leaves a truncated file under the requested name.
func (a *app) writeAtomically(path string, write func(io.Writer) error) error {
	out := a.stdout
	var tmp *os.File
	var err error
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
	if err := write(out); err != nil {
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
		Usage:     "write sessions as an NDJSON bundle ordered by tenant, session, seq (--format ocsf: as OCSF 1.9 events)",
		ArgsUsage: " ",
		Flags: append(filterFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
			&cli.StringFlag{Name: "bundle", Usage: "under --format ocsf, read this bundle `FILE` instead of the store"},
			&cli.StringSliceFlag{Name: "pubkey", Usage: "under --format ocsf, verify the engine's records with this record public key `FILE` " +
				"(default: the data directory's own)"},
			&cli.StringSliceFlag{Name: "checkpoint-pubkey", Usage: "under --format ocsf, open the checkpoints the bundle or store carries with this checkpoint public key `FILE` " +
				"(default: the data directory's own): records of the format before record signatures are exported only where such a checkpoint covers them"},
		),
		Action: a.export,
	})
}
