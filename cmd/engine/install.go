package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/hostconfig"
)

// installCommand is `install` (remove false) or `uninstall` (remove true).
func installCommand(a *app, remove bool) *cli.Command {
	name, usage := "install", "send an agent host's hook events to agentledger (merges into its configuration)"
	desc := "Adds agentledger's hook to the host's hook configuration for every event its adapter handles,\n" +
		"beside the hooks already there, and prints the change as a diff. A second install changes\n" +
		"nothing; a hook of agentledger written before (another path or flags) is updated in place.\n" +
		"In a project (the default) the hook is the project's wrapper .agentledger/hook, written beside\n" +
		"the configuration for you to commit: it runs agentledger-hook from PATH for whoever works in\n" +
		"the project, and blocks a call (exit 2, noted for the record) where agentledger is not\n" +
		"installed. With --user the hook is the user's wrapper ~/.agentledger/hook, written beside it:\n" +
		"it runs this installation's agentledger-hook by absolute path, else agentledger-hook from PATH,\n" +
		"else blocks the call (noted for the record) — hosts that let a call through when its hook\n" +
		"cannot start (Codex, Gemini CLI, Copilot) then still stop it.\n" +
		"Files: claude-code .claude/settings.json, codex .codex/hooks.json (user: $CODEX_HOME), cursor\n" +
		".cursor/hooks.json, copilot .github/hooks/agentledger.json (user: ~/.copilot/hooks/), gemini\n" +
		".gemini/settings.json; in the project directory, or under the home directory with --user."
	if remove {
		name, usage = "uninstall", "remove agentledger's hooks from an agent host's configuration"
		desc = "Removes exactly the hooks `engine install` wrote (any engine program running `hook HOST`) and\n" +
			"what only held them; the user's own hooks and settings stay. Prints the change as a diff."
	}
	return &cli.Command{
		Name:        name,
		Usage:       usage,
		ArgsUsage:   strings.Join(hostconfig.Hosts(), "|"),
		Description: desc,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "project", Value: ".", Usage: "project `DIR` whose configuration is changed"},
			&cli.BoolFlag{Name: "user", Usage: "change the user's configuration (under the home directory) instead of a project's"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the change, write nothing"},
			&cli.BoolFlag{Name: "monitor", Usage: "install the hooks in monitor mode (engine hook --monitor): every call judged and recorded, none decided — watch a policy before enforcing it, then install again without it"},
			&cli.StringFlag{Name: "transport", Value: "command", Usage: "`command` (a hook process per call, the default) or http (Claude Code's HTTP hooks with onFailure block, to the local engine on loopback with a token of this install; --user only: the token is written into the user's settings)"},
			&cli.StringFlag{Name: "tenant", Value: "default", Usage: "`TENANT` of an http install's token"},
			&cli.StringFlag{Name: "command", Usage: "the hook `COMMAND` to write (default: the project's wrapper; with --user, the user's wrapper, running agentledger-hook beside this engine program); with --mcp, the engine program the servers start with (default: this one, by absolute path)"},
			&cli.BoolFlag{Name: "mcp", Usage: "instead of hooks, start each of the host's stdio MCP servers behind engine mcp-proxy (" + strings.Join(hostconfig.MCPHosts(), ", ") + "): uninstall --mcp starts them as they were"},
			&cli.StringFlag{Name: "manifest", Usage: "with --mcp, the manifest `FILE` the proxied servers are judged by"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("mcp") {
				return a.installMCP(c, remove)
			}
			return a.install(c, remove)
		},
	}
}

func (a *app) install(c *cli.Context, remove bool) error {
	if c.NArg() != 1 {
		return cmdline.Usage(fmt.Errorf("name one host: %s", strings.Join(hostconfig.Hosts(), ", ")))
	}
	host := c.Args().First()
	if c.Bool("user") && c.IsSet("project") {
		return cmdline.Usage(errors.New("--project and --user exclude each other"))
	}
	command, installed, err := hookCommandOf(c, host, remove)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(c.String("project"))
	if err != nil {
		return err
	}
	scope := hostconfig.Scope{Dir: dir, User: c.Bool("user")}
	var change *hostconfig.Change
	var secret string // shown redacted
	switch {
	case remove:
		change, err = hostconfig.Uninstall(host, scope, command)
	case c.String("transport") == "http":
		change, secret, err = a.planHTTP(c, host, scope, command)
	case c.String("transport") != "command":
		return cmdline.Usage(fmt.Errorf("--transport %q: want command or http", c.String("transport")))
	default:
		change, err = hostconfig.Install(host, scope, command)
	}
	if err != nil {
		return cmdline.Usage(err)
	}
	if err := a.applyChange(c, change, secret); err != nil {
		return err
	}
	if c.Bool("dry-run") && remove {
		return nil
	}
	// The scope's wrapper: written with a configuration that names it,
	// removed with the last one that did.
	var wrapper *hostconfig.Change
	switch {
	case remove:
		wrapper, err = hostconfig.WrapperRemoval(scope)
	case strings.Contains(command, hostconfig.WrapperPath):
		wrapper, err = hostconfig.WrapperChange(scope, installed)
	}
	if err != nil {
		return cmdline.Usage(err)
	}
	if wrapper == nil {
		return nil
	}
	return a.applyChange(c, wrapper, "")
}

