package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/fleet"
	"github.com/agentledger/agentledger/inbox"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/mcpproxy"
)

// mcpProxyCommand is `mcp-proxy`.
func mcpProxyCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "mcp-proxy",
		Usage:     "stand between an MCP client and an MCP server: every tool call judged and recorded",
		ArgsUsage: "[--name SERVER] [--listen ADDR --tokens FILE] [--upstream URL | -- CMD [ARGS...]]",
		Description: "A client starts engine mcp-proxy where it would start the server: the proxy starts\n" +
			"CMD ARGS as the real server and relays, recording the connection (PreMCPConnect) and\n" +
			"every tools/call (PreToolUse, then PostToolUse with the result) as one session of the\n" +
			"ledger, judged by the policy and manifest. A denied call never reaches the server; the\n" +
			"client gets a tool result with isError and the reason. An ask is held for an approver\n" +
			"(engine serve's /v1/resolutions, or its inbox) until the pending timeout.\n\n" +
			"With --listen, the proxy serves Streamable HTTP (path /) to clients with a host bearer\n" +
			"token (--tokens, as engine serve), reaching the server at --upstream URL or by running\n" +
			"CMD once per session.",
		Flags: append(policyFlags(),
			&cli.StringFlag{Name: "name", Usage: "the server's `NAME` (tools are mcp__NAME__TOOL; default: the command's base name)"},
			&cli.StringFlag{Name: "source", Value: "user", Usage: "where the server's configuration came from, as the manifest's mcp.trusted_sources name it"},
			&cli.DurationFlag{Name: "pending-timeout", Value: engine.DefaultPendingTimeout, Usage: "how long an ask waits for an approver before it is recorded as a timeout (deny)"},
			&cli.StringFlag{Name: "signing-key", Usage: "Ed25519 PKCS#8 PEM `FILE` that signs receipts (default: DATA/keys)"},
			&cli.DurationFlag{Name: "upstream-timeout", Value: mcpproxy.DefaultUpstreamTimeout, Usage: "how long the server may take to answer one request before the client gets an error (on record)"},
			&cli.DurationFlag{Name: "idle-timeout", Value: mcpproxy.DefaultIdleTimeout, Usage: "with --listen, end a session no request has used for this long (a client that comes back is connected again)"},
			&cli.StringFlag{Name: "mode", Value: "enforce", Usage: "`enforce`, or monitor: judge and record every request (verdicts recorded enforced: false) and block none, to watch a policy before enforcing it"},
			&cli.StringFlag{Name: "listen", Usage: "serve Streamable HTTP on `HOST:PORT` instead of stdio"},
			&cli.StringFlag{Name: "tokens", EnvVars: []string{"ENGINE_TOKENS"}, Usage: "bearer tokens `FILE` for --listen (host tokens may connect)"},
			&cli.StringFlag{Name: "upstream", Usage: "the real server's Streamable HTTP `URL` (instead of a command)"},
			&cli.DurationFlag{Name: "upstream-wait", Value: 30 * time.Second, Usage: "with --upstream, how long to wait at start for a server that is not up yet"},
			&cli.StringFlag{Name: "tls-cert", Usage: "serve --listen over TLS with this certificate chain PEM `FILE` (with --tls-key)"},
			&cli.StringFlag{Name: "tls-key", Usage: "the TLS private key PEM `FILE` of --tls-cert"},
			&cli.BoolFlag{Name: "fleet", Usage: "pass every call to the engine fleet on --nats (engine serve --fleet), which decides it: the gateway owns no partition"},
			&cli.StringFlag{Name: "fleet-id", Usage: "the gateway's `NAME` in the fleet (default: host name and process id)"},
			&cli.IntFlag{Name: "partitions", Value: fleet.DefaultPartitions, Usage: "the fleet's partitions, `N` as its engines have them"},
		),
		Action: a.mcpProxy,
	})
}

