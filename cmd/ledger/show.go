package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/incident"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/seal"
)

// showCommand is `show`.
func showCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "show",
		Usage:     "print a session as a readable timeline (--format text, json or html)",
		ArgsUsage: "SESSION",
		Description: "Sealed values are shown as sealed (‹sealed:kind›). --reveal decrypts them with the\n" +
			"data directory's sealing keys and records the reveal (who, which session, which keys)\n" +
			"as a signed Reveal record in session audit of tenant agentledger.",
		Flags: []cli.Flag{&cli.StringFlag{Name: "tenant", Value: ledger.DefaultTenant, Usage: "the session's `TENANT`"},
			&cli.BoolFlag{Name: "reveal", Usage: "decrypt sealed values (recorded)"},
			&cli.StringSliceFlag{Name: "pubkey", Usage: "under --format html, check receipts with this record public key `FILE` " +
				"(default: the data directory's own, when it has one)"}},
		Action: a.show,
	})
}

func (a *app) show(c *cli.Context) error {
	if c.NArg() != 1 {
		return cmdline.Usage(errors.New("show takes one SESSION"))
	}
	format := cmdline.Resolve(c, cmdline.FlagFormat)
	if format != "text" && format != "json" && format != "html" {
		return cmdline.Usage(fmt.Errorf("--format %q: want text, json or html", format))
	}
	s, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return err
	}
	defer s.Close()
	k := ledger.SessionKey{Tenant: c.String("tenant"), Session: c.Args().First()}
	var keys seal.KeyStore
	if c.Bool("reveal") {
		if keys, err = cmdline.KeyStore(cmdline.Resolve(c, cmdline.FlagData)); err != nil {
			return err
		}
	}
	rows, kids, err := a.showRows(c, s, k, keys)
	if err != nil {
		return err
	}
	if keys != nil {
		// The reveal is on record before anything revealed is printed.
		if err := a.audit(c, s, ledger.EventReveal, k, "", kids); err != nil {
			return fmt.Errorf("record the reveal: %w", err)
		}
	}
	if format == "html" {
		return a.writeIncident(c, s, k, rows, keys != nil)
	}
	return a.writeRows(format, rows, keys != nil)
}

// writeIncident writes the session's incident view: its rows with the
// chain, receipts (checked with --pubkey or the data directory's key) and
// the newest recorded checkpoint.
func (a *app) writeIncident(c *cli.Context, s *store.Store, k ledger.SessionKey, rows []incident.Record, revealed bool) error {
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	keys, err := recordKeys(c)
	if err != nil {
		return err
	}
	cp, err := incident.NewestCheckpoint(c.Context, s, engine.CheckpointSession, k, dataCheckpointKeys(c), keys)
	if err != nil {
		return err
	}
	in := incident.Input{Key: k, Records: rows, Keys: keys, Checkpoint: cp, Revealed: revealed, Limits: lim}
	return incident.WriteHTML(a.stdout, incident.Build(in))
}

// recordKeys are the record public keys of --pubkey, or, without it, the
// data directory's own record key when it has one (none: an empty ring).
func recordKeys(c *cli.Context) (receipt.Keyring, error) {
	var keys receipt.Keys
	paths := c.StringSlice("pubkey")
	if len(paths) == 0 {
		if _, pub := receipt.KeyFiles(cmdline.Resolve(c, cmdline.FlagData), receipt.KeyRecords); fileExists(pub) {
			paths = []string{pub}
		}
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, cmdline.Usage(err)
		}
		if err := keys.Add(raw, receipt.PurposeRecords); err != nil {
			return nil, cmdline.Usage(fmt.Errorf("--pubkey %s: %w", p, err))
		}
	}
	return keys.Records, nil
}

// dataCheckpointKeys is the data directory's checkpoint public key, when
// it has one (none: an empty ring, and checkpoints are shown unchecked).
func dataCheckpointKeys(c *cli.Context) receipt.Keyring {
	_, pub := receipt.KeyFiles(cmdline.Resolve(c, cmdline.FlagData), receipt.KeyCheckpoints)
	return cmdline.CheckpointKeys(pub)
}

// checkpointKeysOf are the checkpoint public keys of --checkpoint-pubkey,
// or, without it, the data directory's own when it has one.
func checkpointKeysOf(c *cli.Context) (receipt.Keyring, error) {
	paths := c.StringSlice("checkpoint-pubkey")
	if len(paths) == 0 {
		return dataCheckpointKeys(c), nil
	}
	var keys receipt.Keys
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err == nil {
			err = keys.Add(raw, receipt.PurposeCheckpoints)
		}
		if err != nil {
			return nil, cmdline.Usage(fmt.Errorf("--checkpoint-pubkey %s: %w", p, err))
		}
	}
	return keys.Checkpoints, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// showRows reads a session's envelopes as show prints them, revealing
// sealed values with keys when given; kids are the sealing keys used.
func (a *app) showRows(c *cli.Context, s *store.Store, k ledger.SessionKey, keys seal.KeyStore) ([]incident.Record, map[string]bool, error) {
	lim, err := cmdline.Limits(c)
	if err != nil {
		return nil, nil, err
	}
	kids := map[string]bool{}
	var reveal func(*ledger.Envelope) ([]byte, error)
	if keys != nil {
		reveal = func(e *ledger.Envelope) ([]byte, error) {
			if !seal.Has(e.Payload()) {
				return seal.Render(e.Payload()), nil
			}
			scopes := seal.ScopesOf(e.Payload(), e.TenantID(), e.SessionID())
			return seal.Transform(e.Payload(), func(r seal.Ref) (any, error) {
				v, err := seal.OpenIn(r, keys, scopes)
				if errors.Is(err, seal.ErrShredded) {
					return "‹shredded: " + r.Kind + "›", nil
				}
				if errors.Is(err, seal.ErrForeign) {
					return "‹foreign: " + r.Kind + " sealed for another session; not opened›", nil
				}
				kids[r.Kid] = true
				return v, err
			})
		}
	}
	rows, err := incident.Read(c.Context, s, k, lim, reveal)
	if err == nil && len(rows) == 0 {
		err = cmdline.Usage(fmt.Errorf("no session %s", k))
	}
	return rows, kids, err
}

// writeRows prints show's rows as text or NDJSON.
func (a *app) writeRows(format string, rows []incident.Record, revealed bool) error {
	switch format {
	case "json":
		for _, r := range rows {
			out := r.Raw
			if revealed && r.Env != nil {
				out = fmt.Appendf(nil, `{"revealed_payload":%s,"envelope":%s}`, r.Shown, r.Raw)
			}
			if _, err := fmt.Fprintf(a.stdout, "%s\n", out); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range rows {
		if r.Env == nil {
			fmt.Fprintln(a.stdout, r.Unreadable)
			continue
		}
		width := 120
		if revealed {
			width = 0 // a reveal shows everything it decrypted
		}
		if err := a.printRow(r.Env, r.Shown, width); err != nil {
			return err
		}
	}
	return nil
}
