package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/ledger/store"
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
	keys, cks, err := verifyKeys(c)
	if err != nil {
		return err
	}
	witnesses, err := witnessKeys(c)
	if err != nil {
		return err
	}
	v := ledger.NewVerifier(mode, lim)
	if len(keys.Records) > 0 {
		// Records are checked with the record keys alone: one signed
		// with a checkpoint key is bad_signature.
		v.With(receipt.RecordCheck(keys.Records, mode, lim))
	}
	fed, err := a.feedVerifier(c, v, cks, keys)
	if err != nil {
		return err
	}
	rep, err := heldToCheckpoints(c, v, fed, cks, witnesses)
	if err != nil {
		return err
	}
	if err := cmdline.Render(a.stdout, format, rep, func(w io.Writer) error { return writeReport(w, rep) }); err != nil {
		return err
	}
	if !rep.OK() {
		return cmdline.Fault(fmt.Errorf("%d integrity faults", len(rep.Faults)))
	}
	for _, ck := range cks {
		fmt.Fprintf(a.stderr, "checkpoint %s (%s, %d envelopes, %d sessions) holds\n", ck.name, ck.Origin, ck.Size, len(ck.Heads))
	}
	return nil
}

// heldToCheckpoints is v's report (of what the filter selects) with what
// the checkpoints add: those fed carried or recorded, and every one given
// (each checked, every two consistent, each with the witnesses'
// cosignatures); records of format 1 only where one of them covers them.
func heldToCheckpoints(c *cli.Context, v *ledger.Verifier, fed fed, cks []givenCheckpoint, witnesses map[string]ed25519.PublicKey) (*ledger.Report, error) {
	f := filterOf(c)
	rep := v.Report().Only(f.Tenant, f.Session)
	rep.Faults = append(rep.Faults, fed.faults...)
	rep.Limits = append(rep.Limits, fed.limits...)
	vouching, names := fed.vouching, make([]string, len(cks))
	for i, ck := range cks {
		vouching, names[i] = append(vouching, ck.Checkpoint), ck.name
	}
	rep.Faults = append(rep.Faults, checkpoint.Uncovered(rep.Legacy, vouching)...)
	rep.Faults = append(rep.Faults, checkpoint.AllConsistent(vouching[len(fed.vouching):], names)...)
	for _, ck := range cks {
		faults, limits := ck.witnessed(witnesses)
		rep.Faults, rep.Limits = append(rep.Faults, faults...), append(rep.Limits, limits...)
		ck.Heads = slices.DeleteFunc(ck.Heads, func(h checkpoint.Head) bool { return !f.Match(ledger.SessionKey{Tenant: h.Tenant, Session: h.Session}) })
		faults, err := ck.Check(c.Context, checkpoint.InVerifier(v))
		if err != nil {
			return nil, err
		}
		rep.Faults = append(rep.Faults, faults...)
	}
	return rep, nil
}

// givenCheckpoint is a checkpoint --checkpoint named, by its file, with
// the signed note as given.
type givenCheckpoint struct {
	*checkpoint.Checkpoint
	name string
	note []byte
}

// witnessed checks the cosignature of every witness required (by name),
// and names, as limits, the cosignatures of witnesses not given.
func (ck givenCheckpoint) witnessed(witnesses map[string]ed25519.PublicKey) (faults []*ledger.ChainError, limits []string) {
	for _, name := range slices.Sorted(maps.Keys(witnesses)) {
		err := checkpoint.CheckCosignature(ck.note, name, witnesses[name])
		kind := checkpoint.NotCosigned
		if errors.Is(err, checkpoint.ErrCosignedOther) {
			kind = checkpoint.CosignedOther
		}
		if err != nil {
			faults = append(faults, &ledger.ChainError{Kind: kind, Tenant: "agentledger", Session: "log", Seq: uint64(ck.Size),
				Detail: fmt.Sprintf("checkpoint %s: %v", ck.name, err)})
		}
	}
	for _, name := range checkpoint.Cosigners(ck.note) {
		if _, ok := witnesses[name]; !ok {
			limits = append(limits, fmt.Sprintf("checkpoint %s carries a cosignature of %q, not checked (give --witness %s=KEY.pub.pem)", ck.name, name, name))
		}
	}
	return faults, limits
}

