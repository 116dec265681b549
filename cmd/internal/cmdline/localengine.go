package cmdline

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/localengine"
)

// ReaderIdle is how long a local engine started for a ledger command stays
// up without hooks (a command that keeps reading, ledger tail, keeps it
// up).
const ReaderIdle = 5 * time.Minute

// LocalEngineCommand starts the local engine of dir with exe: the socket
// only, c's store flags, exiting after idle without connections. Policy,
// manifest and tenant come with each hook's request.
func LocalEngineCommand(c *cli.Context, exe, dir string, idle time.Duration) []string {
	cmd := []string{exe, "serve", "--listen", "", "--data", dir, "--idle-exit", idle.String()}
	for _, f := range []string{FlagNATS, FlagStream, FlagSync, FlagSyncInterval, FlagMaxDepth, FlagMaxBytes} {
		cmd = append(cmd, "--"+f, Resolve(c, f))
	}
	return cmd
}

// KeepEngineUp keeps the local engine of dataDir, when it serves the
// command, from exiting idle while ctx lasts (a command that follows the
// ledger, ledger tail): it calls the engine's socket every minute.
func KeepEngineUp(ctx context.Context, dataDir string) {
	h, held := store.HeldBy(dataDir)
	if !held || h.Socket == "" {
		return
	}
	client := localengine.UnixClient(h.Socket)
	Every(ctx, time.Minute, func() { localengine.Healthy(ctx, client) })
}

// Every calls fn every d until ctx ends.
func Every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// UserDataDir is the per-user data directory (hookwire.UserDataDir): the
// hooks' and every command's default.
func UserDataDir() (string, error) {
	d, err := hookwire.UserDataDir()
	if err != nil {
		return "", Usage(err)
	}
	return d, nil
}

// HookDataDir is the data directory of a hook: --data or LEDGER_DATA when
// set, else UserDataDir.
func HookDataDir(c *cli.Context) (string, error) {
	for _, ctx := range c.Lineage() {
		if ctx.IsSet(FlagData) {
			return filepath.Abs(ctx.String(FlagData))
		}
	}
	if v := os.Getenv(envOf[FlagData]); v != "" {
		return filepath.Abs(v)
	}
	return UserDataDir()
}
