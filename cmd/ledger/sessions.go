package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger/store"
)

func (a *app) sessions(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	format, err := cmdline.Format(c)
	if err != nil {
		return err
	}
	s, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return err
	}
	defer s.Close()
	infos, err := s.Sessions(c.Context, store.Filter{Tenant: c.String("tenant")})
	if err != nil {
		return err
	}
	if infos == nil {
		infos = []store.SessionInfo{}
	}
	return cmdline.Render(a.stdout, format, infos, func(w io.Writer) error {
		fmt.Fprintf(w, "%-12s %-28s %8s  %-24s  %-24s  %s\n", "TENANT", "SESSION", "COUNT", "FIRST", "LAST", "HEAD")
		for _, i := range infos {
			fmt.Fprintf(w, "%-12s %-28s %8d  %-24s  %-24s  %s\n", i.Tenant, printable(i.Session, 28), i.Count,
				stamp(i.FirstTs), stamp(i.LastTs), short(i.HeadHash))
		}
		return nil
	})
}

// sessionsCommand is `sessions`.
func sessionsCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "sessions",
		Usage:     "list sessions with count, head hash and first and last time",
		ArgsUsage: " ",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "tenant", Usage: "only this `TENANT`"}},
		Action:    a.sessions,
	})
}
