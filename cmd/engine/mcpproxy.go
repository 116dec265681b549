package main

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/mcpproxy"
)

// mcpProxyCommand is `mcp-proxy`.
func mcpProxyCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "mcp-proxy",
		Usage:     "stand between an MCP client and an MCP server on stdio: every tool call judged and recorded",
		ArgsUsage: "[--name SERVER] -- CMD [ARGS...]",
		Description: "A client starts engine mcp-proxy where it would start the server: the proxy starts\n" +
			"CMD ARGS as the real server and relays, recording the connection (PreMCPConnect) and\n" +
			"every tools/call (PreToolUse, then PostToolUse with the result) as one session of the\n" +
			"ledger, judged by the policy and manifest. A denied call never reaches the server; the\n" +
			"client gets a tool result with isError and the reason. An ask is held for an approver\n" +
			"(engine serve's /v1/resolutions, or its inbox) until the pending timeout.",
		Flags: append(policyFlags(),
			&cli.StringFlag{Name: "name", Usage: "the server's `NAME` (tools are mcp__NAME__TOOL; default: the command's base name)"},
			&cli.StringFlag{Name: "source", Value: "user", Usage: "where the server's configuration came from, as the manifest's mcp.trusted_sources name it"},
			&cli.DurationFlag{Name: "pending-timeout", Value: engine.DefaultPendingTimeout, Usage: "how long an ask waits for an approver before it is recorded as a timeout (deny)"},
			&cli.StringFlag{Name: "signing-key", Usage: "Ed25519 PKCS#8 PEM `FILE` that signs receipts (default: DATA/keys)"},
		),
		Action: a.mcpProxy,
	})
}

func (a *app) mcpProxy(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return cmdline.Usage(errors.New("mcp-proxy needs the server's command: engine mcp-proxy [--name SERVER] -- CMD [ARGS...]"))
	}
	name := c.String("name")
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0]))
	}
	e, closeStore, err := a.recordingEngine(c)
	if err != nil {
		return err
	}
	defer closeStore()
	cmd := exec.CommandContext(c.Context, args[0], args[1:]...)
	cmd.Stderr = a.stderr
	p, err := mcpproxy.Connect(c.Context, mcpproxy.Config{Engine: e, Tenant: c.String("tenant"), Server: name, Source: c.String("source"),
		Upstream: &mcp.CommandTransport{Command: cmd}, URI: strings.Join(args, " "), Transport: "stdio"}, "")
	if err != nil {
		return cmdline.Unavailable(err)
	}
	fmt.Fprintf(a.stderr, "engine: mcp-proxy: %s is session %s\n", name, p.Session())
	runErr := p.Server().Run(c.Context, &mcp.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}})
	return errors.Join(runErr, p.Close(c.Context))
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
