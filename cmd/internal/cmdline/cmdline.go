// Package cmdline holds what agentledger's three command-line programs
// share: the global store and format flags, their resolution (flag after the
// command, flag before it, environment, default), exit codes, output
// rendering and the progress bar.
package cmdline

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/localengine"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/seal"
)

// Exit codes, the same in every agentledger program.
const (
	ExitOK          = 0 // success
	ExitFault       = 1 // an integrity fault, or a failed gate
	ExitUsage       = 2 // bad usage or bad input
	ExitUnavailable = 3 // the store is unreachable, or an internal error
)

// ExitError carries an exit code with an error.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode returns the process exit code.
func (e *ExitError) ExitCode() int { return e.Code }

// Fault, Usage and Unavailable wrap err with their exit code.
func Fault(err error) error       { return &ExitError{Code: ExitFault, Err: err} }
func Usage(err error) error       { return &ExitError{Code: ExitUsage, Err: err} }
func Unavailable(err error) error { return &ExitError{Code: ExitUnavailable, Err: err} }

// Code maps an error to its exit code: an explicit *ExitError keeps its own;
// bad input is 2; an integrity fault is 1; anything else, an unreachable
// store included, is 3.
func Code(err error) int {
	var ee *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, ledger.ErrInvalidInput):
		return ExitUsage
	case errors.Is(err, ledger.ErrIntegrity), errors.Is(err, store.ErrSessionMismatch):
		return ExitFault
	}
	return ExitUnavailable
}

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
const (
	Read Access = iota
	Write
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
//   - otherwise the command opens the directory itself.
//
// A command that reads never creates a ledger where there is none.
func OpenStore(c *cli.Context, access Access) (*store.Store, error) {
	cfg, err := StoreConfig(c)
	if err != nil {
		return nil, err
	}
	cfg.NoCreate = access == Read
	if cfg.URL == "" {
		if url, err := localHolder(c, cfg); err != nil {
			return nil, Unavailable(err)
		} else if url != "" {
			cfg.URL = url
		}
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
func localHolder(c *cli.Context, cfg store.Config) (string, error) {
	if _, held := store.HeldBy(cfg.DataDir); held {
		return holderURL(c.Context, cfg.DataDir), nil // "" when it does not listen: Open says who holds it
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "engine.log")); err != nil {
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

// Format returns the --format value, text or json.
func Format(c *cli.Context) (string, error) {
	f := Resolve(c, FlagFormat)
	if f != "text" && f != "json" {
		return "", Usage(fmt.Errorf("--format %q: want text or json", f))
	}
	return f, nil
}

// Render writes v as one JSON document when format is json, else calls
// text.
func Render(w io.Writer, format string, v any, text func(io.Writer) error) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	return text(w)
}

// Run runs app with args and returns the exit code. Errors are printed to
// stderr once; usage errors exit 2, never 3.
func Run(ctx context.Context, app *cli.App, args []string, stderr io.Writer) int {
	usage := false
	app.ExitErrHandler = func(*cli.Context, error) {}
	app.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		usage = true
		return Usage(err)
	}
	app.CommandNotFound = func(c *cli.Context, name string) {
		usage = true
		fmt.Fprintf(stderr, "%s: unknown command %q; see '%s help'\n", app.Name, name, app.Name)
	}
	setUsageHandler(app.Commands, &usage)
	if os.Getenv(ParseOnlyEnv) == "1" {
		parseOnly(app.Commands)
	}
	app.ErrWriter = stderr
	err := app.RunContext(ctx, Permute(app, args))
	if err == nil {
		if usage {
			return ExitUsage
		}
		return ExitOK
	}
	code := Code(err)
	if usage && !errors.As(err, new(*ExitError)) {
		code = ExitUsage
	}
	// An error may quote what it found wrong: no secret reaches the
	// terminal or a log through it.
	if msg := detect.RedactJSONText(err.Error()); msg != "" {
		fmt.Fprintf(stderr, "%s: %s\n", app.Name, strings.TrimSpace(msg))
	}
	return code
}

// ParseOnlyEnv, set to "1", makes a program parse its command line and
// stop there: a command or flag that does not exist is still exit 2, and
// nothing runs (the documentation's test checks every documented command
// this way).
const ParseOnlyEnv = "AGENTLEDGER_PARSE_ONLY"

func parseOnly(cmds []*cli.Command) {
	for _, c := range cmds {
		if c.Action != nil {
			c.Action = func(*cli.Context) error { return nil }
		}
		parseOnly(c.Subcommands)
	}
}

// Permute moves a command's flags ahead of its positional arguments, so
// that `ledger show SESSION --tenant acme` means what it says: urfave/cli v2
// stops parsing flags at the first positional argument. Everything after
// "--" stays positional.
func Permute(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	i := 1
	// Global flags before the command.
	for i < len(args) && isFlag(args[i]) {
		out = append(out, args[i])
		if takesValue(app.Flags, args[i]) && i+1 < len(args) {
			out = append(out, args[i+1])
			i++
		}
		i++
	}
	if i >= len(args) {
		return out
	}
	cmd := app.Command(args[i])
	out = append(out, args[i])
	i++
	if cmd == nil {
		return append(out, args[i:]...)
	}
	// Descend into subcommands (engine hook claude-code).
	for i < len(args) {
		sub := cmd.Command(args[i])
		if sub == nil {
			break
		}
		cmd = sub
		out = append(out, args[i])
		i++
	}
	var flags, positional []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i:]...)
			break
		}
		if !isFlag(a) {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		if takesValue(cmd.Flags, a) && i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(append(out, flags...), positional...)
}

