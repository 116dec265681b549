package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/fleet"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/mcpproxy"
	"github.com/agentledger/agentledger/policy"
)

type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	return &cli.App{
		Name:    "engine",
		Usage:   "decide AARTS hook events with an OPA policy and a capability manifest",
		Writer:  stdout,
		Version: cmdline.Version(),
		Flags:   cmdline.GlobalFlags(),
		Commands: []*cli.Command{
			serveCommand(a),
			statusCommand(a),
			stopCommand(a),
			doctorCommand(a),
			stdioCommand(a),
			mcpProxyCommand(a),
			hooksCommand(a),
			installCommand(a, false),
			installCommand(a, true),
			conformanceCommand(a),
			evalCommand(a),
		},
	}
}

func policyFlags() []cli.Flag {
	return []cli.Flag{
		cmdline.PolicyFlag(),
		&cli.StringFlag{Name: "manifest", Usage: "capability manifest `FILE` (default: the built-in manifest)"},
		&cli.StringFlag{Name: "tenant", Value: ledger.DefaultTenant, Usage: "`TENANT` the sessions belong to"},
	}
}

// loadPolicy loads --manifest and --policy; a bad file is exit 2 naming it.
func loadPolicy(c *cli.Context) (*policy.Policy, error) {
	return cmdline.LoadPolicy(c.Context, c.StringSlice("policy"), c.String("manifest"))
}

// loadEnginePolicy is loadPolicy for an engine that records: the
// directories and files it runs on are protected from every tool.
func loadEnginePolicy(c *cli.Context) (*policy.Policy, error) {
	return loadPolicyAt(c, c.StringSlice("policy"), c.String("manifest"))
}

// loadPolicyAt loads the given policy and manifest for an engine that
// records with c's flags: its data directory, checkpoints and keys are
// protected data no tool may touch, and its program, the policy, the
// manifest and any extra program (a hook's) may not be written.
func loadPolicyAt(c *cli.Context, policies []string, manifestPath string, programs ...string) (*policy.Policy, error) {
	data := cmdline.Resolve(c, cmdline.FlagData)
	keep := []string{data}
	for _, f := range []string{"checkpoint-dir", "signing-key", "checkpoint-key"} {
		if c.IsSet(f) {
			keep = append(keep, c.String(f))
		}
	}
	writes := append(append([]string{manifestPath}, policies...), programs...)
	if exe, err := os.Executable(); err == nil {
		writes = append(writes, exe) // the program every hook runs
	}
	return cmdline.LoadPolicy(c.Context, policies, manifestPath, cmdline.Protect(keep...), cmdline.ProtectWrites(writes...))
}

func (a *app) stdio(c *cli.Context) error {
	e, st, err := a.recordingEngine(c)
	if err != nil {
		return err
	}
	defer st.Close()
	return engine.ServeStdio(c.Context, e, c.String("tenant"), a.stdin, a.stdout)
}

// recordingEngine builds an Engine from the policy, store and signing
// flags, and returns it with its store (the caller closes it).
func (a *app) recordingEngine(c *cli.Context) (*engine.Engine, *store.Store, error) {
	return a.recordingEngineOn(c, cmdline.Write)
}

