package canon

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func decodeStd(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// sameAsDecoder: whatever DecodeCanonical reads, encoding/json (with
// UseNumber) reads the same, and every canonical text is read.
func sameAsDecoder(t *testing.T, b []byte, canonical bool) {
	t.Helper()
	got, ok := DecodeCanonical(b, 64)
	if !ok {
		if canonical && bytes.Count(b, []byte("{"))+bytes.Count(b, []byte("[")) < 64 {
			t.Fatalf("%q is canonical and was not read", b)
		}
		return
	}
	want, err := decodeStd(b)
	if err != nil {
		t.Fatalf("%q: read as %#v, but encoding/json says %v", b, got, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nDecodeCanonical: %#v\nencoding/json:   %#v", b, got, want)
	}
}

func TestDecodeCanonical(t *testing.T) {
	for _, s := range []string{`{}`, `[]`, `null`, `true`, `"x"`, `-0.5`, `1e+30`, `{"a":[1,"\u001f\n\"\\",{"b":null}],"é":"😀"}`, `[[[]]]`} {
		sameAsDecoder(t, []byte(s), true)
	}
	for _, s := range []string{`{"a":1,"a":2}`, ` {}`, `{} `, `{"a":"\u0041"}`, `"\/"`, `"\xff"`, `01`, `1.`, `{"a":1}x`, `[1,]`, `"` + "\x01" + `"`} {
		if _, ok := DecodeCanonical([]byte(s), 64); ok {
			t.Errorf("%q was read; the general decoder must read it", s)
		}
	}
	if _, ok := DecodeCanonical([]byte(`[[[1]]]`), 2); ok {
		t.Error("nesting past maxDepth was read")
	}
}

// FuzzDecodeCanonical holds DecodeCanonical to encoding/json on the
// canonical form of every fuzzed document, and on the document itself.
func FuzzDecodeCanonical(f *testing.F) {
	for _, s := range []string{`{"b":[1,2.5e-7,{"c":"\t"}],"a":"é"}`, `["\u0000",true,false,null]`, `{"k":{"y":-0,"x":1E2}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsDecoder(t, data, false)
		if c, err := Canonicalize(data, Limits{}); err == nil {
			sameAsDecoder(t, c, true)
		}
	})
}
