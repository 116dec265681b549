package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/ledger/store"
)

func (a *app) checkpoint(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	key, _, err := cmdline.SigningKey(c.String("key"), cmdline.Resolve(c, cmdline.FlagData), cmdline.KeyCheckpoints)
	if err != nil {
		return err
	}
	st, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return err
	}
	defer st.Close()
	infos, err := st.Sessions(c.Context, store.Filter{})
	if err != nil {
		return err
	}
	heads := make([]checkpoint.Head, len(infos))
	for i, in := range infos {
		heads[i] = checkpoint.Head{Tenant: in.Tenant, Session: in.Session, Seq: in.HeadSeq, Hash: in.HeadHash}
	}
	signed, err := checkpoint.New("agentledger/"+st.StreamName(), heads).Sign(key)
	if err != nil {
		return err
	}
	if out := c.String("output"); out != "" {
		if err := os.WriteFile(out, signed, 0o644); err != nil {
			return cmdline.Usage(err)
		}
		fmt.Fprintf(a.stderr, "checkpoint of %d sessions written to %s\n", len(heads), out)
		return nil
	}
	_, err = a.stdout.Write(signed)
	return err
}

// checkpointCommand is `checkpoint`.
func checkpointCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "checkpoint",
		Usage:     "write a signed checkpoint of every session's head (C2SP signed note, Ed25519)",
		ArgsUsage: " ",
		Description: "A later `ledger verify --checkpoint FILE --pubkey KEY.pub.pem` finds every session that is\n" +
			"shorter than the checkpoint says or differs at its checkpointed seq — the truncations and\n" +
			"rewritten suffixes a hash chain alone cannot show. The key defaults to the engine's checkpoint key\n" +
			"(DATA/keys/checkpoint-ed25519.pem, generated on first use, public key beside it), never the\n" +
			"key that signs records.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Usage: "Ed25519 PKCS#8 PEM `FILE` to sign with (default: DATA/keys/checkpoint-ed25519.pem)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
		},
		Action: a.checkpoint,
	})
}
