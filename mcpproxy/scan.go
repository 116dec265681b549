package mcpproxy

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool's description and schemas are read by the model: the text a
// poisoned server uses to steer it. findings flags, in what a tool
// declares:
//   - hidden_unicode: characters a person does not see (zero-width, bidi
//     controls, Unicode tag characters) that a model still reads;
//   - instruction: words addressed to the model (ignore previous
//     instructions, do not tell the user, <IMPORTANT>, before using this
//     tool read …);
//   - exfiltration: asking for credentials or secrets, or to send data
//     somewhere.
//
// each with the words that raised it (for a hidden character, its code
// point). Flags are recorded with the tool (PreMCPConnect's tool_flags and
// tool_flag_words) for whoever approves the server and reviews the record;
// they decide nothing by themselves.
func findings(t *mcp.Tool) map[string][]string {
	text := t.Description + " " + t.Title
	for _, s := range []any{t.InputSchema, t.OutputSchema} {
		if s != nil {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false) // <IMPORTANT> stays as written
			_ = enc.Encode(s)
			text += " " + b.String()
		}
	}
	// maxWords bounds the words kept for one flag.
	const maxWords = 5
	out := map[string][]string{}
	keep := func(flag, word string) {
		if !slices.Contains(out[flag], word) && len(out[flag]) < maxWords {
			out[flag] = append(out[flag], word)
		}
	}
	for _, r := range text {
		if hidden(r) {
			keep("hidden_unicode", fmt.Sprintf("U+%04X", r))
		}
	}
	for _, m := range instruction.FindAllString(text, maxWords) {
		keep("instruction", m)
	}
	for _, m := range exfiltration.FindAllString(text, maxWords) {
		keep("exfiltration", m)
	}
	return out
}

// hidden reports characters that render as nothing.
func hidden(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x2069, r == 0xFEFF, r == 0x00AD:
		return true
	case r >= 0xE0000 && r <= 0xE007F: // tag characters
		return true
	}
	return false
}

var (
	instruction = regexp.MustCompile(`(?i)\b(ignore|disregard|forget)\s+(all\s+|any\s+)?(previous|prior|above|other)\s+(instructions|rules|prompts?)` +
		`|\b(do\s+not|don'?t|never)\s+(tell|mention|inform|reveal\s+to|show)\s+(the\s+)?user` +
		`|<\s*(important|system|instructions?)\s*>` +
		`|\bbefore\s+(using|calling)\s+this\s+tool\b` +
		`|\byou\s+(must|should)\s+(always\s+)?(first\s+)?(call|read|run|send|include)\b` +
		`|\bsystem\s+prompt\b`)
	exfiltration = regexp.MustCompile(`(?i)\b(send|upload|post|forward|transmit|exfiltrat\w*|copy)\b[^.]{0,60}\b(to|at)\s+(this|the\s+following|an?)?\s*(address|url|endpoint|server|e-?mail|webhook)` +
		`|(~/\.ssh|\bid_rsa\b|\bid_ed25519\b|\.aws/credentials|\.env\b|\bprivate\s+key\b)` +
		`|\b(password|api[\s_-]?key|access[\s_-]?token|secret)s?\b[^.]{0,40}\b(include|pass|add|append|provide|send)\b`)
)

// withFlags adds the tools' flags to a PreMCPConnect's members, when any
// (tool_flags), and the words that raised each (tool_flag_words).
func withFlags(members map[string]any, tools []*mcp.Tool) map[string]any {
	flags, words := map[string]any{}, map[string]any{}
	for _, t := range tools {
		found := findings(t)
		if len(found) == 0 {
			continue
		}
		names := slices.Sorted(maps.Keys(found))
		flags[t.Name], words[t.Name] = names, found
	}
	if len(flags) > 0 {
		members["tool_flags"], members["tool_flag_words"] = flags, words
	}
	return members
}
