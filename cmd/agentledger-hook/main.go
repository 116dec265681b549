// Command agentledger-hook is the hook an agent host runs for every call:
// `agentledger-hook HOST [flags of engine hook HOST]`. It hands the host's
// input to the user's local engine and prints the host's answer; it links
// neither the policy engine nor the store, so it starts in a few
// milliseconds (see hookwire.Hook).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentledger/agentledger/hookwire"
)

// printWire prints, for --wire, how an in-process hook reaches the local
// engine itself (hookwire.Wire); exit 1 where it must run this hook for
// every call.
func printWire(o hookwire.Options) int {
	w, err := hookwire.WireOf(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentledger-hook: no direct wire: %v\n", err)
		return 1
	}
	b, _ := json.Marshal(w)
	fmt.Println(string(b))
	return 0
}

// policies is the repeatable --policy flag.
type policies []string

func (p *policies) String() string     { return strings.Join(*p, ",") }
func (p *policies) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	args := os.Args[1:]
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(os.Stderr, "usage: agentledger-hook HOST [--data DIR] [--tenant T] [--manifest FILE] [--policy PATH]... [--fail-open] [--monitor] [--auto-approve] [--timeout D] [--wire] (any other flag of `engine hook HOST` is handed to it)")
		os.Exit(hookwire.MissingExit)
	}
	o := hookwire.Options{Host: args[0], Args: args}
	fs := flag.NewFlagSet("agentledger-hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.Data, "data", "", "")
	fs.StringVar(&o.Tenant, "tenant", "", "")
	fs.StringVar(&o.Manifest, "manifest", "", "")
	fs.Var((*policies)(&o.Policy), "policy", "")
	fs.BoolVar(&o.FailOpen, "fail-open", false, "")
	fs.BoolVar(&o.AutoApprove, "auto-approve", false, "")
	fs.BoolVar(&o.HostAsks, "host-asks", false, "")
	fs.BoolVar(&o.Monitor, "monitor", false, "")
	fs.DurationVar(&o.Timeout, "timeout", 8*time.Second, "")
	fs.StringVar(&o.EngineProgram, "engine-program", "", "")
	wire := fs.Bool("wire", false, "")
	o.Unread = fs.Parse(args[1:])
	if o.Unread == nil && fs.NArg() > 0 {
		o.Unread = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *wire {
		os.Exit(printWire(o))
	}
	os.Exit(hookwire.Hook(context.Background(), o, os.Stdin, os.Stdout, os.Stderr))
}
