package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/hookwire"
)

// maxConfigs bounds how many configurations a local engine keeps built;
// past it the cache starts over (a configuration is rebuilt in a few
// hundred milliseconds when next used).
const maxConfigs = 64

// configs builds and caches the configurations hooks ask a local engine
// for: one decider per policy and manifest, keyed by the paths and by the
// size and modification time of every file they read, so that an edited
// manifest takes effect at the next hook, and an unchanged one is never
// rebuilt.
type configs struct {
	c    *cli.Context // the engine's own flags: data directory, keys, limits
	base *decide.Decider

	mu    sync.Mutex
	built map[string]*engine.Config
}

func newConfigs(c *cli.Context, base *decide.Decider) *configs {
	return &configs{c: c, base: base, built: map[string]*engine.Config{}}
}

// get returns the configuration hc names, building it on first use.
func (cs *configs) get(ctx context.Context, hc hookwire.Config) (*engine.Config, error) {
	key := configKey(hc)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cfg, ok := cs.built[key]; ok {
		return cfg, nil
	}
	p, err := loadPolicyAt(cs.c, hc.Policy, hc.Manifest, hc.Hook)
	if err != nil {
		return nil, err
	}
	d := decide.NewDecider(p)
	d.Limits, d.Signer = cs.base.Limits, cs.base.Signer
	if d.Sealer, err = cmdline.Sealer(cmdline.Resolve(cs.c, cmdline.FlagData), p.Manifest()); err != nil {
		return nil, err
	}
	if len(cs.built) >= maxConfigs {
		clear(cs.built)
	}
	cfg := &engine.Config{Decider: d, FailOpen: hc.FailOpen}
	cs.built[key] = cfg
	return cfg, nil
}

// count is how many configurations are built.
func (cs *configs) count() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.built)
}

// configKey identifies what a configuration is built from: everything but
// the tenant (which does not change the decider), and the size and
// modification time of every policy and manifest file.
func configKey(hc hookwire.Config) string {
	hc.Tenant = ""
	h := sha256.New()
	raw, _ := json.Marshal(hc)
	h.Write(raw)
	for _, f := range append([]string{hc.Manifest}, hc.Policy...) {
		if f == "" || f == "default" {
			continue
		}
		_ = filepath.WalkDir(f, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				fmt.Fprintf(h, "%s\x00missing\x00", p)
				return nil
			}
			if d.IsDir() {
				return nil
			}
			if info, err := d.Info(); err == nil {
				fmt.Fprintf(h, "%s\x00%d\x00%d\x00", p, info.Size(), info.ModTime().UnixNano())
			}
			return nil
		})
	}
	return hex.EncodeToString(h.Sum(nil))
}
