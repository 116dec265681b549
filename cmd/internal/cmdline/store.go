package cmdline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/localengine"
)

// StoreConfig builds the store configuration from the global flags.
func StoreConfig(c *cli.Context) (store.Config, error) {
	lim, err := Limits(c)
	if err != nil {
		return store.Config{}, err
	}
	cfg := store.Config{
		Limits:  lim,
		URL:     Resolve(c, FlagNATS),
		DataDir: Resolve(c, FlagData),
		Stream:  Resolve(c, FlagStream),
		Sync:    store.SyncPolicy(Resolve(c, FlagSync)),
	}
	if cfg.Sync != store.SyncAlways && cfg.Sync != store.SyncInterval {
		return cfg, Usage(fmt.Errorf("--sync %q: want always or interval", cfg.Sync))
	}
	if cfg.SyncEvery, err = time.ParseDuration(Resolve(c, FlagSyncInterval)); err != nil || cfg.SyncEvery <= 0 {
		return cfg, Usage(fmt.Errorf("--sync-interval %q: want a positive duration such as 1s", Resolve(c, FlagSyncInterval)))
	}
	if _, err := fmt.Sscanf(Resolve(c, FlagReplicas), "%d", &cfg.Replicas); err != nil || cfg.Replicas < 1 || cfg.Replicas > 5 {
		return cfg, Usage(fmt.Errorf("--replicas %q: want 1 to 5", Resolve(c, FlagReplicas)))
	}
	if n := Resolve(c, FlagStreams); n != "" {
		if cfg.Streams, err = strconv.Atoi(n); err != nil || cfg.Streams < 1 || cfg.Streams > store.MaxStreams {
			return cfg, Usage(fmt.Errorf("--streams %q: want 1 to %d", n, store.MaxStreams))
		}
		if cfg.Streams > 1 && cfg.URL == "" {
			return cfg, Usage(fmt.Errorf("--streams %d: a ledger of several streams is on a NATS server or cluster of its own (--nats URL); the embedded server holds one stream", cfg.Streams))
		}
	}
	return cfg, nil
}

// Access is what a command does with the store.
type Access int

// Read and Write: a command that only reads never creates a ledger.
// Shared writes through the local engine on any data directory no process
// holds, starting it the way a hook does (a stdio MCP gateway, which a
// host starts beside its hooks, sometimes before the first of them: held
// by the gateway, the directory would refuse the engine the hooks start).
//
// Hold opens the directory as Write does and, on the embedded store,
// serves this machine's ledger commands on a loopback listener while it
// holds it (the lock file says where), as the engine does: a long-running
// holder (the MCP gateway with --listen) never locks the record away from
// its readers.
const (
	Read Access = iota
	Write
	Shared
	Hold
)

// OpenStore opens the store the global flags name. Failing to reach it is
// exit code 3. On the embedded store (no --nats) the data directory is
// never held by a command against the hooks' engine:
//   - when a process holds it (the hooks' engine, engine serve, ledger
//     serve), the command goes through that process's loopback listener,
//     which its lock file names, with no effect on it;
//   - when none does, the directory is the hooks' (a hook has started an
//     engine there: DATA/engine.log) and an engine program is at hand
//     (beside this one, or on PATH), the local engine is started the way a
//     hook starts it and the command goes through it, so a hook that comes
//     meanwhile is answered as ever;
//   - otherwise the command opens the directory itself, but for a Shared
//     one, which starts the local engine on any directory.
//
// A command that reads never creates a ledger where there is none.
func OpenStore(c *cli.Context, access Access) (*store.Store, error) {
	cfg, err := StoreConfig(c)
	if err != nil {
		return nil, err
	}
	cfg.NoCreate = access == Read
	if cfg.URL == "" {
		if url, err := localHolder(c, cfg, access == Shared); err != nil {
			return nil, Unavailable(err)
		} else if url != "" {
			cfg.URL = url
		}
	}
	if access == Hold && cfg.URL == "" {
		cfg.Listen, cfg.LocalClients = "127.0.0.1:0", true
	}
	s, err := store.Open(c.Context, cfg)
	if err != nil {
		return nil, OpenErr(err)
	}
	return s, nil
}

// OpenErr is the exit a failed store.Open ends in: a layout other than
// the ledger's (another --streams, a stream of a ledger named as one) is
// a usage error, anything else an unreachable store.
func OpenErr(err error) error {
	if errors.Is(err, store.ErrLayout) {
		return Usage(err)
	}
	return Unavailable(err)
}

// localHolder returns the loopback URL of the process that holds the data
// directory, starting the local engine first when none does and an engine
// program is at hand; "" when the command is to open the directory itself.
func localHolder(c *cli.Context, cfg store.Config, shared bool) (string, error) {
	if _, held := store.HeldBy(cfg.DataDir); held {
		return holderURL(c.Context, cfg.DataDir), nil // "" when it does not listen: Open says who holds it
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "engine.log")); err != nil && !shared {
		return "", nil // not a directory hooks record into
	}
	exe := hookwire.EngineProgram()
	if exe == "" {
		return "", nil
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "jetstream")); err != nil && cfg.NoCreate {
		return "", fmt.Errorf("%w: %s holds no ledger (nothing has been recorded there; --data or LEDGER_DATA names another)", store.ErrNoLedger, cfg.DataDir)
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return "", err
	}
	l := &localengine.Local{DataDir: dir, Command: LocalEngineCommand(c, exe, dir, ReaderIdle), Wait: 30 * time.Second}
	if err := l.Start(c.Context); err != nil {
		return "", err
	}
	return holderURL(c.Context, dir), nil
}

// holderURL is the NATS URL of the process holding dir, waiting a little
// for one that has taken the directory but is not listening yet (an
// engine starting); "" when none listens.
func holderURL(ctx context.Context, dir string) string {
	for deadline := time.Now().Add(5 * time.Second); ; {
		h, held := store.HeldBy(dir)
		if !held || h.NATSURL != "" || time.Now().After(deadline) {
			return h.NATSURL
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(50 * time.Millisecond):
		}
	}
}
