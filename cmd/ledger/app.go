package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// app holds the program's streams, so tests run it in process.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	now            func() time.Time
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, now: time.Now}
	return &cli.App{
		Name:            "ledger",
		Usage:           "hash-chained audit envelopes on NATS JetStream",
		Writer:          stdout,
		Version:         cmdline.Version(),
		Flags:           cmdline.GlobalFlags(),
		Reader:          stdin,
		HideHelpCommand: false,
		Commands: []*cli.Command{
			serveCommand(a),
			appendCommand(a),
			verifyCommand(a),
			checkpointCommand(a),
			exportCommand(a),
			importCommand(a),
			sessionsCommand(a),
			showCommand(a),
			shredCommand(a),
			keysCommand(a),
			proveCommand(a),
			witnessCommand(a),
			tailCommand(a),
		},
	}
}

// filterFlags select a tenant or a session.
func filterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "tenant", Usage: "only this `TENANT`"},
		&cli.StringFlag{Name: "session", Usage: "only this session `ID`"},
	}
}

func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return cmdline.Usage(fmt.Errorf("%s: unexpected argument %q (flags go before arguments)", c.Command.Name, c.Args().First()))
	}
	return nil
}

// openInput opens FILE, or stdin for "-" or no argument.
func (a *app) openInput(name string) (io.Reader, func(), error) {
	if name == "" || name == "-" {
		return a.stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, cmdline.Usage(err)
	}
	return f, func() { f.Close() }, nil
}

func filterOf(c *cli.Context) store.Filter {
	f := store.Filter{Tenant: c.String("tenant"), Session: c.String("session")}
	if f.Session != "" && f.Tenant == "" {
		f.Tenant = ledger.DefaultTenant
	}
	return f
}