// recordingEngineOn is recordingEngine, its store opened for access.
func (a *app) recordingEngineOn(c *cli.Context, access cmdline.Access) (*engine.Engine, *store.Store, error) {
	p, err := loadEnginePolicy(c)
	if err != nil {
		return nil, nil, err
	}
	lim, err := cmdline.Limits(c)
	if err != nil {
		return nil, nil, err
	}
	d := decide.NewDecider(p)
	d.Limits = lim
	if d.Signer, _, err = cmdline.Signer(c.String("signing-key"), cmdline.Resolve(c, cmdline.FlagData)); err != nil {
		return nil, nil, err
	}
	if d.Sealer, err = cmdline.Sealer(cmdline.Resolve(c, cmdline.FlagData), p.Manifest()); err != nil {
		return nil, nil, err
	}
	st, err := cmdline.OpenStore(c, access)
	if err != nil {
		return nil, nil, err
	}
	opts := []engine.Option{engine.WithPendingTimeout(c.Duration("pending-timeout")), engine.WithGatewayPins(mcpproxy.NewPinIndex(st))}
	m, err := a.forwarderOf(c, st)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	if m != nil {
		opts = append(opts, engine.WithFleet(m))
	}
	e, err := engine.New(d, st, opts...)
	if err == nil && m != nil {
		err = e.StartFleet(st)
	}
	if err != nil {
		st.Close()
		return nil, nil, cmdline.Usage(err)
	}
	if m != nil {
		// A forwarder decides nothing itself: the records its failed
		// calls owe go to the sessions' owners from time to time.
		go a.drainEvery(c.Context, e, spoolInterval)
	}
	return e, st, nil
}

// forwarderOf joins the fleet on --nats as a forwarder (--fleet), or
// returns nil: the process passes every call to the fleet's engines.
func (a *app) forwarderOf(c *cli.Context, st *store.Store) (*fleet.Member, error) {
	if !c.Bool("fleet") {
		return nil, nil
	}
	if cmdline.Resolve(c, cmdline.FlagNATS) == "" {
		return nil, cmdline.Usage(errors.New("--fleet needs --nats URL: the fleet's engines share one JetStream cluster"))
	}
	key, err := fleet.LoadKey(cmdline.Resolve(c, cmdline.FlagData), false)
	if err != nil {
		return nil, cmdline.Usage(fmt.Errorf("%w (copy it from an engine of the fleet, with its keys)", err))
	}
	m, err := fleet.Join(c.Context, st, fleet.Config{ID: c.String("fleet-id"), Partitions: c.Int("partitions"), Forwarder: true, Key: key})
	if err != nil {
		return nil, cmdline.Usage(err)
	}
	fmt.Fprintf(a.stderr, "engine: passing every call to the fleet as %s\n", m.ID())
	return m, nil
}

