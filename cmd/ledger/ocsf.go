package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/ocsf"
	"github.com/agentledger/agentledger/receipt"
)

// exportOCSF writes the selected sessions (of the store, or of --bundle)
// as OCSF events, one JSON object per line, after verifying every chain
// deeply: a tampered record is refused and nothing is written.
func (a *app) exportOCSF(c *cli.Context, out io.Writer) error {
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	keys, err := recordKeys(c)
	if err != nil {
		return err
	}
	if path := c.String("bundle"); path != "" && !c.IsSet("pubkey") && len(keys) > 0 {
		// Without --pubkey the data directory's key checks a bundle of
		// its record; a bundle of hook events alone (as a host reported
		// them, with no verdict of an engine) is not held to it.
		holds, err := holdsRecords(path, lim)
		if err != nil {
			return err
		}
		if !holds {
			keys = nil
			fmt.Fprintf(a.stderr, "ledger: %s holds hook events only, no verdict of an engine: exported as recorded (--pubkey requires the engine's verdicts)\n", path)
		}
	}
	conv := ocsf.NewConverter(engine.Version)
	w := ocsfWriter(out)
	n := 0
	emit := func(e *ledger.Envelope) error {
		n++
		evs, err := conv.Add(e)
		if err != nil {
			return cmdline.Fault(err)
		}
		return w(evs)
	}
	v := ocsfVerifier(keys, lim)
	if v.checkpointKeys, err = checkpointKeysOf(c); err != nil {
		return err
	}
	if path := c.String("bundle"); path != "" {
		err = ocsfFromBundle(c, path, v, emit)
	} else {
		err = ocsfFromStore(c, v, emit)
	}
	if err != nil {
		return err
	}
	if f := filterOf(c); n == 0 && f.Session != "" {
		return noSession(f)
	}
	return w(conv.Flush())
}

// ocsfFromBundle verifies a bundle, then gives each selected envelope to
// emit, in the bundle's order.
func ocsfFromBundle(c *cli.Context, path string, v *verified, emit func(*ledger.Envelope) error) error {
	f, err := os.Open(path)
	if err != nil {
		return cmdline.Usage(err)
	}
	carried := checkpoint.NewCarried(v.checkpointKeys, v.keys)
	v.With(carried)
	err = v.ReadBundle(f)
	f.Close()
	if err != nil {
		return cmdline.Fault(fmt.Errorf("%s: %w", path, err))
	}
	v.vouching, v.faults = carried.Vouching(), carried.Faults(v.HashAt, filterOf(c).Match)
	if err := v.refuse(path, filterOf(c)); err != nil {
		return err
	}
	lim := v.lim
	if f, err = os.Open(path); err != nil {
		return cmdline.Usage(err)
	}
	defer f.Close()
	return ledger.ReadLines(f, lim, func(line []byte, n int) error {
		e, err := ledger.Decode(line, lim)
		if err != nil {
			return cmdline.Fault(fmt.Errorf("%s line %d: %w", path, n, err))
		}
		if !filterOf(c).Match(e.Key()) {
			return nil
		}
		return emit(e)
	})
}

var errHoldsRecords = errors.New("the bundle holds the engine's records")

// holdsRecords says whether a bundle holds any of the engine's records.
func holdsRecords(path string, lim ledger.Limits) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, cmdline.Usage(err)
	}
	defer f.Close()
	err = ledger.ReadLines(f, lim, func(line []byte, n int) error {
		if e, err := ledger.Decode(line, lim); err == nil && ledger.IsRecordType(e.EventType()) {
			return errHoldsRecords // no need to read further
		}
		return nil
	})
	if errors.Is(err, errHoldsRecords) {
		return true, nil
	}
	if err != nil {
		return false, cmdline.Fault(fmt.Errorf("%s: %w", path, err))
	}
	return false, nil
}

// ocsfFromStore verifies the selected sessions of the store, then gives
// each envelope to emit, session by session in seq order.
func ocsfFromStore(c *cli.Context, v *verified, emit func(*ledger.Envelope) error) error {
	s, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Feed(c.Context, filterOf(c), v.Verifier, nil); err != nil {
		return err
	}
	// The recorded checkpoints are held against the stream's log, as ledger
	// verify holds them: one the log does not match vouches for nothing.
	if v.faults, v.vouching, err = logFaults(c.Context, s, nil, receipt.Keys{Records: v.keys, Checkpoints: v.checkpointKeys}); err != nil {
		return err
	}
	if err := v.refuse("the record", filterOf(c)); err != nil {
		return err
	}
	lim := v.lim
	infos, err := s.Sessions(c.Context, filterOf(c))
	if err != nil {
		return err
	}
	for _, info := range infos {
		err := s.ReadSession(c.Context, info.Key(), func(m store.Msg) error {
			e, err := ledger.Decode(m.Data, lim)
			if err != nil {
				return cmdline.Fault(fmt.Errorf("%s: %w", m.Where(), err))
			}
			return emit(e)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// verified is the deep verification an export runs before it writes
// anything: chains, and with record keys every record's signature and
// receipt. Without a key it notes whether the input holds the engine's
// records, which then cannot be vouched for.
type verified struct {
	*ledger.Verifier
	lim     ledger.Limits
	keyless bool
	records int
	keys    receipt.Keyring
	// checkpointKeys open the checkpoints the input carries; vouching are
	// those they opened (what vouches for records of format 1), faults
	// what reading them found.
	checkpointKeys receipt.Keyring
	vouching       []*checkpoint.Checkpoint
	faults         []*ledger.ChainError
}

func ocsfVerifier(keys receipt.Keyring, lim ledger.Limits) *verified {
	v := &verified{Verifier: ledger.NewVerifier(ledger.Deep, lim), lim: lim, keyless: len(keys) == 0, keys: keys}
	if v.keyless {
		v.With(v)
	} else {
		v.With(receipt.RecordCheck(keys, ledger.Deep, lim))
	}
	return v
}

// Envelope counts the engine's records read without a key.
func (v *verified) Envelope(_ []byte, e *ledger.Envelope, _ ledger.Position) []*ledger.ChainError {
	if e != nil && ledger.IsRecordType(e.EventType()) {
		v.records++
	}
	return nil
}

// refuse fails the export when what was read (in f) does not verify, or
// holds records no key vouched for.
func (v *verified) refuse(what string, f store.Filter) error {
	rep := v.Report().Only(f.Tenant, f.Session)
	// Records of format 1 are exported only where a checkpoint signed with
	// a checkpoint key covers them, as ledger verify holds them.
	rep.Faults = append(append(rep.Faults, v.faults...), checkpoint.Uncovered(rep.Legacy, v.vouching)...)
	if !rep.OK() {
		return cmdline.Fault(fmt.Errorf("refused: %s does not verify (%d faults; first: %s); nothing exported", what, len(rep.Faults), rep.Faults[0]))
	}
	if v.keyless && v.records > 0 {
		return cmdline.Usage(fmt.Errorf("%s holds %d of the engine's signed records (verdicts, resolutions…): give the engine's record public key "+
			"with --pubkey to export them verified (a chain alone can be rebuilt by anyone)", what, v.records))
	}
	return nil
}

// ocsfWriter writes events one JSON object per line.
func ocsfWriter(out io.Writer) func([]ocsf.Event) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return func(evs []ocsf.Event) error {
		for _, ev := range evs {
			if err := enc.Encode(ev); err != nil {
				return err
			}
		}
		return nil
	}
}
