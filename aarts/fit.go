package aarts

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// fitsFields reports whether raw, an event decoded in one pass (so without
// repeated keys), surely decodes into its hook point's own field types, as
// decodeFields would find: each member a field names has a value of the
// field's type. False means "not sure" — a member whose name matches a
// field's only case-insensitively, a value of another type — and the
// caller decodes, which names what is wrong.
func fitsFields(hookPoint string, raw map[string]any) bool {
	v := fieldsOf(hookPoint)
	if v == nil {
		return false
	}
	return fits(reflect.TypeOf(v).Elem(), raw)
}

func fits(t reflect.Type, v any) bool {
	if v == nil {
		return true // null leaves a field as it is
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return false // decodes by its own rules
	}
	switch t.Kind() {
	case reflect.Interface:
		return t.NumMethod() == 0
	case reflect.String:
		_, ok := v.(string)
		return ok
	case reflect.Bool:
		_, ok := v.(bool)
		return ok
	case reflect.Int64, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		var err error
		if t.Kind() == reflect.Int64 {
			_, err = strconv.ParseInt(string(n), 10, 64)
		} else {
			_, err = strconv.ParseFloat(string(n), 64)
		}
		return err == nil
	case reflect.Pointer:
		return fits(t.Elem(), v)
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok || t.Elem().Kind() == reflect.Uint8 {
			return false
		}
		for _, e := range a {
			if !fits(t.Elem(), e) {
				return false
			}
		}
		return true
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String {
			return false
		}
		for _, e := range m {
			if !fits(t.Elem(), e) {
				return false
			}
		}
		return true
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		fs, plain := fieldsByName(t)
		if !plain {
			return false
		}
		for k, e := range m {
			f, ok := fs[k]
			if !ok {
				if foldsToField(k, fs) {
					return false // encoding/json would fill that field
				}
				continue
			}
			if !fits(f, e) {
				return false
			}
		}
		return true
	}
	return false
}

// foldsToField reports whether key could name one of the fields other than
// exactly: encoding/json matches names case-insensitively, under Unicode
// folding (the Kelvin sign is a k), so any non-ASCII key is taken to.
func foldsToField(key string, fs map[string]reflect.Type) bool {
	for i := 0; i < len(key); i++ {
		if key[i] >= 0x80 {
			return true
		}
	}
	for name := range fs {
		if strings.EqualFold(key, name) {
			return true
		}
	}
	return false
}

var structFields sync.Map // reflect.Type -> fieldSet

// fieldSet is a struct type's fields by their JSON names; plain is false
// for a struct encoding/json reads by rules fits does not follow
// (embedded fields, tags it would ignore or that name two fields).
type fieldSet struct {
	byName map[string]reflect.Type
	plain  bool
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// fieldsByName are a struct type's fields by their JSON names, and whether
// the struct is plain enough for fits to judge.
func fieldsByName(t reflect.Type) (map[string]reflect.Type, bool) {
	if fs, ok := structFields.Load(t); ok {
		return fs.(fieldSet).byName, fs.(fieldSet).plain
	}
	fs := fieldSet{byName: map[string]reflect.Type{}, plain: true}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			fs.plain = false
			continue
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		} else if !plainTagName(name) {
			fs.plain = false
		}
		if _, twice := fs.byName[name]; twice {
			fs.plain = false
		}
		fs.byName[name] = f.Type
	}
	structFields.Store(t, fs)
	return fs.byName, fs.plain
}

// plainTagName is a tag name of lower-case ASCII letters, digits and
// underscores: one encoding/json takes as it is.
func plainTagName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
