package manifest

// MatchGlob reports whether s matches the glob pattern. ** matches any run
// of characters; * matches any run without '/' when paths is set (one path
// segment), any run otherwise; ? matches one character. It agrees with the
// policy's glob.match(pattern, ["/"], s) for paths and glob.match(pattern,
// [], s) otherwise.
func MatchGlob(pattern, s string, paths bool) bool {
	return match(pattern, s, paths)
}

func match(p, s string, paths bool) bool {
	for len(p) > 0 {
		switch {
		case len(p) >= 2 && p[0] == '*' && p[1] == '*':
			rest := p[2:]
			for i := 0; i <= len(s); i++ {
				if match(rest, s[i:], paths) {
					return true
				}
			}
			return false
		case p[0] == '*':
			rest := p[1:]
			for i := 0; i <= len(s); i++ {
				if match(rest, s[i:], paths) {
					return true
				}
				if i < len(s) && paths && s[i] == '/' {
					return false
				}
			}
			return false
		case p[0] == '?':
			if len(s) == 0 || paths && s[0] == '/' {
				return false
			}
			p, s = p[1:], s[1:]
		default:
			if len(s) == 0 || p[0] != s[0] {
				return false
			}
			p, s = p[1:], s[1:]
		}
	}
	return len(s) == 0
}
