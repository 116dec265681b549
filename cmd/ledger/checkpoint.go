package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
	// against from then on; one of each stream of a ledger of several.
	paths, err := engine.NewCheckpointer(st, key, filepath.Join(data, "checkpoints"), records).WriteAll(c.Context)
	if err != nil {
		return err
	}
	for _, path := range paths {
		if err := a.giveCheckpoint(c.String("output"), path, len(paths) > 1); err != nil {
			return err
		}
	}
	return nil
}

// giveCheckpoint hands out the checkpoint the engine's checkpointer wrote
// at path: into out (the stream's name before its extension when the
// ledger has several streams) or, without out, on stdout — its file's path
// when the ledger has several streams, a note each.
func (a *app) giveCheckpoint(out, path string, several bool) error {
	signed, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cp, err := checkpoint.ParseNote(signed)
	if err != nil {
		return err
	}
	switch {
	case out != "":
		if several {
			ext := filepath.Ext(out)
			out = strings.TrimSuffix(out, ext) + "." + checkpoint.StreamOf(cp.Origin) + ext
		}
		if err := os.WriteFile(out, signed, 0o644); err != nil {
			return cmdline.Usage(err)
		}
		fmt.Fprintf(a.stderr, "checkpoint of %d envelopes in %d sessions written to %s (and %s, recorded in %s)\n", cp.Size, len(cp.Heads), out, path, engine.CheckpointSession)
	case several:
		fmt.Fprintf(a.stderr, "checkpoint of %s: %d envelopes in %d sessions, recorded in %s\n", checkpoint.StreamOf(cp.Origin), cp.Size, len(cp.Heads), engine.CheckpointSession)
		_, err = fmt.Fprintln(a.stdout, path)
	default:
		_, err = a.stdout.Write(signed)
	}
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
			"key that signs records. A ledger spread over several streams (--streams) has a log in each, and\n" +
			"gets a checkpoint of each: with -o FILE written as FILE with the stream's name before its\n" +
			"extension (cp.note: cp.LEDGER-0.note, ...); without, the paths of their files in DATA/checkpoints\n" +
			"are printed, one a line.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Usage: "Ed25519 PKCS#8 PEM `FILE` to sign with (default: DATA/keys/checkpoint-ed25519.pem)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
		},
		Action: a.checkpoint,
	})
}
