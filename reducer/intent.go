package reducer

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agentledger/agentledger/detect"
)

// Intent is what the user's latest request asks of the agent, as far as a
// plain reading tells (AARM R3, intent alignment): whether it asks only to
// read, explain or summarise, and the request itself (its first
// maxIntentText bytes), which a reason quotes.
type Intent struct {
	ReadOnly bool   `json:"read_only"`
	Request  string `json:"request"`
}

// maxIntentText bounds Intent.Request.
const maxIntentText = 240

// clipStraddle is how far past a cut clipText looks for a value the cut
// would split.
const clipStraddle = 4 << 10

var (
	// noChange says outright that nothing at all is to change — not a
	// scoped "don't modify the tests", which goes with a change elsewhere.
	noChange = regexp.MustCompile(`\b(change nothing|make no changes|(do not|don't|dont|without) (change|changing|modify|modifying|edit|editing|touch|touching) anything|(do not|don't|dont) make any changes|no changes( at all)?([.!,;]|$| please)|(just|only) (read|explain|summari[sz]e|describe|look)\b)`)
	// readVerb opens a request to read, explain or summarise.
	readVerb = regexp.MustCompile(`^(?:(?:please|hey|hi|ok|okay|now|so|can you|could you|would you|would you please|i want you to|i'd like you to)[ ,]+)*(summari[sz]e|explain|describe|review|read|show|list|what|why|how|where|which|who|tell me|look at|analy[sz]e|walk me through|find out|give me an overview)\b`)
	// changeVerb asks for a change somewhere in the request.
	changeVerb = regexp.MustCompile(`\b(fix|change|update|add|remove|delete|implement|write|create|refactor|rename|move|push|commit|deploy|install|upgrade|bump|build|format|generate|make|set ?up|migrate|edit|modify|patch|merge|release|publish|clean|apply|replace|convert|port|upload|send|post|address|resolve|handle|tackle|sort (it|this|that|them) out|improve|optimi[sz]e|speed (it|this|that)? ?up|rewrite|adjust|tweak|correct|repair|finish|complete|ship|land|do it|go ahead|proceed|open a pr|open a pull request|leave|comment|reply|approve|request changes|run|try|check out|reproduce|debug|verify|rebase|benchmark|profile|bisect)\b`)
	// reviewsWork asks to review a pull or merge request or a branch,
	// which takes fetching it, checking it out and running it.
	reviewsWork = regexp.MustCompile(`\breview(?:ing)?\s+(?:the\s+|this\s+|that\s+|my\s+|our\s+)?(?:pr|pull request|mr|merge request|branch)\b|\breview\s+#\d+`)
)

// IntentOf reads a user request.
func IntentOf(request string) Intent {
	text := strings.ToLower(strings.TrimSpace(request))
	in := Intent{Request: clipText(strings.TrimSpace(request), maxIntentText)}
	rest := noChange.ReplaceAllString(text, " ")
	switch {
	case changeVerb.MatchString(rest), reviewsWork.MatchString(rest):
		// A change is asked for somewhere: never read-only.
	case rest != text, readVerb.MatchString(text):
		in.ReadOnly = true
	}
	return in
}

// clipText is s cut to at most n bytes at a rune boundary, marked when cut:
// before a secret or piece of personal data the cut would split, since a
// part of one is something no detector recognizes, to redact where the
// request is shown.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for _, sp := range detect.Spans(s[:min(len(s), n+clipStraddle)]) {
		if sp.Start < n && n < sp.End {
			n = sp.Start
			break
		}
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
