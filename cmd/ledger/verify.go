package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/receipt"
)

func (a *app) verify(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	format, err := cmdline.Format(c)
	if err != nil {
		return err
	}
	mode := ledger.Fast
	if c.Bool("deep") {
		mode = ledger.Deep
	}
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	ring, ck, err := verifyKeys(c)
	if err != nil {
		return err
	}
	v := ledger.NewVerifier(mode, lim)
	if ring != nil {
		v.With(receipt.RecordCheck(ring, mode, lim))
	}
	if err := a.feedVerifier(c, v); err != nil {
		return err
	}
	f := filterOf(c)
	rep := v.Report().Only(f.Tenant, f.Session)
	if ck != nil {
		ck.Heads = slices.DeleteFunc(ck.Heads, func(h checkpoint.Head) bool { return !f.Match(ledger.SessionKey{Tenant: h.Tenant, Session: h.Session}) })
		faults, err := ck.Check(c.Context, checkpoint.InVerifier(v))
		if err != nil {
			return err
		}
		rep.Faults = append(rep.Faults, faults...)
	}
	if err := cmdline.Render(a.stdout, format, rep, func(w io.Writer) error { return writeReport(w, rep) }); err != nil {
		return err
	}
	if !rep.OK() {
		return cmdline.Fault(fmt.Errorf("%d integrity faults", len(rep.Faults)))
	}
	return nil
}

// verifyKeys reads --pubkey into a keyring and opens --checkpoint with it.
func verifyKeys(c *cli.Context) (receipt.Keyring, *checkpoint.Checkpoint, error) {
	pubkeys, cp := c.StringSlice("pubkey"), c.String("checkpoint")
	if cp != "" && len(pubkeys) == 0 {
		return nil, nil, cmdline.Usage(errors.New("--checkpoint needs --pubkey, the public key that signed it"))
	}
	if len(pubkeys) == 0 {
		return nil, nil, nil
	}
	ring, err := readKeyring(pubkeys)
	if err != nil || cp == "" {
		return ring, nil, err
	}
	msg, err := os.ReadFile(cp)
	if err != nil {
		return nil, nil, cmdline.Usage(err)
	}
	ck, err := checkpoint.OpenWith(msg, ring)
	if errors.Is(err, checkpoint.ErrSignature) {
		return nil, nil, cmdline.Fault(fmt.Errorf("%s: %w", cp, err))
	}
	if err != nil {
		return nil, nil, cmdline.Usage(fmt.Errorf("%s: %w", cp, err))
	}
	return ring, ck, nil
}

// feedVerifier reads --bundle, or the sessions of the ledger the filter
// selects, into v: one pass, whatever v checks.
func (a *app) feedVerifier(c *cli.Context, v *ledger.Verifier) error {
	if b := c.String("bundle"); b != "" {
		in, closeIn, err := a.openInput(b)
		if err != nil {
			return err
		}
		defer closeIn()
		if err := v.ReadBundle(in); err != nil {
			return cmdline.Usage(err)
		}
		return nil
	}
	st, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return err
	}
	defer st.Close()
	p := cmdline.NewProgress(a.stderr, "verify")
	defer p.Done()
	return st.Feed(c.Context, filterOf(c), v, p.Update)
}

func writeReport(w io.Writer, r *ledger.Report) error {
	for _, f := range r.Faults {
		fmt.Fprintf(w, "FAULT %s\n", f)
	}
	status := "OK"
	if !r.OK() {
		status = "FAILED"
	}
	_, err := fmt.Fprintf(w, "%s: %d envelopes in %d sessions verified (%s), %d faults\n",
		status, r.Envelopes, len(r.Sessions), r.Mode, len(r.Faults))
	return err
}

// readKeyring reads the Ed25519 public keys of PEM files.
func readKeyring(paths []string) (receipt.Keyring, error) {
	ring := receipt.Keyring{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, cmdline.Usage(err)
		}
		if err := ring.Add(raw); err != nil {
			return nil, cmdline.Usage(fmt.Errorf("%s: %w", p, err))
		}
	}
	return ring, nil
}

// verifyCommand is `verify`.
func verifyCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "verify",
		Usage:     "verify chains in the store or in a bundle; exit 1 on any fault",
		ArgsUsage: " ",
		Flags: append(filterFlags(),
			&cli.StringFlag{Name: "bundle", Usage: "verify this bundle `FILE` instead of the store (- for stdin)"},
			&cli.BoolFlag{Name: "deep", Usage: "also re-canonicalize every envelope and require its stored bytes to be its RFC 8785 form"},
			&cli.StringSliceFlag{Name: "pubkey", Usage: "also check every engine record's signature, receipt and resolution with the Ed25519 public keys in PEM `FILE` (repeat it for several keys, e.g. the receipt and the checkpoint key)"},
			&cli.StringFlag{Name: "checkpoint", Usage: "also check the ledger against this signed checkpoint `FILE` (needs --pubkey with its key): finds truncated and rewritten sessions"},
		),
		Action: a.verify,
	})
}
