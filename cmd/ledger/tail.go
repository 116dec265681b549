package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/ocsf"
)

func (a *app) tail(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	format := cmdline.Resolve(c, cmdline.FlagFormat)
	if format != "text" && format != "json" && format != "ocsf" {
		return cmdline.Usage(fmt.Errorf("--format %q: want text, json or ocsf", format))
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
	if format == "ocsf" {
		return s.Tail(c.Context, filterOf(c), 0, a.tailOCSF(lim))
	}
	return s.Tail(c.Context, filterOf(c), 0, func(m store.Msg) error { return a.printEnvelope(format, lim, m) })
}

// tailOCSF turns each new envelope into OCSF events as it is stored. Each
// must decode (its hash checked) and extend its session's chain from the
// first one seen; one that does not stops the tail with a fault.
func (a *app) tailOCSF(lim ledger.Limits) func(store.Msg) error {
	conv := ocsf.NewConverter(engine.Version)
	conv.MidChain = true
	w := ocsfWriter(a.stdout)
	return func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, lim)
		if err != nil {
			return cmdline.Fault(fmt.Errorf("stream seq %d: %w", m.StreamSeq, err))
		}
		evs, err := conv.Add(e)
		if err != nil {
			return cmdline.Fault(err)
		}
		// A hook event is written with its verdict: the engine stores
		// them together, so the verdict is the next message.
		return w(evs)
	}
}

// tailCommand is `tail`.
func tailCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "tail",
		Usage:     "follow new envelopes until interrupted (--format ocsf: as OCSF 1.9 events)",
		ArgsUsage: " ",
		Flags:     filterFlags(),
		Action:    a.tail,
	})
}
