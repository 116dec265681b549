package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/fleet"
	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/inbox"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/mcpproxy"
	"github.com/agentledger/agentledger/otlp"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/receipt"
)

// serveFlags is what serve reads from its flags, checked.
type serveFlags struct {
	listen, socket, dataDir string
	tokens                  *engine.Tokens
	tlsConf                 *tls.Config
	cfg                     store.Config
}

// checkpointKeys is the data directory's checkpoint public key (what
// ledger checkpoint and the engine's checkpoints sign with), which the
// inbox opens recorded checkpoints with.
func (f serveFlags) checkpointKeys() receipt.Keyring {
	_, pub := receipt.KeyFiles(f.dataDir, receipt.KeyCheckpoints)
	return cmdline.CheckpointKeys(pub)
}

func (a *app) serve(c *cli.Context) error {
	f, err := a.serveFlags(c)
	if err != nil {
		return err
	}
	p, err := loadEnginePolicy(c)
	if err != nil {
		return err
	}
	lost := make(chan struct{})
	st, err := a.openServeStore(c, f, func() { close(lost) })
	if err != nil {
		return err
	}
	defer st.Close()
	eng, closeEng, err := a.newServeEngine(c, f, p, st)
	if err != nil {
		return err
	}
	defer closeEng()
	return a.runServers(c, f, p, eng, st, newConfigs(c, eng.Decider()), lost)
}

// serveFlags checks serve's flags and their combinations.
func (a *app) serveFlags(c *cli.Context) (serveFlags, error) {
	var f serveFlags
	if c.NArg() > 0 {
		return f, cmdline.Usage(fmt.Errorf("serve takes no arguments, got %q", c.Args().First()))
	}
	f.listen = c.String("listen")
	var err error
	if file := c.String("tokens"); file != "" {
		if f.tokens, err = engine.LoadTokens(file); err != nil {
			return f, cmdline.Usage(err)
		}
	} else if f.listen != "" && !c.Bool("insecure-dev") {
		return f, cmdline.Usage(errors.New("serve needs --tokens FILE (or --insecure-dev for a local experiment, or --listen \"\" to serve the Unix socket only)"))
	}
	if f.listen != "" && c.Bool("insecure-dev") {
		fmt.Fprintln(a.stderr, "engine: WARNING: --insecure-dev: requests without a token act as tenant default")
	}
	if f.cfg, err = cmdline.StoreConfig(c); err != nil {
		return f, err
	}
	f.dataDir = cmdline.Resolve(c, cmdline.FlagData)
	switch f.socket = c.String("socket"); {
	case f.socket == "none":
		f.socket = ""
	case f.socket == "" && f.cfg.URL == "":
		f.socket = engine.SocketPath(f.dataDir)
	}
	if f.tlsConf, err = tlsConfig(c.String("tls-cert"), c.String("tls-key")); err != nil {
		return f, err
	}
	if f.listen == "" && f.socket == "" {
		return f, cmdline.Usage(errors.New("serve needs --listen or a socket (--socket PATH)"))
	}
	f.cfg.NoAtomicBatch, f.cfg.AtomicBatch = c.Bool("no-atomic-batch"), c.Bool("atomic-batch")
	if f.cfg.NoAtomicBatch && f.cfg.AtomicBatch {
		return f, cmdline.Usage(errors.New("--atomic-batch and --no-atomic-batch contradict each other"))
	}
	if c.Bool("fleet") && f.cfg.URL == "" {
		return f, cmdline.Usage(errors.New("--fleet needs --nats URL: the fleet's engines share one JetStream cluster"))
	}
	f.cfg.Fences = c.Bool("fleet")
	if c.Bool("fleet") && c.Bool("no-atomic-batch") {
		return f, cmdline.Usage(errors.New("--fleet records every decision as an atomic batch (the partition's fence rides on it): drop --no-atomic-batch"))
	}
	if c.Int("max-sessions") < 0 {
		return f, cmdline.Usage(fmt.Errorf("--max-sessions %d: want 0 (no bound) or more", c.Int("max-sessions")))
	}
	return f, nil
}

// openServeStore opens the ledger; on the embedded store it listens on
// loopback for this machine's ledger commands, which read through the
// engine while it runs (the lock file says where). When another process
// holds the data directory (ledger serve), it records through that one,
// and calls lost when that process goes away.
func (a *app) openServeStore(c *cli.Context, f serveFlags, lost func()) (*store.Store, error) {
	cfg := f.cfg
	if cfg.URL == "" {
		cfg.Listen, cfg.LocalClients = "127.0.0.1:0", true
	}
	st, err := store.Open(c.Context, cfg)
	var locked *store.LockedError
	if errors.As(err, &locked) && locked.Holder.NATSURL != "" {
		fmt.Fprintf(a.stderr, "engine: %s holds %s; recording through it at %s (and stopping when it goes away)\n", locked.Holder.Program, f.dataDir, locked.Holder.NATSURL)
		cfg = f.cfg
		cfg.URL, cfg.OnLost = locked.Holder.NATSURL, lost
		st, err = store.Open(c.Context, cfg)
	}
	if err != nil {
		return nil, cmdline.OpenErr(err)
	}
	return st, nil
}

