package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger/checkpoint"
)

func (a *app) checkpoint(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	key, _, err := cmdline.SigningKey(c.String("key"), cmdline.Resolve(c, cmdline.FlagData), cmdline.KeyCheckpoints)
	if err != nil {
		return err
	}
	data := cmdline.Resolve(c, cmdline.FlagData)
	records, _, err := cmdline.Signer("", data)
	if err != nil {
		return err
	}
	st, err := cmdline.OpenStore(c, cmdline.Write)
	if err != nil {
		return err
	}
	defer st.Close()
	// Taken as the engine takes them: a file in DATA/checkpoints and a
	// Checkpoint record in the ledger, which ledger verify checks the log
	// against from then on.
	path, err := engine.NewCheckpointer(st, key, filepath.Join(data, "checkpoints"), records).Write(c.Context)
	if err != nil {
		return err
	}
	signed, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cp, err := checkpoint.ParseNote(signed)
	if err != nil {
		return err
	}
	if out := c.String("output"); out != "" {
		if err := os.WriteFile(out, signed, 0o644); err != nil {
			return cmdline.Usage(err)
		}
		fmt.Fprintf(a.stderr, "checkpoint of %d envelopes in %d sessions written to %s (and %s, recorded in %s)\n", cp.Size, len(cp.Heads), out, path, engine.CheckpointSession)
		return nil
	}
	_, err = a.stdout.Write(signed)
	return err
}

// checkpointCommand is `checkpoint`.
func checkpointCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "checkpoint",
		Usage:     "write a signed checkpoint: the Merkle root over every envelope, and every session's head (C2SP checkpoint, Ed25519)",
		ArgsUsage: " ",
		Description: "A later `ledger verify --checkpoint FILE --checkpoint-pubkey KEY.pub.pem` finds a stream shorter than\n" +
			"the checkpoint or changed within it, and every session that is shorter than the checkpoint says\n" +
			"or differs at its checkpointed seq — the truncations and rewritten suffixes a hash chain alone\n" +
			"cannot show; `ledger prove` proves an envelope in it, or one checkpoint a prefix of another. The key defaults to the engine's checkpoint key\n" +
			"(DATA/keys/checkpoint-ed25519.pem, generated on first use, public key beside it), never the\n" +
			"key that signs records.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Usage: "Ed25519 PKCS#8 PEM `FILE` to sign with (default: DATA/keys/checkpoint-ed25519.pem)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
		},
		Action: a.checkpoint,
	})
}