// verifyKeys reads --pubkey and --checkpoint-pubkey, each key for its
// purpose, and opens every --checkpoint with the checkpoint keys alone.
func verifyKeys(c *cli.Context) (receipt.Keys, []givenCheckpoint, error) {
	var keys receipt.Keys
	for flag, purpose := range map[string]string{"pubkey": receipt.PurposeRecords, "checkpoint-pubkey": receipt.PurposeCheckpoints} {
		for _, p := range c.StringSlice(flag) {
			raw, err := os.ReadFile(p)
			if err != nil {
				return keys, nil, cmdline.Usage(err)
			}
			if err := keys.Add(raw, purpose); err != nil {
				return keys, nil, cmdline.Usage(fmt.Errorf("--%s %s: %w", flag, p, err))
			}
		}
	}
	var cks []givenCheckpoint
	for _, cp := range c.StringSlice("checkpoint") {
		if len(keys.Checkpoints) == 0 && len(keys.Records) == 0 {
			return keys, nil, cmdline.Usage(errors.New("--checkpoint needs the checkpoint key that signed it (--checkpoint-pubkey, or a --pubkey file that says it signs checkpoints)"))
		}
		msg, err := os.ReadFile(cp)
		if err != nil {
			return keys, nil, cmdline.Usage(err)
		}
		ck, err := checkpoint.OpenByRole(msg, keys.Checkpoints, keys.Records)
		if errors.Is(err, checkpoint.ErrSignature) {
			return keys, nil, cmdline.Fault(fmt.Errorf("%s: %w (only checkpoint keys open a checkpoint, in every format)", cp, err))
		}
		if err != nil {
			return keys, nil, cmdline.Usage(fmt.Errorf("%s: %w", cp, err))
		}
		cks = append(cks, givenCheckpoint{ck, cp, msg})
	}
	return keys, cks, nil
}

// witnessKeys reads --witness NAME=FILE: the witnesses whose cosignature
// every --checkpoint must carry.
func witnessKeys(c *cli.Context) (map[string]ed25519.PublicKey, error) {
	out := map[string]ed25519.PublicKey{}
	for _, w := range c.StringSlice("witness") {
		name, file, ok := strings.Cut(w, "=")
		if !ok {
			return nil, cmdline.Usage(fmt.Errorf("--witness %q: want NAME=FILE", w))
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, cmdline.Usage(err)
		}
		if out[name], err = receipt.ParsePublicKey(raw); err != nil {
			return nil, cmdline.Usage(fmt.Errorf("--witness %s: %w", file, err))
		}
	}
	return out, nil
}

// feedVerifier reads --bundle, or the sessions of the ledger the filter
// selects, into v: one pass, whatever v checks. Verifying a whole store, it
// also reads the stream's log and checks it against the checkpoints given
// and every checkpoint the engine recorded in the ledger. A bundle is held
// to the checkpoints it carries (a bundle holds no stream order: by their
// session heads, and to each other); one that carries none says so, as a
// limit of what it proves.
func (a *app) feedVerifier(c *cli.Context, v *ledger.Verifier, cks []givenCheckpoint, keys receipt.Keys) (fed, error) {
	carried := checkpoint.NewCarried(keys.Checkpoints, keys.Records)
	if b := c.String("bundle"); b != "" {
		in, closeIn, err := a.openInput(b)
		if err != nil {
			return fed{}, err
		}
		defer closeIn()
		v.With(carried)
		if err := v.ReadBundle(in); err != nil {
			return fed{}, cmdline.Usage(err)
		}
		out := fed{faults: carried.Faults(v.HashAt, filterOf(c).Match), vouching: carried.Vouching()}
		if carried.Count() == 0 {
			out.limits = append(out.limits, "the bundle carries no checkpoint: a cut of its tail, or of a session in it, cannot be seen (give --checkpoint)")
		}
		return out, nil
	}
	st, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return fed{}, err
	}
	defer st.Close()
	p := cmdline.NewProgress(a.stderr, "verify")
	defer p.Done()
	if err := st.Feed(c.Context, filterOf(c), v, p.Update); err != nil || filterOf(c) != (store.Filter{}) {
		return fed{}, err
	}
	faults, vouching, err := logFaults(c.Context, st, cks, keys)
	return fed{faults: faults, vouching: vouching}, err
}

// fed is what feeding a verifier found beside its own report: faults of
// checkpoints, limits of what was verified, and the checkpoints signed
// with a checkpoint key that were read (which vouch for older records).
type fed struct {
	faults   []*ledger.ChainError
	limits   []string
	vouching []*checkpoint.Checkpoint
}

