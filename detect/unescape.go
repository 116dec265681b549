package detect

import (
	"regexp"
	"strconv"
	"unicode/utf16"
)

// jsonEscape is one JSON string escape that can hide a character from a
// detector.
var jsonEscape = regexp.MustCompile(`\\(u[0-9a-fA-F]{4}|[/"\\bfnrt])`)

// UnescapeJSON undoes the JSON string escapes in raw JSON text, as a
// reader of the value would see it (a control escape becomes a space; a
// lone surrogate escape is left as it is).
func UnescapeJSON(s string) string {
	return jsonEscape.ReplaceAllStringFunc(s, func(m string) string {
		switch c := m[1]; c {
		case 'u':
			n, err := strconv.ParseUint(m[2:], 16, 32)
			if err != nil || utf16.IsSurrogate(rune(n)) {
				return m
			}
			return string(rune(n))
		case 'n', 'r', 't', 'b', 'f':
			return " "
		default:
			return string(c)
		}
	})
}