// newServeEngine builds the decider and the engine and drains the records a
// crashed engine owed the ledger.
func (a *app) newServeEngine(c *cli.Context, f serveFlags, p *policy.Policy, st *store.Store) (*engine.Engine, func(), error) {
	lim, err := cmdline.Limits(c)
	if err != nil {
		return nil, nil, err
	}
	d := decide.NewDecider(p)
	d.Limits = lim
	if d.Signer, _, err = cmdline.Signer(c.String("signing-key"), f.dataDir); err != nil {
		return nil, nil, err
	}
	if d.Sealer, err = cmdline.Sealer(f.dataDir, p.Manifest()); err != nil {
		return nil, nil, err
	}
	opts, closeOpts, err := a.engineOptions(c, f, st, d)
	if err != nil {
		return nil, nil, err
	}
	if c.String("signing-key") == "" {
		keys := filepath.Join(f.dataDir, "keys")
		fmt.Fprintf(a.stderr, "engine: records are signed with the record key; verify them with ledger verify --pubkey %s "+
			"(and checkpoints with --checkpoint-pubkey %s: each key verifies only what it signs)\n",
			filepath.Join(keys, "receipt-ed25519.pub.pem"), filepath.Join(keys, "checkpoint-ed25519.pub.pem"))
	}
	member, err := a.joinFleet(c, st)
	if err != nil {
		closeOpts()
		return nil, nil, err
	}
	if member != nil {
		opts = append(opts, engine.WithFleet(member))
		prev := closeOpts
		closeOpts = func() { member.Close(); prev() }
	}
	opts = append(opts, engine.WithGatewayPins(mcpproxy.NewPinIndex(st)))
	eng, err := engine.New(d, st, opts...)
	if err != nil {
		closeOpts()
		return nil, nil, cmdline.Usage(err)
	}
	closeTelemetry := closeOpts
	closeOpts = func() { eng.FlushTraces(); closeTelemetry() }
	if member != nil {
		if err := eng.StartFleet(st); err != nil {
			closeOpts()
			return nil, nil, cmdline.Unavailable(err)
		}
	}
	drainCtx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	defer cancel()
	if err := eng.Drain(drainCtx); err != nil {
		a.warn(err)
	}
	go a.drainEvery(c.Context, eng, spoolInterval)
	return eng, closeOpts, nil
}

// joinFleet joins the fleet of the --nats cluster's stream (--fleet), or
// returns nil.
func (a *app) joinFleet(c *cli.Context, st *store.Store) (*fleet.Member, error) {
	if !c.Bool("fleet") {
		return nil, nil
	}
	key, err := fleet.LoadKey(cmdline.Resolve(c, cmdline.FlagData), true)
	if err != nil {
		return nil, cmdline.Usage(err)
	}
	m, err := fleet.Join(c.Context, st, fleet.Config{ID: c.String("fleet-id"), Partitions: c.Int("partitions"), Key: key,
		LeaseTTL: c.Duration("lease-ttl"), Log: func(line string) { fmt.Fprintf(a.stderr, "engine: %s\n", line) }})
	if err != nil {
		return nil, cmdline.Usage(err)
	}
	fmt.Fprintf(a.stderr, "engine: fleet member %s: %d partitions, leases of %s\n", m.ID(), m.Partitions(), c.Duration("lease-ttl"))
	return m, nil
}

// spoolInterval is how often a serving engine records what hooks spooled
// while they could not reach it (a call that timed out, an engine that was
// starting): the record does not wait for the next start.
const spoolInterval = 5 * time.Second

func (a *app) drainEvery(ctx context.Context, eng *engine.Engine, every time.Duration) {
	cmdline.Every(ctx, every, func() {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err := eng.Drain(dctx)
		if eng.Fleet() != nil {
			// Records owed to sessions other engines own go there.
			err = errors.Join(err, eng.FlushOwed(dctx))
		}
		if err != nil {
			a.warn(err)
		}
	})
}

func (a *app) warn(err error) {
	fmt.Fprintf(a.stderr, "engine: %s\n", detect.RedactJSONText(err.Error()))
}

