package policy

import (
	"slices"
	"strings"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/action"
)

// Explicit allows. An explicit allow is the one answer that switches a
// host's own permission prompt off, so it must mean what it says: the
// whole action is covered by what the user allowed, part by part.
//
//   - A shell call is covered when every simple command it runs — across
//     lists, pipelines, substitutions, here-documents, the code of inline
//     interpreters, what find -exec, xargs, git options and make's rules
//     run — is matched by an allow rule of the manifest (or was allowed
//     with allow_always earlier in the session). Harmless builtins (cd,
//     echo, printf, test, true, false, pwd, :) need no rule unless they
//     write a file (echo x > f).
//   - A file call is covered when every path it names is.
//   - Any other call is covered when a rule matches one of its subjects.
//
// Nothing with a caveat (action.Analysis.Caveats: a script whose code is
// not read, code on a pipe, a program named by configuration or by a
// variable, install scripts, a write to a file other programs run or a
// host loads as instructions) is ever explicitly allowed, nor a call that
// runs a file the session wrote. Findings beat allow rules too: any signal
// makes the decision something else than a plain allow.

// harmless are builtins that run nothing else and need no allow rule.
var harmless = map[string]bool{"cd": true, "pwd": true, "echo": true, "printf": true, "true": true, "false": true, ":": true, "test": true, "[": true, "[[": true}

// coverage is what the manifest's allow rules and the session's
// allow_always resolutions say of an action.
type coverage struct {
	// explicit is RULE_ALLOW or ALLOW_ALWAYS when the whole action is
	// covered (ALLOW_ALWAYS when a remembered resolution covers part of
	// it), else "".
	explicit string
	// byRule is true when allow rules alone cover the whole action.
	byRule bool
	// binaries are the binaries every command of which a rule allows.
	binaries map[string]bool
	// why says, when nothing explicit covers the action, what stands in
	// the way (for tests and reasons).
	why string
}

// cover says how far the manifest's allow rules and the remembered
// allow_always artifacts cover a.
func (p *Policy) cover(a *action.Analysis, snapshot map[string]any) coverage {
	cv := coverage{binaries: map[string]bool{}}
	remembered, _ := snapshot["allowed_artifacts"].([]string)
	allowedBy := func(subject string) (rule, artifact bool) {
		return p.rules.Allows(a.Tool, a.ToolNative, subject), slices.Contains(remembered, subject) || slices.Contains(remembered, a.ToolNative)
	}
	byRule, byArtifact, all := true, false, true
	note := func(rule, artifact bool, what string) {
		switch {
		case rule:
		case artifact:
			byRule, byArtifact = false, true
		default:
			byRule, all = false, false
			if cv.why == "" {
				cv.why = what + " is not allowed by a rule"
			}
		}
	}
	switch {
	case a.Tool == aarts.ToolShell || a.Tool == aarts.ToolPackageInstall || a.Tool == aarts.ToolCodeExec && len(a.Commands) > 0:
		uncovered := map[string]bool{}
		n := 0
		for _, c := range a.Commands {
			if harmless[c.Binary] && len(c.Via) == 0 && len(c.Redirects) == 0 {
				continue // a builtin that writes a file (echo x > f) needs a rule like any other
			}
			n++
			line := strings.Join(c.Argv, " ")
			rule, artifact := allowedBy(line)
			if rl := action.RuleLine(c); rl != line {
				// An option narrows, never widens: the command without
				// its program's global options must be allowed too.
				r2, a2 := allowedBy(rl)
				rule, artifact = rule && r2, artifact && a2
			}
			note(rule, artifact, line)
			if !rule {
				uncovered[c.Binary] = true
			}
		}
		for _, c := range a.Commands {
			if !uncovered[c.Binary] {
				cv.binaries[c.Binary] = true
			}
		}
		if n == 0 {
			all, byRule = false, false // nothing but builtins: nothing was allowed
		}
	case isFileTool(a.Tool):
		if len(a.Paths) == 0 {
			all, byRule = false, false
		}
		for _, path := range a.Paths {
			rule, artifact := allowedBy(path)
			note(rule, artifact, path)
		}
	default:
		subjects := slices.Concat(a.SQL, a.Paths, a.URLs)
		rule := len(p.rules.Match(a.Tool, a.ToolNative, subjects, a.Paths).Allow) > 0
		artifact := slices.Contains(remembered, a.ToolNative) || len(a.Hosts) > 0 && !slices.ContainsFunc(a.Hosts, func(h string) bool { return !slices.Contains(remembered, h) })
		note(rule, artifact, a.ToolNative)
	}
	if !all {
		return cv
	}
	if len(a.Caveats) > 0 {
		cv.why = a.Caveats[0]
		return cv
	}
	// A rule allows what a call runs, not where it goes: a host the
	// manifest does not list (git push https://elsewhere/...) keeps the call
	// with the host's own permission flow.
	if h := p.unlistedHost(a); h != "" && byRule {
		cv.why = h + " is not among the manifest's network domains"
		return cv
	}
	if runs := runsWritten(a, snapshot); runs != "" {
		cv.why = "runs " + runs + ", which this session wrote"
		return cv
	}
	cv.byRule = byRule
	switch {
	case byRule:
		cv.explicit = "RULE_ALLOW"
	case byArtifact:
		cv.explicit = "ALLOW_ALWAYS"
	}
	return cv
}

// unlistedHost returns a host the action reaches that the manifest's
// network domains do not list (loopback is no egress), or "".
func (p *Policy) unlistedHost(a *action.Analysis) string {
	for _, h := range a.Hosts {
		if !listedHost(p.domains, h) {
			return h
		}
	}
	return ""
}

// runsWritten returns a file the action runs that the session wrote
// earlier (snapshot "written"; "*" when the session wrote more than the
// snapshot keeps), or "".
func runsWritten(a *action.Analysis, snapshot map[string]any) string {
	written, _ := snapshot["written"].([]string)
	if len(written) == 0 {
		return ""
	}
	for _, x := range a.Executes {
		// A file the session wrote, or one inside a directory it runs
		// (go run ./cmd/x after an edit of cmd/x/main.go).
		if slices.Equal(written, []string{"*"}) || slices.ContainsFunc(written, func(w string) bool {
			return w == x || strings.HasPrefix(w, x+"/") || strings.HasPrefix(x, "**/*") && strings.HasSuffix(w, strings.TrimPrefix(x, "**/*"))
		}) {
			return x
		}
	}
	return ""
}

func isFileTool(t string) bool {
	return t == aarts.ToolFileRead || t == aarts.ToolFileWrite || t == aarts.ToolFileEdit || t == aarts.ToolFileDelete
}
