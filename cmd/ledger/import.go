package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger"
)

func (a *app) importBundle(c *cli.Context) error {
	if c.NArg() != 1 {
		return cmdline.Usage(errors.New("import takes one bundle FILE (or - for stdin)"))
	}
	format, err := cmdline.Format(c)
	if err != nil {
		return err
	}
	in, closeIn, err := a.openInput(c.Args().First())
	if err != nil {
		return err
	}
	defer closeIn()
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	chains, rep, err := ledger.LoadBundle(in, lim)
	if err != nil {
		return cmdline.Usage(err)
	}
	if !rep.OK() {
		_ = writeReport(a.stderr, rep)
		return cmdline.Fault(fmt.Errorf("refusing to import a bundle with %d integrity faults; nothing was imported", len(rep.Faults)))
	}
	s, err := cmdline.OpenStore(c, cmdline.Write)
	if err != nil {
		return err
	}
	defer s.Close()
	p := cmdline.NewProgress(a.stderr, "import")
	p.Total = uint64(rep.Envelopes)
	res, err := s.Import(c.Context, chains, p.Update)
	p.Done()
	if err != nil {
		return err
	}
	return cmdline.Render(a.stdout, format, res, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "imported %d sessions: %d envelopes appended, %d already present\n", res.Sessions, res.Appended, res.Unchanged)
		return err
	})
}

// importCommand is `import`.
func importCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "import",
		Usage:     "verify a bundle (per session or in stream order), then append it keeping every hash",
		ArgsUsage: "FILE|-",
		Action:    a.importBundle,
	})
}
