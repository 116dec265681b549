package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/action"
)

// gitChanges are the git subcommands that change the repository, its
// remote or the working tree.
var gitChanges = map[string]bool{
	"push": true, "commit": true, "tag": true, "reset": true, "merge": true, "rebase": true, "checkout": true, "switch": true,
	"restore": true, "stash": true, "clean": true, "apply": true, "am": true, "cherry-pick": true, "revert": true, "rm": true,
	"mv": true, "add": true, "branch": true, "pull": true, "fetch": false,
}

// changesOf says what an action changes beyond reading — the files it
// writes or removes, the repository operations, the packages it installs,
// the data it sends — one phrase each, for the rule that a request to only
// read, explain or summarise is not followed by changes (AARM R3).
func changesOf(a *action.Analysis) []string {
	out := []string{}
	add := func(format string, args ...any) {
		if s := fmt.Sprintf(format, args...); !slices.Contains(out, s) && len(out) < 8 {
			out = append(out, s)
		}
	}
	for _, p := range a.WritePaths {
		if !action.StreamDevice(p) {
			add("writes %s", p)
		}
	}
	for _, c := range a.Commands {
		switch {
		case c.Binary == "git":
			for _, arg := range c.Argv[1:] {
				if !strings.HasPrefix(arg, "-") {
					if gitChanges[arg] {
						add("runs git %s", arg)
					}
					break
				}
			}
		case destructive(c):
			add("runs %s", c.Binary)
		}
	}
	if len(a.Packages) > 0 {
		add("installs %s", a.Packages[0].Name)
	}
	if len(a.Sends) > 0 {
		add("sends data (%s)", a.Sends[0])
	}
	return out
}
