package canon

import "errors"

// Member is one member of a canonical JSON object: its key as written
// (without the quotes, escapes kept) and its value's bytes.
type Member struct {
	Key   []byte
	Value []byte
}

// ErrNotCanonicalObject is returned by Members for bytes that are not an
// object in the form this package writes.
var ErrNotCanonicalObject = errors.New("not a canonical JSON object")

// Members splits a canonical JSON object, as AppendCanonical writes it (no
// whitespace between tokens), into its top-level members in order, without
// decoding a value. The values alias b. Bytes of another form — whitespace,
// a truncated value, something after the object — are refused with
// ErrNotCanonicalObject; Members does not check that b is valid JSON
// beyond what it needs to find the members' bounds, so a caller compares
// the members with canonical bytes it trusts, or decodes b as well.
func Members(b []byte) ([]Member, error) { return AppendMembers(nil, b) }

// AppendMembers is Members appending to dst, for a caller that keeps a
// buffer between calls (or one on its stack): it allocates nothing while
// dst has room.
func AppendMembers(dst []Member, b []byte) ([]Member, error) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, ErrNotCanonicalObject
	}
	out := dst
	i := 1
	if b[i] == '}' {
		if i+1 != len(b) {
			return nil, ErrNotCanonicalObject
		}
		return out, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, ErrNotCanonicalObject
		}
		end := skipString(b, i)
		if end < 0 || end >= len(b) || b[end] != ':' {
			return nil, ErrNotCanonicalObject
		}
		key := b[i+1 : end-1]
		v := end + 1
		next := skipValue(b, v)
		if next < 0 || next >= len(b) {
			return nil, ErrNotCanonicalObject
		}
		out = append(out, Member{Key: key, Value: b[v:next]})
		switch b[next] {
		case ',':
			i = next + 1
		case '}':
			if next+1 != len(b) {
				return nil, ErrNotCanonicalObject
			}
			return out, nil
		default:
			return nil, ErrNotCanonicalObject
		}
	}
}

// skipString returns the index after the string that starts at b[i] (a
// quote), or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the value that starts at b[i], or -1.
// Objects and arrays are skipped by counting brackets outside strings.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if j = skipString(b, j); j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	// A number, true, false or null: up to the next delimiter.
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		if b[j] == ' ' || b[j] == '\n' || b[j] == '\t' || b[j] == '\r' || b[j] == '"' || b[j] == '{' || b[j] == '[' || b[j] == ':' {
			return -1
		}
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// NestingDepth is how deep the objects and arrays of the JSON text b nest
// (a scalar is 0, {} is 1), read without parsing: brackets are counted
// outside strings. For text that is not JSON it is a bound, not a check.
func NestingDepth(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			if j := skipString(b, i); j > 0 {
				i = j - 1
			} else {
				return deepest
			}
		case '{', '[':
			if depth++; depth > deepest {
				deepest = depth
			}
		case '}', ']':
			depth--
		}
	}
	return deepest
}
