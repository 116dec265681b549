package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger/store"
)

func (a *app) serve(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	cfg, err := cmdline.StoreConfig(c)
	if err != nil {
		return err
	}
	if cfg.URL != "" {
		return cmdline.Usage(errors.New("serve runs the embedded server; it takes no --nats"))
	}
	cfg.Listen = c.String("listen")
	s, err := store.Open(c.Context, cfg)
	if err != nil {
		return cmdline.OpenErr(err)
	}
	defer s.Close()
	fmt.Fprintf(a.stderr, "ledger: serving stream %s from %s on %s (sync %s); clients need the writer secret in %s (give --data %s, or put it in the URL); interrupt to stop\n",
		s.StreamName(), cfg.DataDir, store.RedactURL(s.ClientURL()), cfg.Sync, filepath.Join(cfg.DataDir, store.WriterSecretFile), cfg.DataDir)
	s.Announce("ledger serve", "")
	<-c.Context.Done()
	return nil
}

// serveCommand is `serve`.
func serveCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "serve",
		Usage:     "run the embedded server for other processes until interrupted",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:4222", Usage: "`HOST:PORT` to accept NATS clients on"},
		},
		Action: a.serve,
	})
}