// logFaults checks a store's log against every checkpoint given and
// against the checkpoints recorded in it (their signatures too, when
// checkpoint keys are given), and returns the recorded ones a checkpoint
// key opened. A ledger of several streams has a log in each: every one is
// read, and each checkpoint is held to the log of the stream it names.
func logFaults(ctx context.Context, st *store.Store, cks []givenCheckpoint, keys receipt.Keys) ([]*ledger.ChainError, []*checkpoint.Checkpoint, error) {
	logs := st.LogsOf(false)
	for _, l := range logs {
		if err := st.CatchUp(ctx, l); err != nil {
			return nil, nil, err
		}
	}
	var faults []*ledger.ChainError
	for _, ck := range cks {
		if f := checkLog(st, logs, ck.Checkpoint); f != nil {
			faults = append(faults, f)
		}
	}
	var vouching []*checkpoint.Checkpoint
	err := eachRecordedCheckpoint(ctx, st, keys, func(e *ledger.Envelope, m store.Msg, cp *checkpoint.Checkpoint, fault *ledger.ChainError) {
		switch {
		case fault != nil:
			faults = append(faults, fault)
		default:
			if len(keys.Checkpoints) > 0 {
				vouching = append(vouching, cp) // opened with a checkpoint key
			}
			if f := checkLog(st, logs, cp); f != nil {
				faults = append(faults, &ledger.ChainError{Kind: f.Kind, Tenant: e.TenantID(), Session: e.SessionID(), Seq: e.Seq(), StreamSeq: m.StreamSeq,
					Stream: m.Stream, Detail: "the recorded checkpoint: " + f.Detail})
			}
		}
	})
	return faults, vouching, err
}

// eachRecordedCheckpoint calls fn with every Checkpoint record the engine
// recorded in st, its checkpoint (opened with keys' checkpoint keys, never
// a records key) or the fault that refuses it.
func eachRecordedCheckpoint(ctx context.Context, st *store.Store, keys receipt.Keys, fn func(*ledger.Envelope, store.Msg, *checkpoint.Checkpoint, *ledger.ChainError)) error {
	return st.ReadSession(ctx, engine.CheckpointSession, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil || e.EventType() != ledger.EventCheckpoint {
			return nil // chain verification names it
		}
		cp, fault := checkpoint.Recorded(e, keys.Checkpoints, keys.Records)
		if fault != nil {
			fault.StreamSeq, fault.Stream = m.StreamSeq, m.Stream
		}
		fn(e, m, cp, fault)
		return nil
	})
}

// checkLog holds cp to the log of the stream it names among logs (a
// one-stream ledger's only log); a checkpoint of a log that names none of
// the ledger's streams is log_rewritten.
func checkLog(st *store.Store, logs []*store.LogState, cp *checkpoint.Checkpoint) *ledger.ChainError {
	l := store.LogFor(logs, cp.Origin)
	if l == nil && cp.Version >= checkpoint.Version2 {
		return &ledger.ChainError{Kind: checkpoint.LogRewritten, Tenant: "agentledger", Session: "log", Seq: uint64(cp.Size),
			Detail: fmt.Sprintf("the checkpoint's origin %s names none of the streams of ledger %s (%s)", cp.Origin, st.StreamName(), strings.Join(st.Streams(), ", "))}
	}
	if l == nil {
		return nil
	}
	return cp.CheckLog(&l.Log)
}

func writeReport(w io.Writer, r *ledger.Report) error {
	for _, f := range r.Faults {
		fmt.Fprintf(w, "FAULT %s\n", f)
	}
	for _, l := range r.Limits {
		fmt.Fprintf(w, "LIMIT %s\n", l)
	}
	for _, l := range r.Legacy {
		fmt.Fprintf(w, "LEGACY %s/%s seq %d-%d: %d records in %s: %s\n", l.Tenant, l.Session, l.FirstSeq, l.LastSeq, l.Records, l.Format, l.Guarantees)
	}
	status := "OK"
	if !r.OK() {
		status = "FAILED"
	}
	_, err := fmt.Fprintf(w, "%s: %d envelopes in %d sessions verified (%s), %d faults\n",
		status, r.Envelopes, len(r.Sessions), r.Mode, len(r.Faults))
	return err
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
			&cli.StringSliceFlag{Name: "pubkey", Usage: "also check every engine record's signature, receipt and resolution with the Ed25519 record keys in PEM `FILE` (repeatable); a key file that says it signs checkpoints (Agentledger-Purpose) is used for checkpoints only"},
			&cli.StringSliceFlag{Name: "checkpoint-pubkey", Usage: "the Ed25519 checkpoint key in PEM `FILE` (repeatable): checkpoints only, never records"},
			&cli.StringSliceFlag{Name: "checkpoint", Usage: "also check the ledger against this signed checkpoint `FILE` (needs its checkpoint key; repeatable: each is checked, and any two must agree): finds a cut or rewritten log, truncated and rewritten sessions, and two checkpoints that show a forked ledger"},
			&cli.StringSliceFlag{Name: "witness", Usage: "require --checkpoint to carry a valid cosignature of the witness `NAME=FILE` (its public key, as ledger witness writes it; repeatable)"},
		),
		Action: a.verify,
	})
}
