package canon

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// AppendMarshal appends the RFC 8785 form of v to dst: what
// AppendCanonical gives for json.Marshal(v), written straight from v
// without the text json.Marshal would build and the parse that would
// reorder it. Struct fields are written in their canonical order, worked
// out once per type.
//
// Types it does not write itself — anything with its own MarshalJSON or
// MarshalText (json.RawMessage, time.Time), embedded struct fields, the
// ",string" and ",omitzero" options, maps with non-string keys, []byte,
// float32 — are written through json.Marshal and AppendCanonical, so the
// result is the same for every value; the package tests hold the two to
// byte equality. A value json.Marshal or AppendCanonical refuses (NaN, an
// integer above 2^53 that a float64 does not hold, a channel, duplicate
// keys after invalid UTF-8 is replaced) is refused with an error, and so
// is a value nested past 10,000 containers: one that holds itself, which
// json.Marshal refuses too, or one that deep, which it would write.
func AppendMarshal(dst []byte, v any) ([]byte, error) {
	if v == nil {
		return append(dst, "null"...), nil
	}
	rv := reflect.ValueOf(v)
	return encoderOf(rv.Type())(dst, rv, 0)
}

// encoder appends the canonical form of one value of a type, nested depth
// containers deep.
type encoder func(dst []byte, v reflect.Value, depth int) ([]byte, error)

// maxMarshalDepth bounds the containers AppendMarshal nests: a value that
// holds itself (which json.Marshal refuses as a cycle) or is nested deeper
// is refused, as is a json.RawMessage nested deeper on its own (as
// json.Marshal refuses it).
const maxMarshalDepth = 10000

// errTooDeep is the error of a value nested past maxMarshalDepth.
var errTooDeep = fmt.Errorf("canon: value nested deeper than %d (or holding itself)", maxMarshalDepth)

var encoders sync.Map // reflect.Type -> encoder

func encoderOf(t reflect.Type) encoder {
	if e, ok := encoders.Load(t); ok {
		return e.(encoder)
	}
	b := builder{cells: map[reflect.Type]*encoder{}}
	e := b.of(t)
	// Published only once built whole: a recursive type's reference to its
	// own encoder is never called before it is there.
	for typ, cell := range b.cells {
		encoders.LoadOrStore(typ, *cell)
	}
	return e
}

// builder builds the encoders of a type and the types it holds.
type builder struct {
	cells map[reflect.Type]*encoder
}

func (b *builder) of(t reflect.Type) encoder {
	if e, ok := encoders.Load(t); ok {
		return e.(encoder)
	}
	if cell, ok := b.cells[t]; ok {
		// A type within itself: its encoder is still being built.
		return func(dst []byte, v reflect.Value, depth int) ([]byte, error) { return (*cell)(dst, v, depth) }
	}
	cell := new(encoder)
	b.cells[t] = cell
	*cell = b.newEncoder(t)
	return *cell
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	numberType        = reflect.TypeFor[json.Number]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
)

func (b *builder) newEncoder(t reflect.Type) encoder {
	if t == rawMessageType {
		// Its own text, canonicalized: json.Marshal only compacts it
		// (and refuses what is not JSON, or nested deeper than 10,000),
		// which canonicalizing does too.
		return func(dst []byte, v reflect.Value, depth int) ([]byte, error) {
			if v.IsNil() {
				return append(dst, "null"...), nil
			}
			return AppendCanonical(dst, v.Bytes(), Limits{MaxBytes: math.MaxInt, MaxDepth: maxMarshalDepth})
		}
	}
	if t.Implements(marshalerType) || t.Implements(textMarshalerType) || t == numberType {
		return viaJSON
	}
	if reflect.PointerTo(t).Implements(marshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
		// json.Marshal calls the pointer's method on a value it can take
		// the address of (an element of a slice, a field reached through
		// a pointer), and writes any other as what it is.
		plain := b.plainEncoder(t)
		return func(dst []byte, v reflect.Value, depth int) ([]byte, error) {
			if v.CanAddr() {
				return viaJSON(dst, v.Addr(), depth)
			}
			return plain(dst, v, depth)
		}
	}
	return b.plainEncoder(t)
}

// plainEncoder encodes t by its kind, leaving its methods aside.
func (b *builder) plainEncoder(t reflect.Type) encoder {
	switch t.Kind() {
	case reflect.Bool:
		return func(dst []byte, v reflect.Value, _ int) ([]byte, error) {
			return strconv.AppendBool(dst, v.Bool()), nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(dst []byte, v reflect.Value, _ int) ([]byte, error) { return appendInt(dst, v.Int()) }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(dst []byte, v reflect.Value, _ int) ([]byte, error) { return appendUint(dst, v.Uint()) }
	case reflect.Float64:
		return func(dst []byte, v reflect.Value, _ int) ([]byte, error) { return appendFloat(dst, v.Float()) }
	case reflect.String:
		return func(dst []byte, v reflect.Value, _ int) ([]byte, error) { return AppendString(dst, v.String()), nil }
	case reflect.Interface:
		return func(dst []byte, v reflect.Value, depth int) ([]byte, error) {
			if v.IsNil() {
				return append(dst, "null"...), nil
			}
			e := v.Elem()
			return encoderOf(e.Type())(dst, e, depth)
		}
	case reflect.Pointer:
		return b.pointerEncoder(t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return viaJSON // base64, as json.Marshal writes it
		}
		elem := b.of(t.Elem())
		return func(dst []byte, v reflect.Value, depth int) ([]byte, error) {
			if v.IsNil() {
				return append(dst, "null"...), nil
			}
			return appendElems(dst, v, elem, depth)
		}
	case reflect.Array:
		elem := b.of(t.Elem())
		return func(dst []byte, v reflect.Value, depth int) ([]byte, error) { return appendElems(dst, v, elem, depth) }
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return viaJSON
		}
		return b.mapEncoder(t)
	case reflect.Struct:
		return b.structEncoder(t)
	}
	return viaJSON // float32, complex, chan, func: json.Marshal says
}

