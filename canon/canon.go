// Package canon validates JSON as I-JSON (RFC 7493) and writes its RFC 8785
// (JCS) canonical form in one pass, with errors that name the JSON path and
// byte offset of what is wrong. It is pure: no I/O, no clock.
package canon

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// Limits bound what the decoder accepts. The zero value of a field means its
// default.
type Limits struct {
	// MaxDepth is the deepest nesting of objects and arrays accepted,
	// counting the outermost value as depth 1. Default 64.
	MaxDepth int
	// MaxBytes is the largest input (one line, one envelope) accepted.
	// Default 1 MiB.
	MaxBytes int
}

// Default limits.
const (
	DefaultMaxDepth = 64
	DefaultMaxBytes = 1 << 20
)

// Depth is the nesting limit in force: MaxDepth, or DefaultMaxDepth.
func (l Limits) Depth() int {
	if l.MaxDepth <= 0 {
		return DefaultMaxDepth
	}
	return l.MaxDepth
}

// Bytes is the size limit in force: MaxBytes, or DefaultMaxBytes.
func (l Limits) Bytes() int {
	if l.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return l.MaxBytes
}

// MaxSafeInteger is 2^53-1, the largest integer every float64 consumer
// holds exactly (RFC 7493 §2.2).
const MaxSafeInteger = 1<<53 - 1

// ErrInvalidInput is the parent of every input rejection: malformed JSON,
// JSON that I-JSON (RFC 7493) forbids, or a well-formed document that is not
// a valid event or envelope.
var ErrInvalidInput = errors.New("invalid input")

// InputError says what is wrong with an input and where: the input line (when
// the caller knows it), the JSON path of the offending value and the byte
// offset within the line. It unwraps to ErrInvalidInput.
type InputError struct {
	Line   int    // 1-based input line, 0 when not known
	Path   string // JSON path such as $.payload.items[2], "" when not known
	Offset int    // byte offset within the line, -1 when not known
	Msg    string // what is wrong
}

func (e *InputError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " (byte %d)", e.Offset)
	}
	return b.String()
}

// Unwrap returns ErrInvalidInput.
func (e *InputError) Unwrap() error { return ErrInvalidInput }

// AtLine returns err with its line set when err is an *InputError without
// one; any other error is returned unchanged.
func AtLine(err error, line int) error {
	var ie *InputError
	if errors.As(err, &ie) && ie.Line == 0 {
		c := *ie
		c.Line = line
		return &c
	}
	return err
}

// Canonicalize validates data as I-JSON (RFC 7493) and returns its RFC 8785
// canonical form. It rejects invalid UTF-8, lone surrogates, duplicate keys
// at any depth, integer literals a float64 cannot hold exactly (such as
// 12345678901234567890: beyond ±(2^53-1), most integers), numbers outside the
// float64 range, nesting deeper than lim.MaxDepth and input longer than
// lim.MaxBytes, each with an *InputError naming the JSON path.
//
// The output is byte-identical to github.com/gowebpki/jcs.Transform on every
// input this function accepts; the package tests and fuzz targets hold it to
// that.
func Canonicalize(data []byte, lim Limits) ([]byte, error) {
	return AppendCanonical(nil, data, lim)
}

// AppendCanonical is Canonicalize appending to dst.
func AppendCanonical(dst, data []byte, lim Limits) ([]byte, error) {
	if len(data) > lim.Bytes() {
		return dst, &InputError{Offset: -1, Msg: fmt.Sprintf("input is %d bytes, over the %d-byte limit", len(data), lim.Bytes())}
	}
	if cap(dst)-len(dst) < len(data) {
		// The canonical form of canonical input is as long as it; other
		// input rarely grows (a number such as 1E2): one allocation.
		dst = slices.Grow(dst, len(data))
	}
	st := stacksPool.Get().(*stacks)
	defer st.put()
	p := parser{in: data, out: dst, maxDepth: lim.Depth(), path: st.path[:0], members: st.members[:0], scratch: st.scratch[:0]}
	defer st.keep(&p)
	base := len(dst)
	p.skipSpace()
	if err := p.value(); err != nil {
		return dst, err
	}
	p.skipSpace()
	if p.pos < len(p.in) {
		return dst, p.fail(fmt.Sprintf("unexpected %s after the end of the JSON value", p.describe()))
	}
	if len(p.out) == base {
		return dst, p.fail("empty input")
	}
	return p.out, nil
}