func (a *app) mcpProxy(c *cli.Context) error {
	args := c.Args().Slice()
	if (len(args) == 0) == (c.String("upstream") == "") {
		return cmdline.Usage(errors.New("mcp-proxy needs the server: -- CMD [ARGS...], or --upstream URL with --listen"))
	}
	if c.String("upstream") != "" && c.String("listen") == "" {
		return cmdline.Usage(errors.New("--upstream is for --listen (on stdio, give the server's command after --)"))
	}
	name := c.String("name")
	switch {
	case name == "" && len(args) > 0:
		name = strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0]))
	case name == "":
		return cmdline.Usage(errors.New("--upstream needs --name SERVER"))
	}
	monitor, err := modeMonitor(c.String("mode"))
	if err != nil {
		return cmdline.Usage(err)
	}
	// A stdio proxy shares the data directory with the hooks of the host
	// that starts it, whichever of them comes first.
	access := cmdline.Shared
	if c.String("listen") != "" {
		access = cmdline.Hold
	}
	e, st, err := a.recordingEngineOn(c, access)
	if err != nil {
		return err
	}
	defer st.Close()
	cfg := mcpproxy.Config{Engine: e, Ledger: st, Tenant: c.String("tenant"), Server: name, Source: c.String("source"), URI: strings.Join(args, " "), Transport: "stdio",
		UpstreamTimeout: c.Duration("upstream-timeout"), IdleTimeout: c.Duration("idle-timeout"), Monitor: monitor}
	if monitor {
		fmt.Fprintln(a.stderr, "engine: mcp-proxy: monitor mode: every request is judged and recorded (enforced: false); none is blocked")
	}
	if c.String("listen") != "" {
		return a.mcpGateway(c, cfg, st, args)
	}
	cmd := exec.CommandContext(c.Context, args[0], args[1:]...)
	cmd.Stderr = a.stderr
	cfg.Upstream = &mcp.CommandTransport{Command: cmd}
	// The server is reached once the client has said what it can do: the
	// proxy declares the same to the server.
	caps, stdin, err := mcpproxy.ReadInitialize(a.stdin)
	if err != nil {
		return cmdline.Unavailable(fmt.Errorf("reading the client's first message: %w", err))
	}
	cfg.ClientCapabilities = caps
	p, err := mcpproxy.Connect(c.Context, cfg, "")
	if err != nil {
		return cmdline.Unavailable(err)
	}
	fmt.Fprintf(a.stderr, "engine: mcp-proxy: %s is session %s\n", name, p.Session())
	runErr := p.Server().Run(c.Context, p.StdioTransport(stdin, a.stdout))
	return errors.Join(runErr, p.Close(c.Context))
}

// mcpGateway serves the proxy over Streamable HTTP until interrupted.
func (a *app) mcpGateway(c *cli.Context, cfg mcpproxy.Config, st *store.Store, args []string) error {
	if c.String("tokens") == "" {
		return cmdline.Usage(errors.New("--listen needs --tokens FILE (host tokens connect)"))
	}
	tokens, err := engine.LoadTokens(c.String("tokens"))
	if err != nil {
		return cmdline.Usage(err)
	}
	tlsConf, err := tlsConfig(c.String("tls-cert"), c.String("tls-key"))
	if err != nil {
		return err
	}
	upstream := func() (mcp.Transport, error) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stderr = a.stderr
		return &mcp.CommandTransport{Command: cmd}, nil
	}
	if u := c.String("upstream"); u != "" {
		// A server reached by URL may start after the gateway; a command
		// is started here, and one that fails to start fails at once.
		cfg.URI, cfg.Transport, cfg.UpstreamWait = u, "streamable_http", c.Duration("upstream-wait")
		upstream = func() (mcp.Transport, error) { return &mcp.StreamableClientTransport{Endpoint: u}, nil }
	}
	cfg.Notify = func(msg string) { fmt.Fprintf(a.stderr, "engine: mcp-proxy: %s\n", msg) }
	g, err := mcpproxy.NewGateway(c.Context, cfg, upstream, tokens)
	if err != nil {
		return cmdline.Unavailable(err)
	}
	defer g.Close(context.WithoutCancel(c.Context))
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return cmdline.Usage(err)
	}
	srv := engine.NewHTTPServer(c.String("listen"), gatewayMux(g, inbox.With(engine.Handler(engine.ServerConfig{Engine: cfg.Engine, Store: st, Tokens: tokens}),
		inbox.Config{Engine: cfg.Engine, Store: st, Tokens: tokens})))
	srv.WriteTimeout = 0 // an ask is held while an approver answers
	go func() {
		<-c.Context.Done()
		srv.Close()
	}()
	fmt.Fprintf(a.stderr, "engine: mcp-proxy: %s on %s\n", cfg.Server, ln.Addr())
	if tlsConf != nil {
		srv.TLSConfig = tlsConf
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// gatewayMux serves the MCP endpoint at / and, beside it, the engine's own
// API and inbox (/v1/…, /inbox), with the same tokens: the gateway's asks
// live in this process, and this is where an approver answers them.
func gatewayMux(g *mcpproxy.Gateway, api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	mux.Handle("/inbox", api)
	mux.Handle("/inbox/", api)
	mux.Handle("/", g.Handler())
	return mux
}
