package manifest

import (
	"regexp"
	"strings"

	"github.com/agentledger/agentledger/aarts"
)

// RuleSet is a manifest's permission rules compiled for matching.
type RuleSet struct {
	kinds [3][]compiledRule // deny, allow, ask
}

type compiledRule struct {
	text  string
	tool  string
	glob  bool // tool is a glob over native names
	toolG *regexp.Regexp
	re    *regexp.Regexp
}

// Matches lists the rules of each kind that match an action.
type Matches struct {
	Deny  []string `json:"deny"`
	Allow []string `json:"allow"`
	Ask   []string `json:"ask"`
}

// Compile compiles m's rules. m MUST have been validated.
func (m *Manifest) Compile() *RuleSet {
	rs := &RuleSet{}
	for k, rules := range [3][]string{m.Rules.Deny, m.Rules.Allow, m.Rules.Ask} {
		for _, r := range rules {
			p, err := ParseRule(r)
			if err != nil {
				continue
			}
			c := compiledRule{text: p.Text, tool: p.Tool, re: regexp.MustCompile("^" + ruleRegexp(p, fileTools[p.Tool]) + "$")}
			if strings.ContainsAny(p.Tool, "*?") {
				c.glob = true
				c.toolG = regexp.MustCompile("^" + GlobRegexp(p.Tool, false) + "$")
			}
			rs.kinds[k] = append(rs.kinds[k], c)
		}
	}
	return rs
}

// ruleRegexp is a rule's pattern as a regular expression. For command
// rules, a trailing ":*" or " *" ends the prefix at a word: shell(git
// push --force:*) matches "git push --force" and "git push --force origin"
// but not "git push --force-with-lease", and shell(make *) matches "make"
// too.
func ruleRegexp(r Rule, paths bool) string {
	if !paths && r.Pattern != "" {
		for _, suffix := range []string{":*", " *"} {
			if prefix, ok := strings.CutSuffix(r.Pattern, suffix); ok && prefix != "" && !strings.HasSuffix(prefix, "*") {
				return GlobRegexp(prefix, false) + `(?:\s(?s:.*))?`
			}
		}
	}
	return GlobRegexp(r.Glob, paths)
}

// Match returns the rules that match a call of tool (canonical) / native
// (the host's name) on subjects: for file tools the paths, for every other
// tool the command lines, SQL, paths and URLs.
func (rs *RuleSet) Match(tool, native string, subjects, paths []string) Matches {
	var out [3][]string
	for k, rules := range rs.kinds {
		for _, r := range rules {
			if !(r.tool == tool || r.tool == native || r.glob && r.toolG.MatchString(native) || k != 1 && sameEffect(r.tool, tool)) {
				continue
			}
			on := subjects
			if fileTools[tool] {
				on = paths
			}
			if r.matchAny(on) {
				out[k] = append(out[k], r.text)
			}
		}
	}
	return Matches{Deny: nonNil(out[0]), Allow: nonNil(out[1]), Ask: nonNil(out[2])}
}

// Allows reports whether an allow rule matches a call of tool / native on
// one subject (a path for file tools, else a command line or URL), without
// collecting the rules.
func (rs *RuleSet) Allows(tool, native, subject string) bool {
	for _, r := range rs.kinds[1] {
		if (r.tool == tool || r.tool == native || r.glob && r.toolG.MatchString(native)) && (r.re.MatchString("") || r.re.MatchString(subject)) {
			return true
		}
	}
	return false
}

func (r compiledRule) matchAny(subjects []string) bool {
	if r.re.MatchString("") {
		return true // an empty pattern or ** matches any call
	}
	for _, s := range subjects {
		if r.re.MatchString(s) {
			return true
		}
	}
	return false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// sameEffect reports whether a deny or ask rule about tool ruled also
// covers a call of tool: a write and an edit (a multi-edit, a patch) of a
// file are one effect, whichever tool name a host gives it. Allow rules do
// not widen so: an allow means exactly what it names.
func sameEffect(ruled, tool string) bool {
	return (ruled == aarts.ToolFileWrite || ruled == aarts.ToolFileEdit) && (tool == aarts.ToolFileWrite || tool == aarts.ToolFileEdit)
}
