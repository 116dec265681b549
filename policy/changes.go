package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/manifest"
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
			if sub, args := action.GitSubcommand(c.Argv); gitChanges[sub] && !(sub == "branch" && !branchChanges(args)) {
				add("runs git %s", sub)
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

// conflicts are the rule conflicts of a call (ruleConflicts), subject by
// subject: a deny rule and an allow rule conflict only where both match
// the same command, path or URL; a subject a deny rule matches without an
// equally specific allow rule beside it denies the call, and then there is
// no conflict at all.
func (p *Policy) conflicts(a *action.Analysis, subjects []string, m manifest.Matches) []any {
	out := []any{}
	if len(m.Deny) == 0 || len(m.Allow) == 0 {
		return out
	}
	for _, s := range subjects {
		sm := p.rules.Match(a.Tool, a.ToolNative, []string{s}, []string{s})
		if len(sm.Deny) == 0 {
			continue
		}
		pairs := ruleConflicts(sm.Deny, sm.Allow)
		if len(pairs) == 0 {
			return []any{}
		}
		out = append(out, pairs...)
	}
	return out
}

// ruleConflicts are the deny rules that match a call together with an
// allow rule of the same tool and the same specificity (the pattern's
// literal characters): rules of one priority that disagree (AARM R3), as
// [deny, allow] pairs — but only when every matching deny rule has such a
// counterpart; a deny rule more specific than every matching allow rule
// simply denies. Rules that cannot be read are never in conflict.
func ruleConflicts(deny, allow []string) []any {
	out := []any{}
	for _, d := range deny {
		dr, err := manifest.ParseRule(d)
		if err != nil {
			return []any{}
		}
		found := false
		for _, a := range allow {
			ar, err := manifest.ParseRule(a)
			if err == nil && ar.Tool == dr.Tool && specificity(ar.Pattern) == specificity(dr.Pattern) {
				out = append(out, []string{d, a})
				found = true
				break
			}
		}
		if !found {
			return []any{}
		}
	}
	return out
}

// specificity is how much of a rule pattern is literal.
func specificity(pattern string) int {
	return len(strings.NewReplacer(":*", "", "*", "", "?", "").Replace(pattern))
}

// branchChanges reports whether git branch with args creates, deletes,
// renames or moves a branch (git branch, -a, -v, --list only list).
func branchChanges(args []string) bool {
	for _, a := range args {
		switch {
		case a == "-a" || a == "--all" || a == "-r" || a == "--remotes" || a == "-v" || a == "-vv" || a == "--list" || a == "-l" ||
			strings.HasPrefix(a, "--format") || strings.HasPrefix(a, "--sort") || a == "--show-current" || strings.HasPrefix(a, "--contains") ||
			strings.HasPrefix(a, "--merged") || strings.HasPrefix(a, "--no-merged") || a == "--no-color" || a == "--color":
		default:
			return true
		}
	}
	return false
}
