package hostconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// hookFilesSpec is how a host that runs one file per event, named after
// it, takes agentledger (Cline): a small script of agentledger's alone per
// event, in a directory the host runs every such file of.
type hookFilesSpec struct {
	dir    func(s Scope) (string, error)
	events []string
}

var hookFilesSpecs = map[string]*hookFilesSpec{
	// Cline: <git root>/.clinerules/hooks/, or ~/.cline/hooks/.
	"cline": {dir: dirFile(".clinerules/hooks", ".cline/hooks"),
		events: []string{"TaskStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "TaskComplete", "TaskError", "TaskCancel", "SessionShutdown"}},
}

// hookFileMark opens every hook file agentledger writes; hookFileCommand
// holds the command it runs.
const (
	hookFileMark    = "# agentledger's hook for "
	hookFileCommand = "# agentledger-command: "
)

// HookFile is agentledger's hook file for host's event, running command.
// The host reads only what a hook prints (its exit code means nothing to
// it) and runs the call when it can read nothing: where the command gives
// no answer — agentledger missing, failing — the file prints the host's
// cancel itself.
func HookFile(host, event, command string) string {
	v := projectDirVar[host]
	return "#!/bin/sh\n" + hookFileMark + host + "'s " + event + ` event, written by "engine install ` + host + `".
# Commit it with the project. The host runs it for every ` + event + ` and reads
# only what it prints: one that fails or prints nothing lets the call run,
# so where agentledger's hook command gives no answer, this prints the
# host's cancel (the call does not run, and the run ends) instead.
` + hookFileCommand + command + `
` + v + `=$(CDPATH= cd -- "$(dirname -- "$0")/../.." && pwd) && export ` + v + `
out=$(` + command + `) && [ -n "$out" ] && { printf '%s\n' "$out"; exit 0; }
printf '%s\n' '{"cancel":true,"errorMessage":"agentledger: no answer from its hook; this call is stopped"}'
`
}

// hookFileCommandOf is the command of a hook file agentledger wrote ("" when
// data is not one).
func hookFileCommandOf(data []byte) string {
	if !strings.HasPrefix(string(data), "#!/bin/sh\n"+hookFileMark) {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if cmd, ok := strings.CutPrefix(line, hookFileCommand); ok {
			return cmd
		}
	}
	return ""
}

// loadHookFiles plans a change per event's file, Before what is there; it
// refuses a file of that name agentledger did not write.
func loadHookFiles(host string, sp *hookFilesSpec, scope Scope) ([]*Change, []string, error) {
	if !scope.User && scope.Dir == "" {
		return nil, nil, errors.New("no project directory")
	}
	dir, err := sp.dir(scope)
	if err != nil {
		return nil, nil, err
	}
	root := filepath.Clean(scope.Dir)
	if scope.User {
		root, _ = scope.home()
	}
	var changes []*Change
	var commands []string
	for _, ev := range sp.events {
		c := &Change{Path: filepath.Join(dir, ev), root: root, Mode: 0o755}
		data, err := os.ReadFile(c.Path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, nil, err
		default:
			c.Before, c.Existed, c.After = data, true, data
			if hookFileCommandOf(data) == "" {
				return nil, nil, fmt.Errorf("%s: not a hook file agentledger wrote; nothing was changed", c.Path)
			}
		}
		changes = append(changes, c)
		commands = append(commands, hookFileCommandOf(data))
	}
	return changes, commands, nil
}

// linked is changes as one Change: the first, the others in its More.
func linked(changes []*Change) *Change {
	first := changes[0]
	first.More = changes[1:]
	return first
}

func installHookFiles(host string, sp *hookFilesSpec, scope Scope, command string) (*Change, error) {
	changes, _, err := loadHookFiles(host, sp, scope)
	if err != nil {
		return nil, err
	}
	for i, c := range changes {
		c.After = []byte(HookFile(host, sp.events[i], command))
	}
	return linked(changes), nil
}

func uninstallHookFiles(host string, sp *hookFilesSpec, scope Scope) (*Change, error) {
	changes, commands, err := loadHookFiles(host, sp, scope)
	if err != nil {
		return nil, err
	}
	for i, c := range changes {
		if commands[i] != "" {
			c.After = nil
		}
	}
	return linked(changes), nil
}

func inspectHookFiles(host string, sp *hookFilesSpec, scope Scope) (Installed, error) {
	changes, commands, err := loadHookFiles(host, sp, scope)
	if err != nil {
		return Installed{}, err
	}
	in := Installed{Path: filepath.Dir(changes[0].Path), Commands: map[string][]string{}}
	for i, ev := range sp.events {
		if commands[i] != "" {
			in.Exists = true
			in.Commands[ev] = []string{commands[i]}
		}
	}
	return in, nil
}