// engineOptions turns serve's flags into engine options; the function it
// returns closes what they opened.
// otlpExporter is the OTLP exporter --otlp-endpoint and --otlp-header ask
// for.
func otlpExporter(c *cli.Context, endpoint string) (*otlp.Exporter, error) {
	headers := map[string]string{}
	for _, h := range c.StringSlice("otlp-header") {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return nil, cmdline.Usage(fmt.Errorf("--otlp-header %q: want KEY=VALUE", h))
		}
		headers[k] = v
	}
	x, err := otlp.New(c.Context, otlp.Config{Endpoint: endpoint, Protocol: c.String("otlp-protocol"), Headers: headers})
	if err != nil {
		return nil, cmdline.Usage(err)
	}
	return x, nil
}

// modeMonitor reads --mode: enforce (the default) or monitor.
func modeMonitor(mode string) (bool, error) {
	switch mode {
	case "", "enforce":
		return false, nil
	case "monitor":
		return true, nil
	}
	return false, fmt.Errorf("--mode %q: want enforce or monitor", mode)
}

func (a *app) engineOptions(c *cli.Context, f serveFlags, st *store.Store, d *decide.Decider) ([]engine.Option, func(), error) {
	monitor, err := modeMonitor(c.String("mode"))
	if err != nil {
		return nil, nil, cmdline.Usage(err)
	}
	if monitor {
		fmt.Fprintln(a.stderr, "engine: monitor mode: every call is judged and recorded (enforced: false); no host is given a decision")
	}
	opts := []engine.Option{engine.WithPendingTimeout(c.Duration("pending-timeout")), engine.WithFailOpen(c.Bool("fail-open")),
		engine.WithMaxSessions(c.Int("max-sessions")), engine.WithMonitor(monitor),
		engine.WithSpool(filepath.Join(f.dataDir, engine.SpoolName)), engine.WithWarnings(a.warn)}
	closeAll := func() {}
	if file := c.String("telemetry"); file != "" {
		tf, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, nil, cmdline.Usage(err)
		}
		closeAll = func() { tf.Close() }
		opts = append(opts, engine.WithTelemetry(engine.NewTelemetry(tf)))
	}
	if ep := c.String("otlp-endpoint"); ep != "" {
		x, err := otlpExporter(c, ep)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		prev := closeAll
		closeAll = func() { prev(); x.Shutdown(context.Background()) }
		opts = append(opts, engine.WithOTLP(x))
	}
	every, err := checkpointEvery(c.String("checkpoint-every"))
	if err != nil {
		closeAll()
		return nil, nil, cmdline.Usage(err)
	}
	if every >= 0 {
		dir := c.String("checkpoint-dir")
		if dir == "" {
			dir = filepath.Join(f.dataDir, "checkpoints")
		}
		key, _, err := cmdline.SigningKey(c.String("checkpoint-key"), f.dataDir, cmdline.KeyCheckpoints)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		cp := engine.NewCheckpointer(st, key, dir, d.RecordSigner())
		opts = append(opts, engine.WithCheckpoints(cp))
		go cp.Run(c.Context, every, a.warn)
		fmt.Fprintf(a.stderr, "engine: signed checkpoints go to %s (every %s and after each SessionEnd)\n", dir, every)
	}
	return opts, closeAll, nil
}

// checkpointEvery reads --checkpoint-every: a duration, or a bare number
// (0, or a negative one such as -1: never) as the usage says.
func checkpointEvery(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil {
		if n > 0 {
			return 0, fmt.Errorf("--checkpoint-every %s: give a duration with a unit (10m), 0 or a negative number", v)
		}
		return time.Duration(n), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("--checkpoint-every %q: want a duration such as 10m, 0, or a negative number for never", v)
	}
	return d, nil
}

// runServers serves HTTP on --listen and the hooks' Unix socket until the
// context ends or the idle socket closes.
func (a *app) runServers(c *cli.Context, f serveFlags, p *policy.Policy, eng *engine.Engine, st *store.Store, cs *configs, lost <-chan struct{}) error {
	var servers []*http.Server
	errc := make(chan error, 2)
	serveOn := func(ln net.Listener, h http.Handler) {
		srv := engine.NewHTTPServer("", h)
		servers = append(servers, srv)
		go func() { errc <- srv.Serve(ln) }()
	}
	defer shutdown(&servers)
	timeout := c.Duration("timeout")
	if f.listen != "" {
		ln, err := net.Listen("tcp", f.listen)
		if err != nil {
			return cmdline.Usage(err)
		}
		scheme := "http"
		if f.tlsConf != nil {
			ln, scheme = tls.NewListener(ln, f.tlsConf), "https"
		}
		api := engine.Handler(engine.ServerConfig{Engine: eng, Store: st, Tokens: f.tokens, Insecure: c.Bool("insecure-dev"),
			LocalIdentity: receipt.Authenticated{By: "insecure-dev"}, Timeout: timeout})
		serveOn(ln, inbox.With(api, inbox.Config{Engine: eng, Store: st, Tokens: f.tokens, CheckpointKeys: f.checkpointKeys(), Timeout: timeout}))
		fmt.Fprintf(a.stderr, "engine: serving %s://%s (policy %s, manifest %s)\n", scheme, ln.Addr(), p.Digest()[:12], p.Manifest().Name)
	}
	if f.socket != "" {
		if err := a.serveSocket(c, f, eng, st, cs, serveOn); err != nil {
			return err
		}
		defer os.Remove(f.socket)
	}
	st.Announce("engine serve", f.socket)
	select {
	case err := <-errc:
		if errors.Is(err, net.ErrClosed) { // the idle listener closed
			err = nil
		}
		return err
	case <-c.Context.Done():
		return nil
	case <-lost:
		return cmdline.Unavailable(errors.New("the process this engine recorded through went away; stopping, so that the next hook starts an engine that holds the data directory"))
	}
}

