package replay

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
)

// Chain is one recorded session to replay: its envelopes in seq order, or
// the fault that keeps it from being replayed.
type Chain struct {
	Source    string
	Key       ledger.SessionKey
	Envelopes []*ledger.Envelope
	Fault     string
}

// ReadBundle reads an NDJSON bundle and verifies every chain in it in deep
// mode. Each session comes back as a Chain; a session with a fault carries
// it instead of its envelopes, and a fault that names no session (a line
// that is not an envelope) comes back as a Chain of its own with an empty
// key. name is the bundle's name in reports.
func ReadBundle(r io.Reader, name string, lim ledger.Limits) ([]Chain, error) {
	v := ledger.NewVerifier(ledger.Deep, lim)
	byKey := map[ledger.SessionKey][]*ledger.Envelope{}
	err := ledger.ReadLines(r, lim, func(line []byte, n int) error {
		v.Add(line, ledger.Position{Line: n})
		if e, err := ledger.Decode(bytes.Clone(line), lim); err == nil {
			byKey[e.Key()] = append(byKey[e.Key()], e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rep := v.Report()
	faults := map[ledger.SessionKey][]string{}
	for _, f := range rep.Faults {
		k := ledger.SessionKey{Tenant: f.Tenant, Session: f.Session}
		faults[k] = append(faults[k], f.Error())
	}
	var out []Chain
	for k, es := range byKey {
		c := Chain{Source: name, Key: k}
		if fs := faults[k]; len(fs) > 0 {
			c.Fault = strings.Join(fs, "; ")
		} else {
			slices.SortFunc(es, func(a, b *ledger.Envelope) int { return cmp.Compare(a.Seq(), b.Seq()) })
			c.Envelopes = es
		}
		out = append(out, c)
	}
	if fs := faults[ledger.SessionKey{}]; len(fs) > 0 {
		out = append(out, Chain{Source: name, Fault: strings.Join(fs, "; ")})
	}
	return out, nil
}

// ReadBundles reads bundle files, and every *.ndjson file of a directory
// (not recursively, in name order).
func ReadBundles(paths []string, lim ledger.Limits) ([]Chain, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("--bundle: %w", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		m, err := filepath.Glob(filepath.Join(p, "*.ndjson"))
		if err != nil {
			return nil, fmt.Errorf("--bundle %s: %w", p, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("--bundle %s: no .ndjson files in the directory", p)
		}
		slices.Sort(m)
		files = append(files, m...)
	}
	var out []Chain
	for _, f := range files {
		cs, err := readBundleFile(f, lim)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

func readBundleFile(path string, lim ledger.Limits) ([]Chain, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--bundle: %w", err)
	}
	defer f.Close()
	return ReadBundle(f, path, lim)
}

// DeciderFor gives the Decider to replay a session with. Most runs use one
// candidate for every session; tests replay each fixture session with the
// manifest it was recorded under.
type DeciderFor func(ledger.SessionKey) (*engine.Decider, error)

// RunExact replays every chain on up to workers goroutines (0: one per
// CPU) and returns their reports in a deterministic order. A chain with a
// fault is reported as faulty and not replayed.
func RunExact(ctx context.Context, chains []Chain, deciderFor DeciderFor, workers int) ([]*SessionReport, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	reports := make([]*SessionReport, len(chains))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan int)
	)
	for w := 0; w < min(workers, max(len(chains), 1)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := chains[i]
				if c.Fault != "" {
					reports[i] = &SessionReport{TenantID: c.Key.Tenant, SessionID: c.Key.Session, Mode: ModeExact, Diffs: []Diff{}, Fault: c.Fault, Source: c.Source}
					continue
				}
				d, err := deciderFor(c.Key)
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", c.Key, err))
					mu.Unlock()
					continue
				}
				r := Exact(ctx, d, c.Envelopes)
				r.Source = c.Source
				reports[i] = r
			}
		}()
	}
feed:
	for i := range chains {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return reports, nil
}