// CheckFoldedKeys validates data as I-JSON under lim and rejects object
// members whose keys differ only by case folding ("decision" and
// "deciſion"), at any depth: such a document reads one way to a reader that
// matches keys exactly (jq, Python) and another way to one that folds case
// (Go's encoding/json).
func CheckFoldedKeys(data []byte, lim Limits) error {
	st := stacksPool.Get().(*stacks)
	defer st.put()
	// The serialized text is not wanted: it goes to a buffer kept with
	// the stacks.
	p := parser{in: data, out: st.out[:0], maxDepth: lim.Depth(), foldCheck: true, path: st.path[:0], members: st.members[:0], scratch: st.scratch[:0]}
	defer func() {
		st.keep(&p)
		clear(p.out[:cap(p.out)])
		st.out = p.out[:0]
	}()
	return p.value()
}

// stacks are a parser's working stacks, kept between calls (stacksPool):
// canonicalizing allocates its output and nothing else.
type stacks struct {
	path    []pathSeg
	members []member
	scratch []byte
	out     []byte // CheckFoldedKeys's discarded output
}

var stacksPool = sync.Pool{New: func() any { return new(stacks) }}

// keep takes p's stacks back, grown as they may have been, holding no
// reference to p's input or output and none of its bytes.
func (st *stacks) keep(p *parser) {
	clear(p.path[:cap(p.path)])
	clear(p.members[:cap(p.members)])
	clear(p.scratch[:cap(p.scratch)])
	st.path, st.members, st.scratch = p.path[:0], p.members[:0], p.scratch[:0]
}

// put returns st to the pool unless it grew past what is worth keeping
// (a huge document's stacks are left to the collector).
func (st *stacks) put() {
	if cap(st.scratch) > 1<<20 || cap(st.out) > 1<<20 || cap(st.members) > 1<<14 {
		return
	}
	stacksPool.Put(st)
}

// parser is a one-pass I-JSON validator and RFC 8785 serializer. It writes
// each value's canonical text to out as it goes; an object whose members did
// not arrive in canonical order is reordered in place once it closes, which
// canonical input never needs.
type parser struct {
	in       []byte
	pos      int
	out      []byte
	depth    int
	maxDepth int
	path     []pathSeg
	members  []member // stack shared by all open objects
	scratch  []byte
	// foldCheck rejects keys that are twins under case folding (records
	// agentledger writes itself; see CheckRecordKeys).
	foldCheck bool
}

type pathSeg struct {
	key     []byte // canonical key text (aliases out)
	escaped bool
	index   int // -1 for an object key
}

type member struct {
	start, end int    // canonical `"key":value` in out
	key        []byte // canonical key text without quotes (aliases out)
	escaped    bool   // key text contains a backslash escape
}

func (p *parser) pathString() string {
	var b strings.Builder
	b.WriteByte('$')
	for _, s := range p.path {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		k := DecodeKey(s.key, s.escaped)
		if isIdent(k) {
			b.WriteByte('.')
			b.WriteString(k)
		} else {
			fmt.Fprintf(&b, "[%s]", strconv.Quote(k))
		}
	}
	return b.String()
}

