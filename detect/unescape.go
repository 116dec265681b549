package detect

import (
	"strconv"
	"strings"
	"unicode/utf16"
)

// UnescapeJSON undoes the JSON string escapes in raw JSON text, as a
// reader of the value would see it (a control escape becomes a space; a
// lone surrogate escape, or a malformed one, is left as it is).
func UnescapeJSON(s string) string {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		s = s[i:]
		n := 2 // what the escape takes
		switch c := byteAt(s, 1); c {
		case 'u':
			r, err := strconv.ParseUint(s[2:min(len(s), 6)], 16, 32)
			if len(s) < 6 || err != nil || utf16.IsSurrogate(rune(r)) {
				b.WriteString(s[:min(len(s), 2)])
				break
			}
			b.WriteRune(rune(r))
			n = 6
		case 'n', 'r', 't', 'b', 'f':
			b.WriteByte(' ')
		case '/', '"', '\\':
			b.WriteByte(c)
		default:
			b.WriteString(s[:min(len(s), 2)])
		}
		s = s[min(len(s), n):]
		i = strings.IndexByte(s, '\\')
	}
	b.WriteString(s)
	return b.String()
}

func byteAt(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}