// serveCommand is `serve`.
func serveCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "serve",
		Usage:     "decide and record hook events over HTTP",
		ArgsUsage: " ",
		Flags: append(policyFlags(),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "`HOST:PORT` to serve the API on (\"\": the Unix socket only)"},
			&cli.StringFlag{Name: "socket", Usage: "Unix socket `PATH` for local hooks, tenant --tenant, this user only (default DATA/engine.sock with the embedded store; \"none\": no socket)"},
			&cli.DurationFlag{Name: "idle-exit", Usage: "exit after this long without a connection (how hooks run the engine they start; 0: never)"},
			&cli.StringFlag{Name: "tokens", EnvVars: []string{"ENGINE_TOKENS"}, Usage: "bearer tokens `FILE`: {\"tokens\":[{\"sha256\":\"...\",\"tenant\":\"acme\"}]}"},
			&cli.IntFlag{Name: "max-sessions", Value: engine.DefaultMaxSessions, Usage: "sessions kept in memory; past it idle ones are evicted and rebuilt from the ledger when next used (0: no bound)"},
			&cli.StringFlag{Name: "tls-cert", Usage: "serve --listen over TLS with this certificate chain PEM `FILE` (with --tls-key)"},
			&cli.StringFlag{Name: "tls-key", Usage: "the TLS private key PEM `FILE` of --tls-cert"},
			&cli.BoolFlag{Name: "insecure-dev", Usage: "accept requests without a token as tenant default (local experiments only)"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, Usage: "per-request decision timeout"},
			&cli.DurationFlag{Name: "pending-timeout", Value: engine.DefaultPendingTimeout, Usage: "how long an ask waits for its resolution before it is recorded as a timeout (deny)"},
			&cli.StringFlag{Name: "signing-key", Usage: "Ed25519 PKCS#8 PEM `FILE` that signs the engine's records and receipts (default: DATA/keys/receipt-ed25519.pem, generated on first run)"},
			&cli.StringFlag{Name: "checkpoint-key", Usage: "Ed25519 PKCS#8 PEM `FILE` that signs checkpoints (default: DATA/keys/checkpoint-ed25519.pem, generated on first run)"},
			&cli.BoolFlag{Name: "fail-open", Usage: "answer allow when a valid event cannot be decided and recorded (default: deny); the failure is recorded either way, and rejected input is always denied"},
			&cli.StringFlag{Name: "mode", Value: "enforce", Usage: "`enforce`, or monitor: judge and record every call (verdicts recorded enforced: false) and give no host a decision, to watch a policy before enforcing it"},
			&cli.StringFlag{Name: "otlp-endpoint", Usage: "export a span (GenAI execute_tool) and metrics per decision to the OpenTelemetry collector at `URL` (http://HOST:4318 for OTLP/HTTP, http://HOST:4317 for gRPC; https: with TLS)"},
			&cli.StringFlag{Name: "otlp-protocol", Value: "http", Usage: "OTLP transport: `http` or grpc"},
			&cli.StringSliceFlag{Name: "otlp-header", Usage: "a `KEY=VALUE` header on every OTLP export (repeatable)"},
			&cli.StringFlag{Name: "telemetry", Usage: "append a redacted OpenTelemetry span per decision to `FILE` (NDJSON)"},
			&cli.StringFlag{Name: "checkpoint-every", Value: "10m", Usage: "take a signed checkpoint of the ledger this often, a `DURATION` (0: only after SessionEnd; negative, such as -1: never)"},
			&cli.StringFlag{Name: "checkpoint-dir", Usage: "where checkpoint files go (default DATA/checkpoints); keep a copy where the ledger's operators cannot rewrite it"},
			&cli.BoolFlag{Name: "atomic-batch", Usage: "store an event and its verdict as one atomic batch also on a single-node file stream, where by default they are two publishes (a crash between them is recorded as an EngineFailure on rebuild); concurrent sessions share batches"},
			&cli.BoolFlag{Name: "no-atomic-batch", Usage: "never use atomic batches, also on replicated streams where they are the default"},
			&cli.BoolFlag{Name: "fleet", Usage: "serve with the other engines on --nats as one fleet: sessions hash into partitions, each decided by the engine holding its lease, any engine accepting any call"},
			&cli.StringFlag{Name: "fleet-id", Usage: "this engine's `NAME` in the fleet, unique among its members (default: host name and process id)"},
			&cli.IntFlag{Name: "partitions", Value: fleet.DefaultPartitions, Usage: "how many partitions a fleet's sessions hash into; every member must use the same `N`"},
			&cli.DurationFlag{Name: "lease-ttl", Value: fleet.DefaultLeaseTTL, Usage: "how long a partition's lease outlives its owner; a dead engine's partitions move to live ones within about twice this"},
		),
		Action: a.serve,
	})
}

// stdioCommand is `stdio`.
func stdioCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "stdio",
		Usage:     "decide and record hook events on stdin/stdout (the AARTS subprocess model)",
		ArgsUsage: " ",
		Description: "The first line must be the version check {\"aarts_version\": \"0.1\"}; every line after\n" +
			"it is a hook event, answered with the verdict. Asks are resolved by an approver over HTTP\n" +
			"(engine serve), or reported by the host as PostAskResolution.",
		Flags: append(policyFlags(),
			&cli.DurationFlag{Name: "pending-timeout", Value: engine.DefaultPendingTimeout, Usage: "how long an ask waits for its resolution"},
			&cli.StringFlag{Name: "signing-key", Usage: "Ed25519 PKCS#8 PEM `FILE` that signs receipts (default: DATA/keys)"},
		),
		Action: a.stdio,
	})
}

