package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/ocsf"
	"github.com/agentledger/agentledger/receipt"
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
		keys, err := recordKeys(c)
		if err != nil {
			return err
		}
		return s.Tail(c.Context, filterOf(c), 0, a.tailOCSF(lim, keys))
	}
	return s.Tail(c.Context, filterOf(c), 0, func(m store.Msg) error { return a.printEnvelope(format, lim, m) })
}

// tailOCSF turns each new envelope into OCSF events as it is stored. Each
// must decode (its hash checked) and extend its session's chain from the
// first one seen, and each of the engine's records must carry a signature
// keys verify; one that does not stops the tail with a fault.
func (a *app) tailOCSF(lim ledger.Limits, keys receipt.Keyring) func(store.Msg) error {
	conv := ocsf.NewConverter(engine.Version)
	conv.MidChain = true
	w := ocsfWriter(a.stdout)
	return func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, lim)
		if err != nil {
			return cmdline.Fault(fmt.Errorf("%s: %w", m.Where(), err))
		}
		if ledger.IsRecordType(e.EventType()) {
			if len(keys) == 0 {
				return cmdline.Usage(fmt.Errorf("%s seq %d is one of the engine's signed records: give the engine's record public key with --pubkey", e.Key(), e.Seq()))
			}
			if err := receipt.VerifySignature(keys, e); err != nil {
				return cmdline.Fault(fmt.Errorf("%s seq %d (%s): %w", e.Key(), e.Seq(), e.EventType(), err))
			}
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
		Flags: append(filterFlags(), &cli.StringSliceFlag{Name: "pubkey",
			Usage: "under --format ocsf, verify the engine's records with this record public key `FILE` (default: the data directory's own)"}),
		Action: a.tail,
	})
}
