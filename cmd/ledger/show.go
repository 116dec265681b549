package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/incident"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
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
func (a *app) writeIncident(c *cli.Context, s *store.Store, k ledger.SessionKey, rows []row, revealed bool) error {
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
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
			return cmdline.Usage(err)
		}
		if err := keys.Add(raw, receipt.PurposeRecords); err != nil {
			return cmdline.Usage(fmt.Errorf("--pubkey %s: %w", p, err))
		}
	}
	cp, err := newestCheckpoint(c.Context, s)
	if err != nil {
		return err
	}
	in := incident.Input{Key: k, Keys: keys.Records, Checkpoint: cp, Revealed: revealed, Limits: lim}
	for _, r := range rows {
		in.Records = append(in.Records, incident.Record{Raw: r.raw, Env: r.env, Shown: r.shown, StreamSeq: r.streamSeq, Unreadable: r.unreadable})
	}
	return incident.WriteHTML(a.stdout, incident.Build(in))
}

// newestCheckpoint is the last checkpoint the store records (nil: none).
func newestCheckpoint(ctx context.Context, s *store.Store) (*checkpoint.Checkpoint, error) {
	var newest *checkpoint.Checkpoint
	err := s.ReadSession(ctx, engine.CheckpointSession, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil || e.EventType() != ledger.EventCheckpoint {
			return nil // verify names it
		}
		var rec struct {
			Note string `json:"note"`
		}
		if json.Unmarshal(e.Payload(), &rec) == nil {
			if cp, err := checkpoint.ParseNote([]byte(rec.Note)); err == nil {
				newest = cp
			}
		}
		return nil
	})
	return newest, err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// showRows reads a session's envelopes as show prints them, revealing
// sealed values with keys when given; kids are the sealing keys used.
func (a *app) showRows(c *cli.Context, s *store.Store, k ledger.SessionKey, keys seal.KeyStore) ([]row, map[string]bool, error) {
	lim, err := cmdline.Limits(c)
	if err != nil {
		return nil, nil, err
	}
	var rows []row
	kids := map[string]bool{}
	err = s.ReadSession(c.Context, k, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, lim)
		if err != nil {
			rows = append(rows, row{raw: m.Data, streamSeq: m.StreamSeq, unreadable: fmt.Sprintf("stream seq %d  UNREADABLE: %v", m.StreamSeq, err)})
			return nil
		}
		shown := seal.Render(e.Payload())
		if keys != nil && seal.Has(e.Payload()) {
			scopes := seal.ScopesOf(e.Payload(), e.TenantID(), e.SessionID())
			shown, err = seal.Transform(e.Payload(), func(r seal.Ref) (any, error) {
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
			if err != nil {
				return fmt.Errorf("seq %d: %w", e.Seq(), err)
			}
		}
		rows = append(rows, row{env: e, raw: m.Data, streamSeq: m.StreamSeq, shown: shown})
		return nil
	})
	if err == nil && len(rows) == 0 {
		err = cmdline.Usage(fmt.Errorf("no session %s", k))
	}
	return rows, kids, err
}

// writeRows prints show's rows as text or NDJSON.
func (a *app) writeRows(format string, rows []row, revealed bool) error {
	switch format {
	case "json":
		for _, r := range rows {
			out := r.raw
			if revealed && r.env != nil {
				out = fmt.Appendf(nil, `{"revealed_payload":%s,"envelope":%s}`, r.shown, r.raw)
			}
			if _, err := fmt.Fprintf(a.stdout, "%s\n", out); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range rows {
		if r.env == nil {
			fmt.Fprintln(a.stdout, r.unreadable)
			continue
		}
		width := 120
		if revealed {
			width = 0 // a reveal shows everything it decrypted
		}
		if err := a.printRow(r.env, r.shown, width); err != nil {
			return err
		}
	}
	return nil
}

type row struct {
	env        *ledger.Envelope
	raw, shown []byte
	streamSeq  uint64
	unreadable string
}
