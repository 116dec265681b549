package ledger

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// DecodeExact decodes the JSON object data into v, a pointer to a struct,
// with exact key matching: every member must be named exactly as one of the
// struct's fields (its json tag), at every level the struct describes, so
// that "Decision" or "deciſion" is an unknown member rather than another
// spelling of "decision", as encoding/json alone would take it. Maps,
// interfaces and json.RawMessage fields hold whatever they hold.
//
// agentledger reads its own records with DecodeExact: a record then means
// the same to it as to any reader that matches keys exactly (jq, Python).
func DecodeExact(data []byte, v any) error {
	// The member check refuses every member no field names, which is what
	// json.Decoder.DisallowUnknownFields would add, without its copy.
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	return exactKeys(data, reflect.TypeOf(v), "$")
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// exactKeys checks the member names of raw (valid JSON: the decoder read
// it) at the positions t describes as structs, in one pass over the bytes:
// values that hold no struct are skipped, not decoded.
func exactKeys(raw []byte, t reflect.Type, path string) (err error) {
	defer func() {
		if recover() != nil { // never on JSON the decoder accepted
			err = fmt.Errorf("%s: not a JSON value the member check can read", path)
		}
	}()
	k := keyScanner{b: raw, path: []string{path}}
	return k.value(t)
}

type keyScanner struct {
	b    []byte
	i    int
	path []string
}

func (k *keyScanner) ws() {
	for k.i < len(k.b) && (k.b[k.i] == ' ' || k.b[k.i] == '\t' || k.b[k.i] == '\n' || k.b[k.i] == '\r') {
		k.i++
	}
}

// str reads a string at k.i and returns its text (unescaped).
func (k *keyScanner) str() string {
	start := k.i
	escaped := k.pass()
	if !escaped {
		return string(k.b[start+1 : k.i-1])
	}
	var s string
	_ = json.Unmarshal(k.b[start:k.i], &s)
	return s
}

// pass passes over the string at k.i and reports whether it holds an
// escape.
func (k *keyScanner) pass() (escaped bool) {
	k.i++
	for k.b[k.i] != '"' {
		if k.b[k.i] == '\\' {
			escaped = true
			k.i++
		}
		k.i++
	}
	k.i++
	return escaped
}

// skip passes over one value.
func (k *keyScanner) skip() {
	k.ws()
	switch k.b[k.i] {
	case '"':
		k.pass()
	case '{', '[':
		depth := 0
		for {
			switch k.b[k.i] {
			case '"':
				k.pass()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			k.i++
			if depth == 0 {
				return
			}
		}
	default:
		for k.i < len(k.b) && !strings.ContainsRune(",}] \t\n\r", rune(k.b[k.i])) {
			k.i++
		}
	}
}

// members calls fn at each member's value of the object at k.i.
func (k *keyScanner) members(fn func(key string) error) error {
	k.i++ // {
	for {
		k.ws()
		if k.b[k.i] == '}' {
			k.i++
			return nil
		}
		if k.b[k.i] == ',' {
			k.i++
			k.ws()
		}
		key := k.str()
		k.ws()
		k.i++ // :
		if err := fn(key); err != nil {
			return err
		}
	}
}

func (k *keyScanner) value(t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	k.ws()
	c := k.b[k.i]
	switch {
	case !holdsStruct(t):
		k.skip()
	case t.Kind() == reflect.Struct && c == '{':
		fields := cachedFields(t)
		return k.members(func(key string) error {
			ft, ok := fields[key]
			if !ok {
				return fmt.Errorf("%s: unknown member %s (member names match exactly)", strings.Join(k.path, "."), strconv.Quote(key))
			}
			k.path = append(k.path, key)
			err := k.value(ft)
			k.path = k.path[:len(k.path)-1]
			return err
		})
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && c == '[':
		k.i++
		for n := 0; ; n++ {
			k.ws()
			if k.b[k.i] == ']' {
				k.i++
				return nil
			}
			if k.b[k.i] == ',' {
				k.i++
			}
			last := len(k.path) - 1
			top := k.path[last]
			k.path[last] = fmt.Sprintf("%s[%d]", top, n)
			err := k.value(t.Elem())
			k.path[last] = top
			if err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map && c == '{':
		return k.members(func(key string) error {
			k.path = append(k.path, key)
			err := k.value(t.Elem())
			k.path = k.path[:len(k.path)-1]
			return err
		})
	default:
		k.skip() // a null, or a value the decoder already judged
	}
	return nil
}

// holdsStruct reports whether a value of type t can hold a struct whose
// member names need checking.
func holdsStruct(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Slice, reflect.Array, reflect.Map:
		return holdsStruct(t.Elem())
	}
	return false
}

// fieldsOf maps the JSON names of a struct's fields to their types,
// following encoding/json's rules for tags and embedded structs.
// fieldCache holds fieldsOf by struct type: a type's members never change,
// and working them out anew for every record read cost more than the read.
var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// cachedFields is fieldsOf(t), worked out once per type (the map is
// shared: callers only read it).
func cachedFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m, _ := fieldCache.LoadOrStore(t, fieldsOf(t))
	return m.(map[string]reflect.Type)
}

func fieldsOf(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range fieldsOf(ft) {
					m[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	return m
}
