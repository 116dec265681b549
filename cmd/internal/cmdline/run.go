package cmdline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/detect"
)

// Run runs app with args and returns the exit code. Errors are printed to
// stderr once; usage errors exit 2, never 3.
func Run(ctx context.Context, app *cli.App, args []string, stderr io.Writer) int {
	usage := false
	app.ExitErrHandler = func(*cli.Context, error) {}
	app.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		usage = true
		return Usage(err)
	}
	app.CommandNotFound = func(c *cli.Context, name string) {
		usage = true
		fmt.Fprintf(stderr, "%s: unknown command %q; see '%s help'\n", app.Name, name, app.Name)
	}
	setUsageHandler(app.Commands, &usage)
	if os.Getenv(ParseOnlyEnv) == "1" {
		parseOnly(app.Commands)
	}
	app.ErrWriter = stderr
	err := app.RunContext(ctx, Permute(app, args))
	if err == nil {
		if usage {
			return ExitUsage
		}
		return ExitOK
	}
	code := Code(err)
	if usage && !errors.As(err, new(*ExitError)) {
		code = ExitUsage
	}
	// An error may quote what it found wrong: no secret reaches the
	// terminal or a log through it.
	if msg := detect.RedactJSONText(err.Error()); msg != "" {
		fmt.Fprintf(stderr, "%s: %s\n", app.Name, strings.TrimSpace(msg))
	}
	return code
}

// ParseOnlyEnv, set to "1", makes a program parse its command line and
// stop there: a command or flag that does not exist is still exit 2, and
// nothing runs (the documentation's test checks every documented command
// this way).
const ParseOnlyEnv = "AGENTLEDGER_PARSE_ONLY"

func parseOnly(cmds []*cli.Command) {
	for _, c := range cmds {
		if c.Action != nil {
			c.Action = func(*cli.Context) error { return nil }
		}
		parseOnly(c.Subcommands)
	}
}

// Permute moves a command's flags ahead of its positional arguments, so
// that `ledger show SESSION --tenant acme` means what it says: urfave/cli v2
// stops parsing flags at the first positional argument. Everything after
// "--" stays positional.
func Permute(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	i := 1
	// Global flags before the command.
	for i < len(args) && isFlag(args[i]) {
		out = append(out, args[i])
		if takesValue(app.Flags, args[i]) && i+1 < len(args) {
			out = append(out, args[i+1])
			i++
		}
		i++
	}
	if i >= len(args) {
		return out
	}
	cmd := app.Command(args[i])
	out = append(out, args[i])
	i++
	if cmd == nil {
		return append(out, args[i:]...)
	}
	// Descend into subcommands (engine hook claude-code).
	for i < len(args) {
		sub := cmd.Command(args[i])
		if sub == nil {
			break
		}
		cmd = sub
		out = append(out, args[i])
		i++
	}
	var flags, positional []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i:]...)
			break
		}
		if !isFlag(a) {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		if takesValue(cmd.Flags, a) && i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(append(out, flags...), positional...)
}

func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' && a != "--" }

// takesValue reports whether flag token a names a flag in fs that takes a
// separate value (not a boolean, not written as --name=value).
func takesValue(fs []cli.Flag, a string) bool {
	if strings.Contains(a, "=") {
		return false
	}
	name := strings.TrimLeft(a, "-")
	for _, f := range fs {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	return false
}

func setUsageHandler(cmds []*cli.Command, usage *bool) {
	for _, c := range cmds {
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			*usage = true
			return Usage(err)
		}
		setUsageHandler(c.Subcommands, usage)
	}
}