func isIdent(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

func (p *parser) fail(msg string) error {
	return &InputError{Path: p.pathString(), Offset: p.pos, Msg: msg}
}

func (p *parser) describe() string {
	if p.pos >= len(p.in) {
		return "end of input"
	}
	c := p.in[p.pos]
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("character %q", c)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (p *parser) skipSpace() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() error {
	if p.pos >= len(p.in) {
		return p.fail("unexpected end of input, want a value")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		_, err := p.str()
		return err
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		return p.fail(fmt.Sprintf("unexpected %s, want a value", p.describe()))
	}
}

func (p *parser) literal(word string) error {
	if !bytes.HasPrefix(p.in[p.pos:], []byte(word)) {
		return p.fail(fmt.Sprintf("invalid literal, want %s", word))
	}
	p.pos += len(word)
	p.out = append(p.out, word...)
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > p.maxDepth {
		return p.fail(fmt.Sprintf("nesting deeper than the limit of %d", p.maxDepth))
	}
	return nil
}

func (p *parser) array() error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++ // '['
	p.out = append(p.out, '[')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.out = append(p.out, ']')
		p.depth--
		return nil
	}
	p.path = append(p.path, pathSeg{index: 0})
	for i := 0; ; i++ {
		p.path[len(p.path)-1].index = i
		if i > 0 {
			p.out = append(p.out, ',')
		}
		p.skipSpace()
		if err := p.value(); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.fail("unexpected end of input in array, want ',' or ']'")
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] == ']' {
			p.pos++
			break
		}
		return p.fail(fmt.Sprintf("unexpected %s in array, want ',' or ']'", p.describe()))
	}
	p.path = p.path[:len(p.path)-1]
	p.out = append(p.out, ']')
	p.depth--
	return nil
}

func (p *parser) object() error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++ // '{'
	p.out = append(p.out, '{')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.out = append(p.out, '}')
		p.depth--
		return nil
	}
	base := len(p.members)
	bodyStart := len(p.out)
	p.path = append(p.path, pathSeg{index: -1})
	for {
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return p.fail(fmt.Sprintf("unexpected %s in object, want a string key", p.describe()))
		}
		if len(p.members) > base {
			p.out = append(p.out, ',')
		}
		m := member{start: len(p.out)}
		keyStart := len(p.out) + 1
		escaped, err := p.str()
		if err != nil {
			return err
		}
		m.escaped = escaped
		m.key = p.out[keyStart : len(p.out)-1 : len(p.out)-1]
		p.path[len(p.path)-1] = pathSeg{key: m.key, escaped: escaped, index: -1}
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return p.fail(fmt.Sprintf("unexpected %s after object key, want ':'", p.describe()))
		}
		p.pos++
		p.out = append(p.out, ':')
		p.skipSpace()
		if err := p.value(); err != nil {
			return err
		}
		m.end = len(p.out)
		p.members = append(p.members, m)
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.fail("unexpected end of input in object, want ',' or '}'")
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] == '}' {
			p.pos++
			break
		}
		return p.fail(fmt.Sprintf("unexpected %s in object, want ',' or '}'", p.describe()))
	}
	p.path = p.path[:len(p.path)-1]
	if err := p.order(base, bodyStart); err != nil {
		return err
	}
	p.members = p.members[:base]
	p.out = append(p.out, '}')
	p.depth--
	return nil
}

// order puts the members of the object whose body starts at bodyStart into
// RFC 8785 order (UTF-16 code units of the unescaped keys) and rejects
// duplicate keys. Members already in order, as in any canonical input, cost
// one comparison each and no copy.
func (p *parser) order(base, bodyStart int) error {
	ms := p.members[base:]
	if p.foldCheck {
		if err := p.foldTwins(ms); err != nil {
			return err
		}
	}
	sorted := true
	for i := 1; i < len(ms); i++ {
		c := compareKeys(ms[i-1], ms[i])
		if c == 0 {
			return p.duplicate(ms[i])
		}
		if c > 0 {
			sorted = false
		}
	}
	if sorted {
		return nil
	}
	// Keys alias out; copy the body to scratch and re-point keys into it
	// before rewriting out.
	p.scratch = append(p.scratch[:0], p.out[bodyStart:]...)
	for i := range ms {
		off := ms[i].start - bodyStart
		klen := len(ms[i].key)
		ms[i].key = p.scratch[off+1 : off+1+klen : off+1+klen]
		ms[i].start, ms[i].end = off, ms[i].end-bodyStart
	}
	slices.SortStableFunc(ms, compareKeys)
	for i := 1; i < len(ms); i++ {
		if compareKeys(ms[i-1], ms[i]) == 0 {
			return p.duplicate(ms[i])
		}
	}
	p.out = p.out[:bodyStart]
	for i, m := range ms {
		if i > 0 {
			p.out = append(p.out, ',')
		}
		p.out = append(p.out, p.scratch[m.start:m.end]...)
	}
	return nil
}

