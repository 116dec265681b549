// Command replay re-runs recorded sessions against a candidate policy and
// manifest and gates CI on what changed.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmdline.Run(ctx, newApp(os.Stdout, os.Stderr), os.Args, os.Stderr)
	stop()
	os.Exit(code)
}