// viaJSON writes v as json.Marshal does, canonicalized.
func viaJSON(dst []byte, v reflect.Value, _ int) ([]byte, error) {
	raw, err := json.Marshal(v.Interface())
	if err != nil {
		return dst, err
	}
	return AppendCanonical(dst, raw, Limits{MaxBytes: math.MaxInt, MaxDepth: math.MaxInt})
}

func (b *builder) pointerEncoder(t reflect.Type) encoder {
	elem := b.of(t.Elem())
	return func(dst []byte, v reflect.Value, depth int) ([]byte, error) {
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return elem(dst, v.Elem(), depth)
	}
}

func appendElems(dst []byte, v reflect.Value, elem encoder, depth int) ([]byte, error) {
	if depth++; depth > maxMarshalDepth {
		return dst, errTooDeep
	}
	dst = append(dst, '[')
	var err error
	for i := range v.Len() {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = elem(dst, v.Index(i), depth); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

func (b *builder) mapEncoder(t reflect.Type) encoder {
	elem := b.of(t.Elem())
	return func(dst []byte, v reflect.Value, depth int) ([]byte, error) {
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		if depth++; depth > maxMarshalDepth {
			return dst, errTooDeep
		}
		type kv struct {
			key string
			val reflect.Value
		}
		members := make([]kv, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			members = append(members, kv{validUTF8(it.Key().String()), it.Value()})
		}
		slices.SortFunc(members, func(a, b kv) int { return compareUTF16(a.key, b.key) })
		dst = append(dst, '{')
		var err error
		for i, m := range members {
			if i > 0 {
				if m.key == members[i-1].key {
					return dst, fmt.Errorf("canon: map key %q twice once invalid UTF-8 is replaced", m.key)
				}
				dst = append(dst, ',')
			}
			dst = AppendString(dst, m.key)
			dst = append(dst, ':')
			if dst, err = elem(dst, m.val, depth); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
}

// field is a struct field as json.Marshal writes it.
type field struct {
	index     int
	key       string // its name
	name      []byte // the key, written as a canonical string with its colon
	omitEmpty bool
	enc       encoder
}

func (b *builder) structEncoder(t reflect.Type) encoder {
	var fields []field
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return viaJSON // embedded fields' promotion rules: json.Marshal's
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !validTagName(name) {
			name = "" // json.Marshal ignores an invalid name
		}
		if name == "" {
			name = f.Name
		}
		omit := false
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "omitempty":
				omit = true
			case "string", "omitzero":
				return viaJSON
			}
		}
		fields = append(fields, field{index: i, key: name, name: append(AppendString(nil, name), ':'), omitEmpty: omit, enc: b.of(f.Type)})
	}
	slices.SortFunc(fields, func(a, b field) int { return compareUTF16(a.key, b.key) })
	for i := 1; i < len(fields); i++ {
		if fields[i].key == fields[i-1].key {
			return viaJSON // json.Marshal drops both
		}
	}
	return func(dst []byte, v reflect.Value, depth int) ([]byte, error) {
		if depth++; depth > maxMarshalDepth {
			return dst, errTooDeep
		}
		dst = append(dst, '{')
		first := true
		var err error
		for _, f := range fields {
			fv := v.Field(f.index)
			if f.omitEmpty && isEmpty(fv) {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, f.name...)
			if dst, err = f.enc(dst, fv, depth); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
}

// validTagName is encoding/json's rule for a usable key in a tag.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// exactInts are the integers every float64 holds: they are their own
// canonical form.
const exactInts = 1<<53 - 1

func appendInt(dst []byte, n int64) ([]byte, error) {
	if n >= -exactInts && n <= exactInts {
		return strconv.AppendInt(dst, n, 10), nil
	}
	return appendBigInt(dst, strconv.FormatInt(n, 10), float64(n))
}

func appendUint(dst []byte, n uint64) ([]byte, error) {
	if n <= exactInts {
		return strconv.AppendUint(dst, n, 10), nil
	}
	return appendBigInt(dst, strconv.FormatUint(n, 10), float64(n))
}

// appendBigInt writes an integer past 2^53 only if its decimal is its own
// RFC 8785 form, as AppendCanonical does.
func appendBigInt(dst []byte, lit string, f float64) ([]byte, error) {
	if s, err := jcs.NumberToJSON(f); err != nil || s != lit {
		return dst, fmt.Errorf("canon: integer %s is not its own RFC 8785 form (%s)", lit, s)
	}
	return append(dst, lit...), nil
}

func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("canon: unsupported number %v", f)
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return dst, fmt.Errorf("canon: number %v: %w", f, err)
	}
	return append(dst, s...), nil
}

// validUTF8 is s with each byte that is not part of a valid UTF-8
// sequence replaced by U+FFFD, as json.Marshal replaces them.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// AppendString appends s as an RFC 8785 string; invalid UTF-8 becomes
// U+FFFD, as json.Marshal writes it.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	run := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x80 {
			i++
			continue
		}
		dst = append(dst, s[run:i]...)
		if c >= 0x80 {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
			run = i
			continue
		}
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', HexDigits[c>>4], HexDigits[c&0xF])
		}
		i++
		run = i
	}
	dst = append(dst, s[run:]...)
	return append(dst, '"')
}
