package canon

import (
	"encoding/json"
	"unicode/utf8"
)

// DecodeCanonical decodes b, a JSON value in the form AppendCanonical
// writes, into what encoding/json's Decoder with UseNumber gives:
// map[string]any, []any, string, json.Number, bool and nil. It is that
// decoder's result for canonical input, read in one pass without its
// reflection; ok is false, and nothing is decoded, for anything it does not
// read whole — whitespace, escapes RFC 8785 does not write, invalid UTF-8,
// a repeated key, bytes after the value, nesting deeper than maxDepth —
// and the caller decodes b the general way.
func DecodeCanonical(b []byte, maxDepth int) (v any, ok bool) {
	d := fastDecoder{in: b, depth: maxDepth}
	v, ok = d.value()
	return v, ok && d.pos == len(b)
}

type fastDecoder struct {
	in    []byte
	pos   int
	depth int
}

func (d *fastDecoder) value() (any, bool) {
	if d.pos >= len(d.in) {
		return nil, false
	}
	switch c := d.in[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.word("true")
	case c == 'f':
		return false, d.word("false")
	case c == 'n':
		return nil, d.word("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, false
}

func (d *fastDecoder) word(w string) bool {
	if len(d.in)-d.pos < len(w) || string(d.in[d.pos:d.pos+len(w)]) != w {
		return false
	}
	d.pos += len(w)
	return true
}

func (d *fastDecoder) object() (any, bool) {
	if d.depth--; d.depth < 0 {
		return nil, false
	}
	defer func() { d.depth++ }()
	d.pos++
	m := map[string]any{}
	if d.pos < len(d.in) && d.in[d.pos] == '}' {
		d.pos++
		return m, true
	}
	for {
		if d.pos >= len(d.in) || d.in[d.pos] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok || d.pos >= len(d.in) || d.in[d.pos] != ':' {
			return nil, false
		}
		key := k.(string)
		if _, dup := m[key]; dup {
			return nil, false
		}
		d.pos++
		v, ok := d.value()
		if !ok || d.pos >= len(d.in) {
			return nil, false
		}
		m[key] = v
		switch d.in[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *fastDecoder) array() (any, bool) {
	if d.depth--; d.depth < 0 {
		return nil, false
	}
	defer func() { d.depth++ }()
	d.pos++
	a := []any{}
	if d.pos < len(d.in) && d.in[d.pos] == ']' {
		d.pos++
		return a, true
	}
	for {
		v, ok := d.value()
		if !ok || d.pos >= len(d.in) {
			return nil, false
		}
		a = append(a, v)
		switch d.in[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return a, true
		default:
			return nil, false
		}
	}
}

// str reads a string with no escapes but those RFC 8785 writes: \" \\ and
// the short and \u00XX forms of control characters.
func (d *fastDecoder) str() (any, bool) {
	d.pos++
	start := d.pos
	in := d.in
	for d.pos < len(in) {
		c := in[d.pos]
		switch {
		case c == '"':
			s := string(in[start:d.pos])
			d.pos++
			return s, true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return nil, false
		case c < 0x80:
			d.pos++
		default:
			r, size := utf8.DecodeRune(in[d.pos:])
			if r == utf8.RuneError && size <= 1 {
				return nil, false
			}
			d.pos += size
		}
	}
	return nil, false
}

// escaped finishes a string that starts at start and has an escape at
// d.pos.
func (d *fastDecoder) escaped(start int) (any, bool) {
	in := d.in
	buf := append([]byte(nil), in[start:d.pos]...)
	for d.pos < len(in) {
		c := in[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(buf), true
		case c == '\\':
			if d.pos+1 >= len(in) {
				return nil, false
			}
			switch e := in[d.pos+1]; e {
			case '"', '\\':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(in, d.pos+2)
				if !ok || r >= 0x20 {
					return nil, false // RFC 8785 writes \u only for control characters
				}
				buf = append(buf, byte(r))
				d.pos += 4
			default:
				return nil, false
			}
			d.pos += 2
		case c < 0x20:
			return nil, false
		case c < 0x80:
			buf = append(buf, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(in[d.pos:])
			if r == utf8.RuneError && size <= 1 {
				return nil, false
			}
			buf = append(buf, in[d.pos:d.pos+size]...)
			d.pos += size
		}
	}
	return nil, false
}

// number reads a number's literal as json.Number, as UseNumber keeps it.
func (d *fastDecoder) number() (any, bool) {
	start := d.pos
	end, _, _, bad := scanNumber(d.in, start)
	if bad != "" {
		return nil, false
	}
	d.pos = end
	return json.Number(d.in[start:end]), true
}
