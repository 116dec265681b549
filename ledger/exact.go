package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	return exactKeys(data, reflect.TypeOf(v), "$")
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// exactKeys checks the member names of raw at the positions t describes
// as structs, reading only as deep as there are structs to check (a map,
// an interface or a json.RawMessage holds whatever it holds).
func exactKeys(raw []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !holdsStruct(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil // a null or a mistyped value: the decoder judged it
		}
		fields := fieldsOf(t)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("%s: unknown member %s (member names match exactly)", path, strconv.Quote(k))
			}
			if err := exactKeys(obj[k], ft, path+"."+k); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var arr []json.RawMessage
		_ = json.Unmarshal(raw, &arr)
		for i, x := range arr {
			if err := exactKeys(x, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		_ = json.Unmarshal(raw, &obj)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if err := exactKeys(obj[k], t.Elem(), path+"."+k); err != nil {
				return err
			}
		}
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
