package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/receipt"
)

// witnessCommand is `witness`.
func witnessCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "witness",
		Usage:     "cosign a checkpoint (C2SP tlog-cosignature) if it is consistent with the last one this witness cosigned for its log",
		ArgsUsage: "CHECKPOINT",
		Description: "The witness keeps, per log, the size and root it cosigned last (--state). It refuses a\n" +
			"checkpoint that is not consistent with it. A verifier checks the cosignature with\n" +
			"ledger verify --checkpoint FILE --witness NAME=KEY.pub.pem. It refuses a\n" +
			"checkpoint of a smaller size, or of the same size with another root (a fork), and one of a\n" +
			"larger size unless --proof (ledger prove consistency) shows the last one is its prefix.\n" +
			"It prints the checkpoint with its cosignature line added. Run it somewhere the ledger's\n" +
			"writer cannot reach: its state is what makes a rewritten log evident.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Required: true, Usage: "the witness's Ed25519 PKCS#8 PEM `FILE` (created when missing; its public key is written beside it, as NAME.pub.pem for NAME.pem)"},
			&cli.StringFlag{Name: "name", Required: true, Usage: "the witness's `NAME` (a schema-less URL)"},
			&cli.StringFlag{Name: "state", Required: true, Usage: "JSON `FILE` of what the witness cosigned last, per log"},
			&cli.StringFlag{Name: "checkpoint-pubkey", Required: true, Usage: "the log's checkpoint key, PEM `FILE`"},
			&cli.StringFlag{Name: "proof", Usage: "consistency proof `FILE` (ledger prove consistency) from the last checkpoint cosigned"},
		},
		Action: a.witness,
	}
}

func (a *app) witness(c *cli.Context) error {
	if c.NArg() != 1 {
		return cmdline.Usage(errors.New("witness takes one CHECKPOINT file"))
	}
	msg, err := os.ReadFile(c.Args().First())
	if err != nil {
		return cmdline.Usage(err)
	}
	w, err := loadWitness(c)
	if err != nil {
		return err
	}
	var keys receipt.Keys
	raw, err := os.ReadFile(c.String("checkpoint-pubkey"))
	if err == nil {
		err = keys.Add(raw, receipt.PurposeCheckpoints)
	}
	if err != nil || len(keys.Checkpoints) != 1 {
		return cmdline.Usage(fmt.Errorf("--checkpoint-pubkey: want one checkpoint key: %v", err))
	}
	var proof *checkpoint.ConsistencyProof
	if p := c.String("proof"); p != "" {
		raw, err := os.ReadFile(p)
		if err != nil {
			return cmdline.Usage(err)
		}
		proof = new(checkpoint.ConsistencyProof)
		if err := json.Unmarshal(raw, proof); err != nil {
			return cmdline.Usage(fmt.Errorf("--proof %s: %w", p, err))
		}
	}
	var logKey []byte
	for _, k := range keys.Checkpoints {
		logKey = k
	}
	out, err := w.Cosign(msg, logKey, proof, time.Now())
	if err != nil {
		return cmdline.Fault(err)
	}
	if err := saveWitness(c.String("state"), w.Seen); err != nil {
		return err
	}
	_, err = a.stdout.Write(out)
	return err
}

// loadWitness reads --key (creating it when missing) and --state.
func loadWitness(c *cli.Context) (*checkpoint.Witness, error) {
	keyPath := c.String("key")
	if _, err := os.Stat(keyPath); errors.Is(err, fs.ErrNotExist) {
		pemKey, err := receipt.GenerateKey()
		if err == nil {
			err = os.WriteFile(keyPath, pemKey, 0o600)
		}
		if err != nil {
			return nil, fmt.Errorf("witness key: %w", err)
		}
	}
	key, err := receipt.LoadKey(keyPath)
	if err != nil {
		return nil, cmdline.Usage(err)
	}
	// The public key beside it: what a verifier names the witness by
	// (ledger verify --witness NAME=FILE).
	pub := strings.TrimSuffix(keyPath, ".pem") + ".pub.pem"
	if err := os.WriteFile(pub, receipt.NewSigner(key).PublicKeyPEM(), 0o644); err != nil {
		return nil, fmt.Errorf("witness public key: %w", err)
	}
	w := &checkpoint.Witness{Name: c.String("name"), Key: key, Seen: map[string]checkpoint.Seen{}}
	raw, err := os.ReadFile(c.String("state"))
	if errors.Is(err, fs.ErrNotExist) {
		return w, nil
	}
	if err == nil {
		err = json.Unmarshal(raw, &w.Seen)
	}
	if err != nil {
		return nil, cmdline.Usage(fmt.Errorf("--state: %w", err))
	}
	return w, nil
}

// saveWitness writes the witness's state durably (synced, renamed into
// place) before the cosignature is printed.
func saveWitness(path string, seen map[string]checkpoint.Seen) error {
	raw, err := json.MarshalIndent(seen, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err = f.Write(raw); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("witness state: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		defer d.Close()
		return d.Sync()
	}
	return nil
}