// foldTwins rejects keys of one object that differ only by case or
// Unicode case folding ("decision" and "deciſion", "kind" and "\u212aind"):
// a reader that matches keys case-insensitively (Go's encoding/json does)
// would take one for the other, and two readers of one record would read
// different values. Only keys with an upper-case ASCII or a non-ASCII
// character can have a twin, so most objects cost one scan of their keys.
func (p *parser) foldTwins(ms []member) error {
	var folded []string
	for i, m := range ms {
		if plainKey(m) {
			continue
		}
		if folded == nil {
			folded = make([]string, len(ms))
			for j, o := range ms {
				folded[j] = foldKey(DecodeKey(o.key, o.escaped))
			}
		}
		for j := range ms {
			if j != i && folded[j] == folded[i] {
				a, b := DecodeKey(ms[j].key, ms[j].escaped), DecodeKey(m.key, m.escaped)
				if a == b {
					continue // an exact duplicate: reported as such
				}
				return &InputError{Path: p.pathString(), Offset: -1,
					Msg: fmt.Sprintf("keys %s and %s differ only by case folding (a reader that folds case would take one for the other)", strconv.Quote(a), strconv.Quote(b))}
			}
		}
	}
	return nil
}

// plainKey reports whether a key has only lower-case ASCII letters, digits
// and ASCII punctuation. Two plain keys are twins only if equal.
func plainKey(m member) bool {
	if m.escaped {
		return false
	}
	for _, c := range m.key {
		if c >= 0x80 || c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true // its twin, if any, is not plain and finds it
}

// foldKey maps every character of k to the smallest character of its
// Unicode case-folding orbit, so that keys equal under folding are equal.
func foldKey(k string) string {
	var b strings.Builder
	for _, r := range k {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

func (p *parser) duplicate(m member) error {
	return &InputError{
		Path:   p.pathString(),
		Offset: -1,
		Msg:    fmt.Sprintf("duplicate key %s (I-JSON forbids duplicate keys)", strconv.Quote(DecodeKey(m.key, m.escaped))),
	}
}

// compareKeys orders two members by the UTF-16 code units of their keys, as
// RFC 8785 §3.2.3 requires.
func compareKeys(a, b member) int {
	if a.escaped || b.escaped {
		return compareUTF16(DecodeKey(a.key, a.escaped), DecodeKey(b.key, b.escaped))
	}
	return compareUTF16Bytes(a.key, b.key)
}

func compareUTF16(a, b string) int {
	return compareUTF16Bytes([]byte(a), []byte(b))
}

// compareUTF16Bytes compares two valid UTF-8 strings by their UTF-16 code
// units without converting them. UTF-8 byte order equals code point order;
// the two orders differ only where a supplementary character (a surrogate
// pair in UTF-16) meets a BMP character at or above U+E000.
func compareUTF16Bytes(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	// Back up to the start of the rune holding the first difference; the
	// prefix is shared, so the boundary is the same in both.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRune(a[i:])
	rb, _ := utf8.DecodeRune(b[i:])
	if (ra >= 0x10000) == (rb >= 0x10000) {
		return int(ra) - int(rb) // same UTF-16 length: code point order is code unit order
	}
	return int(utf16Lead(ra)) - int(utf16Lead(rb))
}

// utf16Lead returns the first UTF-16 code unit of r, widened so that two
// runes compare as their code units do.
func utf16Lead(r rune) rune {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return hi
	}
	return r
}

// decodeKey returns the unescaped text of a canonical key.
func DecodeKey(k []byte, escaped bool) string {
	if !escaped {
		return string(k)
	}
	return unescapeCanonical(k)
}

// unescapeCanonical undoes the escapes RFC 8785 writes: \" \\ \b \f \n \r \t
// and \u00xx.
func unescapeCanonical(k []byte) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c != '\\' || i+1 >= len(k) {
			b.WriteByte(c)
			continue
		}
		i++
		switch k[i] {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			if i+4 < len(k) {
				v, _ := strconv.ParseUint(string(k[i+1:i+5]), 16, 8)
				b.WriteByte(byte(v))
				i += 4
			}
		default:
			b.WriteByte(k[i])
		}
	}
	return b.String()
}

