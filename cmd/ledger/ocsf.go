package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/ocsf"
)

// exportOCSF writes the selected sessions (of the store, or of --bundle)
// as OCSF events, one JSON object per line, after verifying every chain
// deeply: a tampered record is refused and nothing is written.
func (a *app) exportOCSF(c *cli.Context, out io.Writer) error {
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	conv := ocsf.NewConverter(engine.Version)
	w := ocsfWriter(out)
	emit := func(e *ledger.Envelope) error {
		evs, err := conv.Add(e)
		if err != nil {
			return cmdline.Fault(err)
		}
		return w(evs)
	}
	if path := c.String("bundle"); path != "" {
		err = ocsfFromBundle(c, path, lim, emit)
	} else {
		err = ocsfFromStore(c, lim, emit)
	}
	if err != nil {
		return err
	}
	return w(conv.Flush())
}

// ocsfFromBundle verifies a bundle, then gives each selected envelope to
// emit, in the bundle's order.
func ocsfFromBundle(c *cli.Context, path string, lim ledger.Limits, emit func(*ledger.Envelope) error) error {
	if err := verifyBundleFile(path, lim); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
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

// ocsfFromStore verifies the selected sessions of the store, then gives
// each envelope to emit, session by session in seq order.
func ocsfFromStore(c *cli.Context, lim ledger.Limits, emit func(*ledger.Envelope) error) error {
	s, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return err
	}
	defer s.Close()
	rep, err := s.Verify(c.Context, filterOf(c), ledger.Deep, nil)
	if err != nil {
		return err
	}
	if !rep.OK() {
		return cmdline.Fault(fmt.Errorf("refused: the record does not verify (%d faults; first: %s); nothing exported", len(rep.Faults), rep.Faults[0]))
	}
	infos, err := s.Sessions(c.Context, filterOf(c))
	if err != nil {
		return err
	}
	for _, info := range infos {
		err := s.ReadSession(c.Context, info.Key(), func(m store.Msg) error {
			e, err := ledger.Decode(m.Data, lim)
			if err != nil {
				return cmdline.Fault(fmt.Errorf("stream seq %d: %w", m.StreamSeq, err))
			}
			return emit(e)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// verifyBundleFile verifies a bundle deeply, refusing it on any fault.
func verifyBundleFile(path string, lim ledger.Limits) error {
	f, err := os.Open(path)
	if err != nil {
		return cmdline.Usage(err)
	}
	defer f.Close()
	v := ledger.NewVerifier(ledger.Deep, lim)
	if err := v.ReadBundle(f); err != nil {
		return cmdline.Fault(fmt.Errorf("%s: %w", path, err))
	}
	if rep := v.Report(); !rep.OK() {
		return cmdline.Fault(fmt.Errorf("refused: %s does not verify (%d faults; first: %s); nothing exported", path, len(rep.Faults), rep.Faults[0]))
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
