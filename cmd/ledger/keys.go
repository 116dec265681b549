package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger/store"
)

// keysCommand is `keys`: the sealing key store's upkeep.
func keysCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:  "keys",
		Usage: "look after the sealing key store (DATA/keys/sealing)",
		Subcommands: []*cli.Command{cmdline.WithGlobals(&cli.Command{
			Name:      "rotate",
			Usage:     "replace the master key: every data key is rewrapped under a fresh one, in place, and the old one is overwritten",
			ArgsUsage: " ",
			Description: "Each data key file is rewritten in its own blocks, then master.key itself, so no copy of the\n" +
				"old master key is left in the store (nor in a hard link to its files). A backup of the\n" +
				"store taken before still opens with the old master key: destroy such backups too.\n" +
				"A rotation cut short (a crash) is finished the next time the store is opened.",
			Action: a.rotateKeys,
		})},
	}
}

func (a *app) rotateKeys(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	data := cmdline.Resolve(c, cmdline.FlagData)
	if h, held := store.HeldBy(data); held {
		// An engine seals with the master key it read at start: new keys it
		// made during the rotation would be wrapped under the old one.
		return cmdline.Unavailable(fmt.Errorf("%s is in use by %s (pid %d): stop it before rotating the master key", data, h.Program, h.PID))
	}
	keys, err := cmdline.KeyStore(data)
	if err != nil {
		return err
	}
	n, err := keys.Rotate()
	if err != nil {
		return fmt.Errorf("rotate the master key: %w", err)
	}
	fmt.Fprintf(a.stdout, "master key rotated: %d data keys rewrapped\n", n)
	return nil
}
