package reducer

import (
	"regexp"
	"strings"
	"unicode/utf8"
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

var (
	// noChange says outright that nothing is to change.
	noChange = regexp.MustCompile(`\b(change nothing|(do not|don't|dont|without) (change|modify|edit|touch|write)|no (changes|edits|modifications)|read[- ]only|(just|only) (read|explain|summari[sz]e|describe|review|look))\b`)
	// readVerb opens a request to read, explain or summarise.
	readVerb = regexp.MustCompile(`^(?:(?:please|hey|hi|ok|okay|now|so|can you|could you|would you|would you please|i want you to|i'd like you to)[ ,]+)*(summari[sz]e|explain|describe|review|read|show|list|what|why|how|where|which|who|tell me|look at|analy[sz]e|walk me through|find out|give me an overview)\b`)
	// changeVerb asks for a change somewhere in the request.
	changeVerb = regexp.MustCompile(`\b(fix|change|update|add|remove|delete|implement|write|create|refactor|rename|move|push|commit|deploy|install|upgrade|bump|build|format|generate|make|set ?up|migrate|edit|modify|patch|merge|release|publish|clean|apply|replace|convert|port|upload|send|post|open a pr|open a pull request)\b`)
)

// IntentOf reads a user request.
func IntentOf(request string) Intent {
	text := strings.ToLower(strings.TrimSpace(request))
	in := Intent{Request: clipText(strings.TrimSpace(request), maxIntentText)}
	switch {
	case noChange.MatchString(text):
		in.ReadOnly = true
	case readVerb.MatchString(text) && !changeVerb.MatchString(text):
		in.ReadOnly = true
	}
	return in
}

// clipText is s cut to at most n bytes at a rune boundary, marked when cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
