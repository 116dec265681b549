package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func TestMembers(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string // key=value, in order
		wantErr bool
	}{
		{name: "empty", in: `{}`, want: nil},
		{name: "scalars", in: `{"a":1,"b":true,"c":null,"d":-2.5e-7}`, want: []string{"a=1", "b=true", "c=null", "d=-2.5e-7"}},
		{name: "nested", in: `{"a":{"x":[1,{"y":"}"}]},"b":[],"c":"]\"}"}`, want: []string{`a={"x":[1,{"y":"}"}]}`, "b=[]", `c="]\"}"`}},
		{name: "escaped key", in: `{"a\"b":"\\"}`, want: []string{`a\"b="\\"`}},
		{name: "whitespace", in: `{ "a":1}`, wantErr: true},
		{name: "space after colon", in: `{"a": 1}`, wantErr: true},
		{name: "truncated", in: `{"a":{"b":1}`, wantErr: true},
		{name: "trailing", in: `{"a":1}}`, wantErr: true},
		{name: "array", in: `[1]`, wantErr: true},
		{name: "no value", in: `{"a":}`, wantErr: true},
		{name: "no colon", in: `{"a"}`, wantErr: true},
		{name: "open string", in: `{"a":"}`, wantErr: true},
		{name: "comma only", in: `{"a":1,}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Members([]byte(tt.in))
			if tt.wantErr {
				if !errors.Is(err, ErrNotCanonicalObject) {
					t.Fatalf("Members(%s) = %v, %v, want ErrNotCanonicalObject", tt.in, ms, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, string(m.Key)+"="+string(m.Value))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			}
		})
	}
}

// FuzzMembers: for the canonical form of any JSON object, the members
// Members finds are the object's, each value valid JSON, and written back
// in order they are the canonical bytes again.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"b":[1,"x"],"a":{"c":"\""}}`, `{"k":"\u00e9\\","n":1e300,"z":[[],[{}]]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Canonicalize(in, Limits{})
		if err != nil || len(c) == 0 || c[0] != '{' {
			return
		}
		ms, err := Members(c)
		if err != nil {
			t.Fatalf("Members(%s): %v", c, err)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(c, &obj); err != nil {
			t.Fatal(err)
		}
		if len(ms) != len(obj) {
			t.Fatalf("%d members, the object has %d: %s", len(ms), len(obj), c)
		}
		var b bytes.Buffer
		b.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				b.WriteByte(',')
			}
			if !json.Valid(m.Value) {
				t.Fatalf("member %s: %s is not JSON", m.Key, m.Value)
			}
			b.WriteString(`"` + string(m.Key) + `":`)
			b.Write(m.Value)
		}
		b.WriteByte('}')
		if !bytes.Equal(b.Bytes(), c) {
			t.Fatalf("members rejoined %s, want %s", b.Bytes(), c)
		}
		// NestingDepth is the depth the parser counts.
		d := NestingDepth(c)
		if _, err := Canonicalize(c, Limits{MaxDepth: d}); err != nil {
			t.Fatalf("NestingDepth(%s) = %d, but: %v", c, d, err)
		}
		if _, err := Canonicalize(c, Limits{MaxDepth: d - 1}); d > 1 && err == nil {
			t.Fatalf("NestingDepth(%s) = %d, but it reads at %d", c, d, d-1)
		}
	})
}