// hooksCommand is `hook`.
func hooksCommand(a *app) *cli.Command {
	var subs []*cli.Command
	for _, h := range hostHooks {
		subs = append(subs, hookCommand(a, h.name, h.title, h.about))
	}
	return &cli.Command{
		Name:        "hook",
		Usage:       "answer an agent host's hook with a recorded verdict",
		Subcommands: subs,
	}
}

// hostHooks are the hosts `engine hook` answers, with what each one's
// subcommand says of its install and of what the host carries out.
var hostHooks = []struct{ name, title, about string }{
	{"claude-code", "Claude Code",
		"`engine install claude-code [--user]` writes into .claude/settings.json, for every event:\n" +
			`  {"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"engine hook claude-code","timeout":30}]}]}}` +
			"\n(likewise for PostToolUse, PostToolUseFailure, UserPromptSubmit, SessionStart, SessionEnd, Stop, SubagentStop, PreCompact, PostCompact,\n" +
			"PermissionDenied).\n" +
			"Every hook process of the user reaches one local engine on DATA/engine.sock, started by the\n" +
			"first hook that finds none (it exits after --idle-exit without hooks), or the engine\n" +
			"serve given with --engine. An allow gives Claude Code no permission decision, so its own\n" +
			"permission prompt still applies, unless a manifest allow rule or an allow_always matched\n" +
			"(or --auto-approve is given). Input the engine cannot accept is denied and recorded.\n" +
			"Exit 0 with Claude Code's JSON on stdout, always."},
	{"cursor", "Cursor",
		"`engine install cursor [--user]` writes into .cursor/hooks.json (or ~/.cursor/hooks.json):\n" +
			`  {"version":1,"hooks":{"beforeShellExecution":[{"command":"engine hook cursor","timeout":30}]}}` +
			"\n(likewise for beforeMCPExecution, beforeReadFile, beforeSubmitPrompt, preToolUse,\n" +
			"afterShellExecution, afterMCPExecution, afterFileEdit, stop). Every hook process reaches one\n" +
			"local engine, as for Claude Code. An allow that rests on no explicit allow gives Cursor no\n" +
			"permission, so its own flow still applies; beforeReadFile cannot ask, so an ask is a deny\n" +
			"there. Input the engine cannot accept is denied and recorded. Exit 0 with Cursor's JSON."},
	{"copilot", "GitHub Copilot",
		"`engine install copilot [--user]` writes .github/hooks/agentledger.json (or ~/.copilot/hooks/):\n" +
			`  {"version":1,"hooks":{"PreToolUse":[{"type":"command","bash":"engine hook copilot","timeoutSec":30}]}}` +
			"\n(likewise PostToolUse, UserPromptSubmit, SessionStart, SessionEnd, Stop; the PascalCase names\n" +
			"make every payload name its event; camelCase payloads are recognised by their fields).\n" +
			"Only PreToolUse is answered: an allow that rests on no explicit allow gives no decision, so\n" +
			"Copilot's own permission flow applies. Input the engine cannot accept is denied and recorded."},
	{"gemini", "Gemini CLI",
		"`engine install gemini [--user]` writes into .gemini/settings.json (or ~/.gemini/settings.json):\n" +
			`  {"hooks":{"BeforeTool":[{"matcher":".*","hooks":[{"type":"command","name":"agentledger","command":"engine hook gemini","timeout":30000}]}]}}` +
			"\n(likewise AfterTool, BeforeAgent, AfterAgent, BeforeModel, AfterModel, SessionStart, SessionEnd,\n" +
			"PreCompress). BeforeTool runs after Gemini CLI's own confirmation, so an ask is a deny; a rewrite\n" +
			"is merged into the call's arguments (one that drops an argument is a deny). Input the engine\n" +
			"cannot accept is denied and recorded. Exit 0 with Gemini CLI's JSON on stdout."},
	{"qwen-code", "Qwen Code",
		"`engine install qwen-code [--user]` writes into .qwen/settings.json (or ~/.qwen/settings.json):\n" +
			`  {"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"engine hook qwen-code","timeout":30}]}]}}` +
			"\n(likewise PostToolUse, PostToolUseFailure, UserPromptSubmit, SessionStart, Stop, PreCompact,\n" +
			"PostCompact, SubagentStart, SubagentStop, SessionEnd). Its PreToolUse runs after its own approval,\n" +
			"so only a deny is carried out there: an ask is a deny, an allow gives no decision, a rewrite is a\n" +
			"deny. Input the engine cannot accept is denied and recorded. Exit 0 with Qwen Code's JSON."},
	{"droid", "Factory Droid",
		"`engine install droid [--user]` writes into .factory/settings.json (or ~/.factory/settings.json):\n" +
			`  {"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"engine hook droid","timeout":30}]}]}}` +
			"\n(likewise PostToolUse, UserPromptSubmit, SessionStart, Stop, PreCompact, SubagentStop, SessionEnd).\n" +
			"At PreToolUse a deny is carried out, an explicit allow skips Droid's own check, a rewrite is merged\n" +
			"into the call's input; an ask falls through to Droid's own check, so it is a deny. Input the engine\n" +
			"cannot accept is denied and recorded. Exit 0 with Droid's JSON on stdout."},
	{"opencode", "opencode",
		"`engine install opencode [--user]` writes agentledger's plugin, .opencode/plugin/agentledger.js (or\n" +
			"~/.config/opencode/plugin/), which opencode loads into its own process. The plugin runs this hook\n" +
			"command with one JSON object per tool call (tool.execute.before), result (tool.execute.after),\n" +
			"prompt (chat.message) and session start (session.created), and stops what is denied. opencode's\n" +
			"own permission rules run after the plugin, so an ask is a deny and an allow gives no decision; a\n" +
			"rewrite replaces the call's arguments; a result holding a secret is withheld. Input the engine\n" +
			"cannot accept is denied and recorded. Exit 0 with the plugin's JSON on stdout."},
	{"kilo", "Kilo CLI",
		"`engine install kilo [--user]` writes agentledger's plugin, .kilo/plugin/agentledger.js (or\n" +
			"~/.config/kilo/plugin/); Kilo CLI, an opencode fork, loads it and answers as opencode does."},
	{"cline", "Cline CLI",
		"`engine install cline [--user]` writes a hook file per event into .clinerules/hooks/ (or ~/.cline/hooks/):\n" +
			"PreToolUse, PostToolUse, TaskStart, TaskComplete, TaskError, TaskCancel, SessionShutdown, UserPromptSubmit,\n" +
			"each running this hook command and printing Cline's cancel where it gives no answer (Cline ignores exit\n" +
			"codes). A denied shell call is replaced by one that prints the reason (overrideInput); any other denied\n" +
			"call, and a result holding a secret, end the run (cancel). An ask is a deny, an allow gives no decision, a\n" +
			"rewrite is overrideInput. Input the engine cannot accept is denied and recorded. Exit 0 with Cline's JSON."},
	{"codex", "Codex CLI",
		"`engine install codex [--user]` writes into .codex/hooks.json (or $CODEX_HOME/hooks.json):\n" +
			`  {"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"engine hook codex","timeout":30}]}]}}` +
			"\n(likewise PermissionRequest, PostToolUse, UserPromptSubmit, SessionStart, Stop, PreCompact,\n" +
			"PostCompact, SubagentStart, SubagentStop, SessionEnd). Codex carries out only a deny at\n" +
			"PreToolUse, so an ask is a deny there and an allow gives no decision; at PermissionRequest an\n" +
			"explicit allow answers Codex's prompt, an ask is a deny, another allow leaves it to the user. Input\n" +
			"the engine cannot accept is denied and recorded. Exit 0 with Codex's JSON on stdout."},
}