func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' && a != "--" }

// takesValue reports whether flag token a names a flag in fs that takes a
// separate value (not a boolean, not written as --name=value).
func takesValue(fs []cli.Flag, a string) bool {
	if strings.Contains(a, "=") {
		return false
	}
	name := strings.TrimLeft(a, "-")
	for _, f := range fs {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	return false
}

func setUsageHandler(cmds []*cli.Command, usage *bool) {
	for _, c := range cmds {
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			*usage = true
			return Usage(err)
		}
		setUsageHandler(c.Subcommands, usage)
	}
}

// Progress draws a one-line progress indicator on a terminal; on anything
// else it draws nothing.
type Progress struct {
	w     io.Writer
	label string
	on    bool
	last  time.Time
	// Total, when known, turns the counter into a bar.
	Total uint64
	// Unit names what is counted; "envelopes" when empty.
	Unit string
}

// NewProgress returns a Progress on w that draws only when w is a terminal.
func NewProgress(w io.Writer, label string) *Progress {
	on := false
	if f, ok := w.(*os.File); ok {
		on = term.IsTerminal(int(f.Fd()))
	}
	return &Progress{w: w, label: label, on: on}
}

// Update shows done items, at most ten times a second.
func (p *Progress) Update(done uint64) {
	if p == nil || !p.on || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	if p.Total == 0 {
		fmt.Fprintf(p.w, "\r%s: %d %s", p.label, done, cmp.Or(p.Unit, "envelopes"))
		return
	}
	const width = 30
	filled := int(min(done, p.Total) * width / p.Total)
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d", p.label, strings.Repeat("=", filled), strings.Repeat(" ", width-filled), done, p.Total)
}

// Done clears the line.
func (p *Progress) Done() {
	if p != nil && p.on && !p.last.IsZero() {
		fmt.Fprintf(p.w, "\r\033[K")
	}
}

// Signer loads the key that signs the engine's records (verdicts with
// their receipts, resolutions, failures, rejections, checkpoint records)
// from path, or, when path is empty, from (or, on first run, into)
// dataDir/keys/receipt-ed25519.pem, writing the public key beside it. It
// returns the signer and the public key's path.
func Signer(path, dataDir string) (*receipt.Signer, string, error) {
	k, pubPath, err := SigningKey(path, dataDir, KeyReceipts)
	if err != nil {
		return nil, "", err
	}
	return receipt.NewSigner(k), pubPath, nil
}

// KeyStore opens the sealing key store of a data directory,
// DATA/keys/sealing (created on first use).
func KeyStore(dataDir string) (*seal.FileStore, error) {
	return seal.OpenFileStore(filepath.Join(dataDir, "keys", "sealing"))
}

// Sealer is the sealer of an engine recording into dataDir under manifest m.
func Sealer(dataDir string, m *manifest.Manifest) (*seal.Sealer, error) {
	keys, err := KeyStore(dataDir)
	if err != nil {
		return nil, err
	}
	return &seal.Sealer{Keys: keys, Policy: seal.PolicyOf(m)}, nil
}