const HexDigits = "0123456789abcdef"

// str reads a JSON string at p.pos and writes its canonical form. It reports
// whether the canonical text contains an escape.
func (p *parser) str() (escaped bool, err error) {
	start := p.pos
	p.pos++ // opening quote
	p.out = append(p.out, '"')
	in := p.in
	for {
		// Copy the longest run that needs no attention.
		run := p.pos
		for p.pos < len(in) {
			c := in[p.pos]
			if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
				break
			}
			p.pos++
		}
		p.out = append(p.out, in[run:p.pos]...)
		if p.pos >= len(in) {
			p.pos = start
			return false, p.fail("unterminated string")
		}
		c := in[p.pos]
		switch {
		case c == '"':
			p.pos++
			p.out = append(p.out, '"')
			return escaped, nil
		case c < 0x20:
			return false, p.fail(fmt.Sprintf("control character 0x%02x in string must be escaped", c))
		case c >= 0x80:
			r, size := utf8.DecodeRune(in[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return false, p.fail(fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", c))
			}
			p.out = append(p.out, in[p.pos:p.pos+size]...)
			p.pos += size
		default: // backslash
			if p.pos+1 >= len(in) {
				return false, p.fail("unterminated escape")
			}
			e := in[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\':
				p.out = append(p.out, '\\', e)
				escaped = true
			case '/':
				p.out = append(p.out, '/')
			case 'b', 'f', 'n', 'r', 't':
				p.out = append(p.out, '\\', e)
				escaped = true
			case 'u':
				r, err := p.unicodeEscape()
				if err != nil {
					return false, err
				}
				if p.writeRune(r) {
					escaped = true
				}
			default:
				p.pos -= 2
				return false, p.fail(fmt.Sprintf("invalid escape \\%c", e))
			}
		}
	}
}

// unicodeEscape decodes the hex digits after \u at p.pos, joining a
// surrogate pair and rejecting a lone surrogate.
func (p *parser) unicodeEscape() (rune, error) {
	at := p.pos - 2
	hi, ok := hex4(p.in, p.pos)
	if !ok {
		p.pos = at
		return 0, p.fail("invalid \\u escape, want four hex digits")
	}
	p.pos += 4
	if hi < 0xD800 || hi > 0xDFFF {
		return hi, nil
	}
	if hi >= 0xDC00 {
		p.pos = at
		return 0, p.fail(fmt.Sprintf("lone surrogate \\u%04x (a low surrogate with no high surrogate before it)", hi))
	}
	if p.pos+1 < len(p.in) && p.in[p.pos] == '\\' && p.in[p.pos+1] == 'u' {
		if lo, ok := hex4(p.in, p.pos+2); ok && lo >= 0xDC00 && lo <= 0xDFFF {
			p.pos += 6
			return utf16.DecodeRune(hi, lo), nil
		}
	}
	p.pos = at
	return 0, p.fail(fmt.Sprintf("lone surrogate \\u%04x (a high surrogate not followed by a low surrogate)", hi))
}

func hex4(in []byte, at int) (rune, bool) {
	if at+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, c := range in[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// writeRune writes r as RFC 8785 serializes it inside a string and reports
// whether that took an escape.
func (p *parser) writeRune(r rune) bool {
	switch {
	case r == '"' || r == '\\':
		p.out = append(p.out, '\\', byte(r))
	case r == '\b':
		p.out = append(p.out, '\\', 'b')
	case r == '\f':
		p.out = append(p.out, '\\', 'f')
	case r == '\n':
		p.out = append(p.out, '\\', 'n')
	case r == '\r':
		p.out = append(p.out, '\\', 'r')
	case r == '\t':
		p.out = append(p.out, '\\', 't')
	case r < 0x20:
		p.out = append(p.out, '\\', 'u', '0', '0', HexDigits[r>>4], HexDigits[r&0xF])
	default:
		p.out = utf8.AppendRune(p.out, r)
		return false
	}
	return true
}

// number reads a JSON number (RFC 8259 grammar) and writes its RFC 8785 form.
func (p *parser) number() error {
	in := p.in
	start := p.pos
	i, intDigits, integer, bad := scanNumber(in, start)
	if bad != "" {
		p.pos = i
		return p.fail(bad)
	}
	lit := in[start:i]
	p.pos = i
	if integer && intDigits <= 15 {
		// |n| < 10^15 < 2^53: the literal is already its canonical form.
		if len(lit) == 2 && lit[0] == '-' && lit[1] == '0' {
			p.out = append(p.out, '0')
			return nil
		}
		p.out = append(p.out, lit...)
		return nil
	}
	p.pos = start
	if integer {
		// An integer literal is kept only if it is its own RFC 8785 form
		// (the shortest decimal that reads back as the same float64);
		// otherwise its text would silently change (12345678901234567890
		// would become 12345678901234567000, 92222551624293712 would become
		// 92222551624293710).
		f, err := strconv.ParseFloat(string(lit), 64)
		s, _ := jcs.NumberToJSON(f)
		if err != nil || s != string(lit) {
			return p.fail(fmt.Sprintf("integer %s is not its own RFC 8785 form (%s) and would change under canonicalization; send it as a string", Clip(lit), s))
		}
		p.pos = i
		p.out = append(p.out, lit...)
		return nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) {
		return p.fail(fmt.Sprintf("number %s is outside the float64 range", Clip(lit)))
	}
	if f == 0 && nonZeroMantissa(lit) {
		return p.fail(fmt.Sprintf("number %s underflows float64 to zero", Clip(lit)))
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return p.fail(fmt.Sprintf("number %s: %v", Clip(lit), err))
	}
	p.pos = i
	p.out = append(p.out, s...)
	return nil
}

// scanNumber reads the JSON number (RFC 8259 grammar) at in[start]: the
// index after it, the digits of its integer part, and whether it has no
// fraction or exponent; or, in bad, what is wrong at index end.
func scanNumber(in []byte, start int) (end, intDigits int, integer bool, bad string) {
	i := start
	if in[i] == '-' {
		i++
	}
	intStart := i
	switch {
	case i < len(in) && in[i] == '0':
		i++
	case i < len(in) && in[i] >= '1' && in[i] <= '9':
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
	default:
		return i, 0, false, "invalid number, want a digit"
	}
	intDigits = i - intStart
	integer = true
	if i < len(in) && in[i] == '.' {
		integer = false
		i++
		d := i
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
		if i == d {
			return i, 0, false, "invalid number, want a digit after '.'"
		}
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		integer = false
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		d := i
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
		if i == d {
			return i, 0, false, "invalid number, want a digit in the exponent"
		}
	}
	return i, intDigits, integer, ""
}

func nonZeroMantissa(lit []byte) bool {
	for _, c := range lit {
		if c == 'e' || c == 'E' {
			return false
		}
		if c >= '1' && c <= '9' {
			return true
		}
	}
	return false
}

func Clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
