// Command engine decides AARTS hook events with the policy: `engine eval`
// tries a policy on recorded or hand-written sessions.
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
	code := cmdline.Run(ctx, newApp(os.Stdin, os.Stdout, os.Stderr), os.Args, os.Stderr)
	stop()
	os.Exit(code)
}