// The two signing keys of a data directory (see receipt.DataDirKey).
const (
	KeyReceipts    = receipt.KeyRecords
	KeyCheckpoints = receipt.KeyCheckpoints
)

// SigningKey loads the Ed25519 signing key at path (a bad file is exit 2),
// or, when path is empty, the data directory's key name, generated on
// first use (receipt.DataDirKey). It returns the key and, for the data
// directory's, its public key's path.
func SigningKey(path, dataDir, name string) (ed25519.PrivateKey, string, error) {
	if path == "" {
		return receipt.DataDirKey(dataDir, name)
	}
	k, err := receipt.LoadKey(path)
	if err != nil {
		return nil, "", Usage(fmt.Errorf("%s key: %w", name, err))
	}
	return k, "", nil
}

// PolicyFlag is the --policy flag of every program that evaluates.
func PolicyFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "policy", Usage: "Rego policy `DIR` or bundle file (default: the built-in policy); repeat it to layer policies, \"default\" naming the built-in one"}
}

// LoadPolicy loads a capability manifest (manifestPath "" is the built-in
// one) and the policy layers at paths (none: the built-in policy). A bad
// file is exit 2, naming it.
func LoadPolicy(ctx context.Context, paths []string, manifestPath string, adjust ...func(*manifest.Manifest)) (*policy.Policy, error) {
	m, err := policy.LoadManifest(manifestPath)
	if err != nil {
		return nil, Usage(err)
	}
	for _, f := range adjust {
		f(m)
	}
	p, err := policy.LoadLayers(ctx, paths, m)
	if err != nil {
		return nil, Usage(err)
	}
	return p, nil
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

// Version is what --version prints: agentledger's version, the commit it
// was built from (with "-dirty" for uncommitted changes) and the Go
// version, as the build recorded them.
func Version() string {
	version, commit, dirty, goVersion := "devel", "unknown", false, runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if dirty {
		commit += "-dirty"
	}
	return fmt.Sprintf("%s (commit %s, %s)", version, commit, goVersion)
}

// Protect returns the manifest adjustment of an engine that runs on the
// given directories and files (its data directory, checkpoint directory,
// signing key): they become protected data no tool may touch, and ~ in
// commands is read as this user's home directory.
func Protect(paths ...string) func(*manifest.Manifest) {
	return func(m *manifest.Manifest) {
		if home, err := os.UserHomeDir(); err == nil && m.Home == "" && filepath.IsAbs(home) {
			m.Home = filepath.Clean(home)
		}
		for _, p := range paths {
			if p == "" {
				continue
			}
			if abs, err := filepath.Abs(p); err == nil && !slices.Contains(m.ProtectedData, abs) {
				m.ProtectedData = append(m.ProtectedData, abs)
			}
		}
	}
}

// ProtectWrites returns a manifest adjustment that keeps every tool from
// changing paths (files or directories): the engine's own program (every
// hook runs it) and the policy and manifest it judges with. Reading them
// stays allowed. Symlinks are protected as written and as resolved.
func ProtectWrites(paths ...string) func(*manifest.Manifest) {
	return func(m *manifest.Manifest) {
		for _, p := range paths {
			if p == "" || p == "default" {
				continue
			}
			abs, err := filepath.Abs(p)
			if err != nil {
				continue
			}
			for _, q := range []string{abs, resolved(abs)} {
				if q != "" && !slices.Contains(m.Protected, q) {
					m.Protected = append(m.Protected, q)
				}
			}
		}
	}
}

func resolved(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
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

// CheckpointKeys reads the checkpoint public keys in the PEM file pub;
// a file that is missing or holds none gives an empty ring (checkpoints
// are then read unchecked and say so), and a key the file marks as a
// records key is left out: it never opens a checkpoint.
func CheckpointKeys(pub string) receipt.Keyring {
	raw, err := os.ReadFile(pub)
	if err != nil {
		return receipt.Keyring{}
	}
	var keys receipt.Keys
	if keys.Add(raw, receipt.PurposeCheckpoints) != nil {
		return receipt.Keyring{}
	}
	return keys.Checkpoints
}