// serveSocket serves the hooks' Unix socket, and the HTTP hooks engine
// install set up in the data directory.
func (a *app) serveSocket(c *cli.Context, f serveFlags, eng *engine.Engine, st *store.Store, cs *configs, serveOn func(net.Listener, http.Handler)) error {
	timeout := c.Duration("timeout")
	httpListen, httpTokens, httpHooks, err := readHTTPHooks(f.dataDir)
	if err != nil {
		return cmdline.Usage(err)
	}
	ln, err := a.socketListener(c, f.socket, !httpHooks)
	if err != nil {
		return err
	}
	if httpHooks {
		// The command hooks are served whatever becomes of these.
		if err := a.serveHTTPHooks(httpListen, httpTokens, eng, st, cs, timeout, serveOn); err != nil {
			a.warn(fmt.Errorf("HTTP hooks are not served (the host blocks their calls): %w", err))
		}
	}
	// The socket is this user's only (0600 in a 0700 directory): its
	// requests act as the tenant their configuration names (--tenant
	// without one) without a token, each decided under the policy and
	// manifest it names.
	var binary string
	if exe, err := os.Executable(); err == nil {
		binary = hookwire.BinaryIdentity(exe)
	}
	serveOn(ln, engine.Handler(engine.ServerConfig{Engine: eng, Store: st, Insecure: true, Tenant: c.String("tenant"), Timeout: timeout,
		LocalIdentity: engine.LocalIdentity(), LocalRole: engine.RoleHost, Observe: true,
		Binary: binary, Stale: a.staleBinary(ln), Configure: cs.get, Configured: cs.count}))
	fmt.Fprintf(a.stderr, "engine: serving hooks on %s (each in the tenant, policy and manifest its hook names; default tenant %s)\n", f.socket, c.String("tenant"))
	return nil
}

// socketListener listens on the hooks' Unix socket, closing it after
// --idle-exit without requests when idle is set.
func (a *app) socketListener(c *cli.Context, socket string, idle bool) (net.Listener, error) {
	ln, err := engine.ListenUnix(socket)
	if err != nil {
		return nil, cmdline.Usage(err)
	}
	if d := c.Duration("idle-exit"); d > 0 && idle {
		ln = engine.NewIdleListener(ln, d)
	}
	return ln, nil
}

// serveHTTPHooks serves hosts' HTTP hooks on the loopback address engine
// install set up, each request authenticated by its install's token and
// decided under the configuration it names.
func (a *app) serveHTTPHooks(listen, tokensPath string, eng *engine.Engine, st *store.Store, cs *configs, timeout time.Duration, serveOn func(net.Listener, http.Handler)) error {
	tokens, err := engine.LoadTokens(tokensPath)
	if err != nil {
		return cmdline.Usage(err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return cmdline.Unavailable(fmt.Errorf("HTTP hooks on %s: %w", listen, err))
	}
	serveOn(ln, engine.Handler(engine.ServerConfig{Engine: eng, Store: st, Tokens: tokens, Timeout: timeout, Observe: true,
		Configure: cs.get, Configured: cs.count}))
	fmt.Fprintf(a.stderr, "engine: serving HTTP hooks on http://%s (no idle exit while they are installed)\n", listen)
	return nil
}

// staleBinary returns what the socket's handler calls when a hook would
// start another engine program (an upgrade): the engine stops so that the
// hook starts the new one.
func (a *app) staleBinary(ln net.Listener) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			fmt.Fprintln(a.stderr, "engine: a hook runs another engine program; stopping so that it starts the new one")
			ln.Close()
		})
	}
}

func shutdown(servers *[]*http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range *servers {
		_ = s.Shutdown(ctx)
	}
}

// tlsConfig loads the server certificate and key for --listen (both or
// neither): TLS 1.2 at least.
func tlsConfig(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, cmdline.Usage(errors.New("--tls-cert and --tls-key go together"))
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, cmdline.Usage(fmt.Errorf("TLS: %w", err))
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
