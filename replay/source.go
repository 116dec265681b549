package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/ledger"
)

// Chain is one recorded session to replay: its envelopes in seq order, or
// the faults that keep it from being replayed.
type Chain struct {
	Source    string
	Key       ledger.SessionKey
	Envelopes []*ledger.Envelope
	// Faults, typed (kind, seq), and Fault, their text, say why the
	// session cannot be replayed.
	Faults []*ledger.ChainError
	Fault  string
}

// ChainOf makes a replay Chain of a session read by a ledger.Collector.
func ChainOf(source string, sc ledger.SessionChain) Chain {
	c := Chain{Source: source, Key: sc.Key, Envelopes: sc.Envelopes, Faults: sc.Faults}
	if len(sc.Faults) > 0 {
		fs := make([]string, len(sc.Faults))
		for i, f := range sc.Faults {
			fs[i] = f.Error()
		}
		c.Fault = strings.Join(fs, "; ")
	}
	return c
}

// ReadBundle reads an NDJSON bundle and verifies every chain in it in deep
// mode, in one pass. Each session comes back as a Chain; a session with a
// fault carries it instead of its envelopes, and a fault that names no
// session (a line that is not an envelope) comes back as a Chain of its own
// with an empty key. name is the bundle's name in reports.
func ReadBundle(r io.Reader, name string, lim ledger.Limits) ([]Chain, error) {
	col := ledger.NewCollector(lim)
	if err := col.ReadBundle(r); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	sessions, _ := col.Chains()
	out := make([]Chain, len(sessions))
	for i, sc := range sessions {
		out[i] = ChainOf(name, sc)
	}
	return out, nil
}

// Source yields the chains to replay one at a time, so that a run holds
// only the chains being replayed, not all of them. An error ends it.
type Source = iter.Seq2[Chain, error]

// Chains is a Source over chains already in memory.
func Chains(cs []Chain) Source {
	return func(yield func(Chain, error) bool) {
		for _, c := range cs {
			if !yield(c, nil) {
				return
			}
		}
	}
}

// bundleFiles resolves bundle paths: files as given, and every *.ndjson
// file of a directory (not recursively, in name order).
func bundleFiles(paths []string) ([]string, error) {
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
	return files, nil
}

// BundleSource reads bundle files (and the *.ndjson files of directories)
// one file at a time. Paths are resolved now: a missing one is an error
// here, not in the middle of a run.
func BundleSource(paths []string, lim ledger.Limits) (Source, error) {
	files, err := bundleFiles(paths)
	if err != nil {
		return nil, err
	}
	return func(yield func(Chain, error) bool) {
		for _, f := range files {
			cs, err := readBundleFile(f, lim)
			if err != nil {
				yield(Chain{}, err)
				return
			}
			for _, c := range cs {
				if !yield(c, nil) {
					return
				}
			}
		}
	}, nil
}

// ReadBundles reads every chain of bundle files and directories at once.
func ReadBundles(paths []string, lim ledger.Limits) ([]Chain, error) {
	src, err := BundleSource(paths, lim)
	if err != nil {
		return nil, err
	}
	var out []Chain
	for c, err := range src {
		if err != nil {
			return nil, err
		}
		out = append(out, c)
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
type DeciderFor func(ledger.SessionKey) (*decide.Decider, error)

// RunExact replays every chain src yields on up to workers goroutines
// (0: one per CPU) and returns their reports; NewReport orders them. A
// chain with a fault is reported as faulty and not replayed. Only the
// chains being replayed are held in memory.
func RunExact(ctx context.Context, src Source, deciderFor DeciderFor, workers int) ([]*SessionReport, error) {
	var reports []*SessionReport
	err := RunExactEach(ctx, src, deciderFor, workers, func(r *SessionReport) error {
		reports = append(reports, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return reports, nil
}

// RunExactEach is RunExact handing each session's report to each as it
// is done (one call at a time, in no set order) instead of keeping them:
// a run holds only the chains and reports in flight, however many
// sessions it replays. An error from each stops the run and is returned.
func RunExactEach(ctx context.Context, src Source, deciderFor DeciderFor, workers int, each func(*SessionReport) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan Chain)
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		cancel()
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				r, err := ReplayChain(ctx, c, deciderFor)
				if err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				if len(errs) == 0 && ctx.Err() == nil { // a cancelled replay is no report
					err = each(r)
				}
				mu.Unlock()
				if err != nil {
					fail(err)
				}
			}
		}()
	}
feed:
	for c, err := range src {
		if err != nil {
			fail(err)
			break
		}
		select {
		case next <- c:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return context.Cause(ctx)
}

// ReplayChain replays one chain as RunExact does: a chain with a fault is
// reported as faulty and not replayed.
func ReplayChain(ctx context.Context, c Chain, deciderFor DeciderFor) (*SessionReport, error) {
	if c.Fault != "" {
		return &SessionReport{TenantID: c.Key.Tenant, SessionID: c.Key.Session, Mode: ModeExact, Diffs: []Diff{}, Fault: c.Fault, Faults: c.Faults, Source: c.Source}, nil
	}
	d, err := deciderFor(c.Key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Key, err)
	}
	r := Exact(ctx, d, c.Envelopes)
	r.Source = c.Source
	return r, nil
}