// installMCP puts the host's stdio MCP servers behind engine mcp-proxy
// (or, removing, starts them as they were) and says what it did with each.
func (a *app) installMCP(c *cli.Context, remove bool) error {
	if c.NArg() != 1 {
		return cmdline.Usage(fmt.Errorf("name one host: %s", strings.Join(hostconfig.MCPHosts(), ", ")))
	}
	dir, err := filepath.Abs(c.String("project"))
	if err != nil {
		return err
	}
	scope := hostconfig.Scope{Dir: dir, User: c.Bool("user")}
	if remove {
		change, restored, err := hostconfig.UnwrapMCP(c.Args().First(), scope)
		if err != nil {
			return cmdline.Usage(err)
		}
		for _, name := range restored {
			fmt.Fprintf(a.stdout, "%s: started as it was\n", name)
		}
		return a.applyChange(c, change, "")
	}
	exe := c.String("command")
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	var flags []string
	if m := c.String("manifest"); m != "" {
		abs, err := filepath.Abs(m)
		if err != nil {
			return err
		}
		flags = append(flags, "--manifest", abs)
	}
	if c.Bool("monitor") {
		flags = append(flags, "--mode", "monitor")
	}
	change, entries, err := hostconfig.WrapMCP(c.Args().First(), scope, exe, flags)
	if err != nil {
		return cmdline.Usage(err)
	}
	for _, e := range entries {
		switch {
		case e.Skipped != "":
			fmt.Fprintf(a.stdout, "%s: left as it is: %s\n", e.Name, e.Skipped)
		case e.Wrapped:
			fmt.Fprintf(a.stdout, "%s: behind engine mcp-proxy\n", e.Name)
		case e.Updated:
			fmt.Fprintf(a.stdout, "%s: behind engine mcp-proxy (updated)\n", e.Name)
		}
	}
	return a.applyChange(c, change, "")
}

// planHTTP plans an http install: every event but SessionStart goes to the
// local engine's HTTP hook listener with a new token of this install (and
// the configuration the hook would send), SessionStart stays a command hook,
// which starts the engine.
func (a *app) planHTTP(c *cli.Context, host string, scope hostconfig.Scope, startCommand string) (*hostconfig.Change, string, error) {
	if !scope.User {
		return nil, "", errors.New("--transport http writes a token into the host's settings: install it for the user (--user), not into a project's files")
	}
	if c.Bool("dry-run") {
		change, err := hostconfig.InstallHTTP(host, scope, hostconfig.HTTPHook{URL: "http://127.0.0.1:PORT" + hostconfig.HTTPHookPath(host),
			Headers: [][2]string{{"Authorization", "Bearer TOKEN"}}}, startCommand)
		return change, "", err
	}
	dir, err := cmdline.HookDataDir(c)
	if err != nil {
		return nil, "", err
	}
	token, listen, err := newHTTPHookToken(dir, c.String("tenant"))
	if err != nil {
		return nil, "", err
	}
	cfg := hookwire.Config{Tenant: c.String("tenant")}
	change, err := hostconfig.InstallHTTP(host, scope, hostconfig.HTTPHook{URL: "http://" + listen + hostconfig.HTTPHookPath(host),
		Headers: httpHeaders(token, cfg, c.Bool("monitor"))}, startCommand+" --tenant "+c.String("tenant"))
	return change, token, err
}

// applyChange prints a planned change as a diff (secret shown by its first
// characters only) and makes it, unless --dry-run.
func (a *app) applyChange(c *cli.Context, change *hostconfig.Change, secret string) error {
	diff := change.Diff()
	if secret != "" {
		diff = strings.ReplaceAll(diff, secret, secret[:6]+"…")
	}
	fmt.Fprint(a.stdout, diff)
	switch {
	case !change.Changed():
		fmt.Fprintf(a.stdout, "%s: no change\n", change.Path)
		return nil
	case c.Bool("dry-run"):
		fmt.Fprintf(a.stdout, "%s: dry run, nothing written\n", change.Path)
		return nil
	}
	if err := change.Apply(); err != nil {
		return fmt.Errorf("%s: %w", change.Path, err)
	}
	verb := "wrote"
	if change.After == nil {
		verb = "removed"
	}
	fmt.Fprintf(a.stdout, "%s %s\n", verb, change.Path)
	return nil
}

// hookCommandOf is the hook command an install writes: --command, or the
// default; with --monitor, in monitor mode. For a user's default install
// it is the user's wrapper, which runs installed.
func hookCommandOf(c *cli.Context, host string, remove bool) (command, installed string, err error) {
	command = c.String("command")
	if command == "" {
		if command, installed, err = defaultHookCommand(host, c.Bool("user")); err != nil {
			return "", "", err
		}
	}
	if c.Bool("monitor") && !remove {
		command += " --monitor"
	}
	return command, installed, nil
}

// httpHeaders are the headers of an HTTP install's hooks.
func httpHeaders(token string, cfg hookwire.Config, monitor bool) [][2]string {
	h := [][2]string{{"Authorization", "Bearer " + token}, {hookwire.HeaderConfig, cfg.Header()}}
	if monitor {
		h = append(h, [2]string{hookwire.HeaderMonitor, "1"})
	}
	return h
}

// defaultHookCommand is the hook install writes: in a project, the
// project's wrapper; for the user, the user's wrapper, which runs
// installed: agentledger-hook beside this engine program (this engine's own
// `hook` where there is none).
func defaultHookCommand(host string, user bool) (command, installed string, err error) {
	if !user {
		return hostconfig.ProjectCommand(host), "", nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", "", err
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return "", "", err
	}
	installed = hostconfig.ShellCommand(exe, "hook")
	if thin := filepath.Join(filepath.Dir(exe), hostconfig.ThinHook); hookwire.IsProgram(thin) {
		installed = hostconfig.ShellCommand(thin)
	}
	return hostconfig.UserCommand(home, host), installed, nil
}
