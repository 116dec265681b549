package cmdline

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// Global flag names and their environment variables.
const (
	FlagData         = "data"
	FlagNATS         = "nats"
	FlagStream       = "stream"
	FlagStreams      = "streams"
	FlagFormat       = "format"
	FlagReplicas     = "replicas"
	FlagSync         = "sync"
	FlagSyncInterval = "sync-interval"
	FlagMaxDepth     = "max-depth"
	FlagMaxBytes     = "max-bytes"
)

var envOf = map[string]string{
	FlagData:         "LEDGER_DATA",
	FlagNATS:         "LEDGER_NATS_URL",
	FlagStream:       "LEDGER_STREAM",
	FlagStreams:      "LEDGER_STREAMS",
	FlagFormat:       "LEDGER_FORMAT",
	FlagReplicas:     "LEDGER_REPLICAS",
	FlagSync:         "LEDGER_SYNC",
	FlagSyncInterval: "LEDGER_SYNC_INTERVAL",
	FlagMaxDepth:     "LEDGER_MAX_DEPTH",
	FlagMaxBytes:     "LEDGER_MAX_BYTES",
}

var defaults = map[string]string{
	FlagData:         store.DefaultDataDir,
	FlagStream:       store.DefaultStream,
	FlagFormat:       "text",
	FlagReplicas:     "1",
	FlagSync:         string(store.SyncAlways),
	FlagSyncInterval: store.DefaultSyncInterval.String(),
	FlagMaxDepth:     strconv.Itoa(ledger.DefaultMaxDepth),
	FlagMaxBytes:     strconv.Itoa(ledger.DefaultMaxBytes),
}

// GlobalFlags returns new instances of the global flags. Programs declare
// them on the app and again on every command, so that they are accepted
// before and after the command name. The flags carry no EnvVars: Resolve
// reads the environment itself, so that a flag given on the command line
// always beats the environment, wherever it stands.
func GlobalFlags() []cli.Flag {
	usage := func(name, text string) string {
		return fmt.Sprintf("%s (env %s, default %q)", text, envOf[name], defaults[name])
	}
	return []cli.Flag{
		&cli.StringFlag{Name: FlagData, Usage: fmt.Sprintf("embedded server's data `DIR`, used when no --nats is given (env %s, default $XDG_DATA_HOME/agentledger, else ~/.local/share/agentledger: where the hooks record)", envOf[FlagData])},
		&cli.StringFlag{Name: FlagNATS, Usage: fmt.Sprintf("`URL` of an external NATS server or cluster (env %s)", envOf[FlagNATS])},
		&cli.StringFlag{Name: FlagStream, Usage: usage(FlagStream, "JetStream stream `NAME`")},
		&cli.StringFlag{Name: FlagStreams, Usage: fmt.Sprintf("spread a new ledger over `N` streams by session hash, NAME-0 to NAME-(N-1), on --nats only (env %s, default: the ledger's own, 1 for a new one; 1 to %d)", envOf[FlagStreams], store.MaxStreams)},
		&cli.StringFlag{Name: FlagFormat, Usage: usage(FlagFormat, "output format: text or json")},
		&cli.StringFlag{Name: FlagReplicas, Usage: usage(FlagReplicas, "stream replicas when the stream is created (3 on a cluster)")},
		&cli.StringFlag{Name: FlagSync, Usage: usage(FlagSync, "embedded server fsync policy: always or interval")},
		&cli.StringFlag{Name: FlagSyncInterval, Usage: usage(FlagSyncInterval, "fsync interval under --sync interval")},
		&cli.StringFlag{Name: FlagMaxDepth, Usage: usage(FlagMaxDepth, "deepest JSON nesting accepted in an event or envelope")},
		&cli.StringFlag{Name: FlagMaxBytes, Usage: usage(FlagMaxBytes, "largest event or envelope accepted, in bytes")},
	}
}

// WithGlobals returns cmd with its own instances of the global flags added.
func WithGlobals(cmd *cli.Command) *cli.Command {
	cmd.Flags = append(cmd.Flags, GlobalFlags()...)
	return cmd
}

// Resolve returns a global flag's value: from the innermost command line
// that set it, else its environment variable, else its default.
func Resolve(c *cli.Context, name string) string {
	for _, ctx := range c.Lineage() {
		if ctx.IsSet(name) {
			return ctx.String(name)
		}
	}
	if v, ok := os.LookupEnv(envOf[name]); ok && v != "" {
		return v
	}
	if name == FlagData {
		if d, err := UserDataDir(); err == nil {
			return d
		}
	}
	return defaults[name]
}

// Limits returns the input limits the global flags set.
func Limits(c *cli.Context) (ledger.Limits, error) {
	depth, err := strconv.Atoi(Resolve(c, FlagMaxDepth))
	if err != nil || depth < 1 || depth > 10000 {
		return ledger.Limits{}, Usage(fmt.Errorf("--max-depth %q: want 1 to 10000", Resolve(c, FlagMaxDepth)))
	}
	size, err := strconv.Atoi(Resolve(c, FlagMaxBytes))
	if err != nil || size < 1024 || size > 32<<20 {
		return ledger.Limits{}, Usage(fmt.Errorf("--max-bytes %q: want 1024 to 33554432", Resolve(c, FlagMaxBytes)))
	}
	return ledger.Limits{MaxDepth: depth, MaxBytes: size}, nil
}

// FormatUsage sets what cmd's --format flag says it accepts.
func FormatUsage(cmd *cli.Command, formats []string) *cli.Command {
	return FlagUsage(cmd, FlagFormat, fmt.Sprintf("output format: %s (env %s, default %q)", strings.Join(formats, ", "), envOf[FlagFormat], defaults[FlagFormat]))
}

// FlagUsage sets the usage text of cmd's string flag name.
func FlagUsage(cmd *cli.Command, name, usage string) *cli.Command {
	for _, f := range cmd.Flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == name {
			sf.Usage = usage
		}
	}
	return cmd
}
