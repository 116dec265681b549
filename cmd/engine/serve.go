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
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/receipt"
)

func (a *app) serve(c *cli.Context) error {
	if c.NArg() > 0 {
		return cmdline.Usage(fmt.Errorf("serve takes no arguments, got %q", c.Args().First()))
	}
	listen := c.String("listen")
	var tokens *engine.Tokens
	if f := c.String("tokens"); f != "" {
		var err error
		if tokens, err = engine.LoadTokens(f); err != nil {
			return cmdline.Usage(err)
		}
	} else if listen != "" && !c.Bool("insecure-dev") {
		return cmdline.Usage(errors.New("serve needs --tokens FILE (or --insecure-dev for a local experiment, or --listen \"\" to serve the Unix socket only)"))
	}
	if listen != "" && c.Bool("insecure-dev") {
		fmt.Fprintln(a.stderr, "engine: WARNING: --insecure-dev: requests without a token act as tenant default")
	}
	p, err := loadEnginePolicy(c)
	if err != nil {
		return err
	}
	cfg, err := cmdline.StoreConfig(c)
	if err != nil {
		return err
	}
	dataDir := cmdline.Resolve(c, cmdline.FlagData)
	socket := c.String("socket")
	switch {
	case socket == "none":
		socket = ""
	case socket == "" && cfg.URL == "":
		socket = engine.SocketPath(dataDir)
	}
	tlsConf, err := tlsConfig(c.String("tls-cert"), c.String("tls-key"))
	if err != nil {
		return err
	}
	if listen == "" && socket == "" {
		return cmdline.Usage(errors.New("serve needs --listen or a socket (--socket PATH)"))
	}
	cfg.NoAtomicBatch, cfg.AtomicBatch = c.Bool("no-atomic-batch"), c.Bool("atomic-batch")
	if cfg.NoAtomicBatch && cfg.AtomicBatch {
		return cmdline.Usage(errors.New("--atomic-batch and --no-atomic-batch contradict each other"))
	}
	st, err := store.Open(c.Context, cfg)
	var locked *store.LockedError
	if errors.As(err, &locked) && locked.Holder.NATSURL != "" {
		// `ledger serve` holds the data directory: record through it.
		fmt.Fprintf(a.stderr, "engine: %s holds %s; recording through it at %s\n", locked.Holder.Program, dataDir, locked.Holder.NATSURL)
		cfg.URL = locked.Holder.NATSURL
		st, err = store.Open(c.Context, cfg)
	}
	if err != nil {
		return cmdline.Unavailable(err)
	}
	defer st.Close()
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	d := decide.NewDecider(p)
	d.Limits = lim
	if d.Signer, _, err = cmdline.Signer(c.String("signing-key"), dataDir); err != nil {
		return err
	}
	if d.Sealer, err = cmdline.Sealer(dataDir, p.Manifest()); err != nil {
		return err
	}
	warn := func(err error) { fmt.Fprintf(a.stderr, "engine: %v\n", err) }
	if c.Int("max-sessions") < 0 {
		return cmdline.Usage(fmt.Errorf("--max-sessions %d: want 0 (no bound) or more", c.Int("max-sessions")))
	}
	opts := []engine.Option{engine.WithPendingTimeout(c.Duration("pending-timeout")), engine.WithFailOpen(c.Bool("fail-open")),
		engine.WithMaxSessions(c.Int("max-sessions")),
		engine.WithSpool(filepath.Join(dataDir, "spool")), engine.WithWarnings(warn)}
	if f := c.String("telemetry"); f != "" {
		tf, err := os.OpenFile(f, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return cmdline.Usage(err)
		}
		defer tf.Close()
		opts = append(opts, engine.WithTelemetry(engine.NewTelemetry(tf)))
	}
	if every := c.Duration("checkpoint-every"); every >= 0 {
		dir := c.String("checkpoint-dir")
		if dir == "" {
			dir = filepath.Join(dataDir, "checkpoints")
		}
		key, _, err := cmdline.SigningKey(c.String("checkpoint-key"), dataDir, cmdline.KeyCheckpoints)
		if err != nil {
			return err
		}
		cp := engine.NewCheckpointer(st, key, dir, d.RecordSigner())
		opts = append(opts, engine.WithCheckpoints(cp))
		go cp.Run(c.Context, every, warn)
		fmt.Fprintf(a.stderr, "engine: signed checkpoints go to %s (every %s and after each SessionEnd)\n", dir, every)
	}
	if c.String("signing-key") == "" {
		keys := filepath.Join(dataDir, "keys")
		fmt.Fprintf(a.stderr, "engine: records are signed; verify them with ledger verify --pubkey %s --pubkey %s\n",
			filepath.Join(keys, "receipt-ed25519.pub.pem"), filepath.Join(keys, "checkpoint-ed25519.pub.pem"))
	}
	eng := engine.New(d, st, opts...)
	// Records a crashed engine owed the ledger go in before anything else.
	drainCtx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	if err := eng.Drain(drainCtx); err != nil {
		warn(err)
	}
	cancel()

	var servers []*http.Server
	errc := make(chan error, 2)
	serveOn := func(ln net.Listener, h http.Handler) {
		srv := engine.NewHTTPServer("", h)
		servers = append(servers, srv)
		go func() { errc <- srv.Serve(ln) }()
	}
	timeout := c.Duration("timeout")
	if listen != "" {
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			return cmdline.Usage(err)
		}
		scheme := "http"
		if tlsConf != nil {
			ln, scheme = tls.NewListener(ln, tlsConf), "https"
		}
		serveOn(ln, engine.Handler(engine.ServerConfig{Engine: eng, Store: st, Tokens: tokens, Insecure: c.Bool("insecure-dev"),
			LocalIdentity: receipt.Authenticated{By: "insecure-dev"}, Timeout: timeout}))
		fmt.Fprintf(a.stderr, "engine: serving %s://%s (policy %s, manifest %s)\n", scheme, ln.Addr(), p.Digest()[:12], p.Manifest().Name)
	}
	if socket != "" {
		ln, err := engine.ListenUnix(socket)
		if err != nil {
			return cmdline.Usage(err)
		}
		defer os.Remove(socket)
		if idle := c.Duration("idle-exit"); idle > 0 {
			ln = engine.NewIdleListener(ln, idle)
		}
		var once sync.Once
		stale := func() {
			once.Do(func() {
				fmt.Fprintln(a.stderr, "engine: a hook runs another configuration (policy, manifest, flags or binary); stopping so that it starts its own")
				ln.Close()
			})
		}
		// The socket is this user's only (0600 in a 0700 directory): its
		// requests act as --tenant without a token.
		serveOn(ln, engine.Handler(engine.ServerConfig{Engine: eng, Store: st, Insecure: true, Tenant: c.String("tenant"), Timeout: timeout,
			LocalIdentity: engine.LocalIdentity(), LocalRole: engine.RoleHost,
			Config: c.String("config-digest"), Stale: stale}))
		fmt.Fprintf(a.stderr, "engine: serving hooks on %s (tenant %s)\n", socket, c.String("tenant"))
	}
	st.Announce("engine serve", socket)
	select {
	case err := <-errc:
		if errors.Is(err, net.ErrClosed) { // the idle listener closed
			err = nil
		}
		shutdown(servers)
		return err
	case <-c.Context.Done():
	}
	shutdown(servers)
	return nil
}

func shutdown(servers []*http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range servers {
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
