package main

import (
	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger/store"
)

func (a *app) tail(c *cli.Context) error {
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
	go cmdline.KeepEngineUp(c.Context, cmdline.Resolve(c, cmdline.FlagData))
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	return s.Tail(c.Context, filterOf(c), 0, func(m store.Msg) error { return a.printEnvelope(format, lim, m) })
}

// tailCommand is `tail`.
func tailCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "tail",
		Usage:     "follow new envelopes until interrupted",
		ArgsUsage: " ",
		Flags:     filterFlags(),
		Action:    a.tail,
	})
}
