package canon

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

func TestCanonicalizeMatchesRFC8785(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"whitespace and order", ` { "b" : 1 , "a" : [ true , false , null ] } `, `{"a":[true,false,null],"b":1}`},
		{"utf16 order", `{"\ud83d\ude00":1,"\u20ac":2,"a":3,"\ufb33":4,"\r":5,"1":6,"\u0080":7,"\u00f6":8}`,
			"{\"\\r\":5,\"1\":6,\"a\":3,\"\u0080\":7,\"ö\":8,\"€\":2,\"\U0001F600\":1,\"\ufb33\":4}"},
		{"bmp above surrogates", "{\"\uff61\":1,\"\U00010000\":2}", "{\"\U00010000\":2,\"\uff61\":1}"},
		{"escapes", `{"s":"\u2028\u0000\"\\</script>\/\b\f\n\r\t\u001f\u007f"}`, "{\"s\":\"\u2028\\u0000\\\"\\\\</script>/\\b\\f\\n\\r\\t\\u001f\u007f\"}"},
		{"numbers", `[1e21,0.1,-0,5e-324,1.7976931348623157e308,1E2,-1.5e-7,0.000001,123456789012345,9007199254740991,-9007199254740991,1.0,1e17,100000000000000000]`,
			`[1e+21,0.1,0,5e-324,1.7976931348623157e+308,100,-1.5e-7,0.000001,123456789012345,9007199254740991,-9007199254740991,1,100000000000000000,100000000000000000]`},
		{"empty", `{"a":{},"b":[],"c":""}`, `{"a":{},"b":[],"c":""}`},
		{"nested reorder", `{"z":{"y":1,"x":{"b":2,"a":1}},"a":0}`, `{"a":0,"z":{"x":{"a":1,"b":2},"y":1}}`},
		{"escaped keys order", `{"\"":1,"\\":2,"\n":3,"a\u0000":4,"a":5}`, `{"\n":3,"\"":1,"\\":2,"a":5,"a\u0000":4}`},
		{"scalar", ` "x" `, `"x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in), Limits{})
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			ref, err := jcs.Transform([]byte(tt.in))
			if err != nil {
				t.Fatalf("jcs.Transform: %v", err)
			}
			if !bytes.Equal(got, ref) {
				t.Errorf("got %s, jcs.Transform says %s", got, ref)
			}
		})
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	tests := []struct {
		name, in string
		lim      Limits
		wantMsg  string
		wantPath string
	}{
		{"invalid utf8", "{\"a\":\"\xff\"}", Limits{}, "invalid UTF-8", "$.a"},
		{"utf8 surrogate", "{\"a\":\"\xed\xa0\x80\"}", Limits{}, "invalid UTF-8", "$.a"},
		{"lone high", `{"a":["x","\ud800"]}`, Limits{}, "lone surrogate \\ud800", "$.a[1]"},
		{"lone low", `{"a":"\udc00"}`, Limits{}, "lone surrogate \\udc00", "$.a"},
		{"high then non-low", `{"a":"\ud800\u0041"}`, Limits{}, "lone surrogate", "$.a"},
		{"duplicate", `{"a":1,"a":2}`, Limits{}, `duplicate key "a"`, "$"},
		{"deep duplicate", `{"p":{"x":{"k":1,"j":0,"k":2}}}`, Limits{}, `duplicate key "k"`, "$.p.x"},
		{"escaped duplicate", `{"a":1,"\u0061":2}`, Limits{}, `duplicate key "a"`, "$"},
		{"big integer", `{"n":12345678901234567890}`, Limits{}, "send it as a string", "$.n"},
		{"2^53+1", `{"n":9007199254740993}`, Limits{}, "send it as a string", "$.n"},
		{"negative big", `{"n":-9007199254740993}`, Limits{}, "send it as a string", "$.n"},
		{"overflow", `{"n":1e400}`, Limits{}, "outside the float64 range", "$.n"},
		{"underflow", `{"n":1e-400}`, Limits{}, "underflows", "$.n"},
		{"too deep", deep, Limits{}, "nesting deeper than the limit of 64", "$" + strings.Repeat("[0]", 64)},
		{"custom depth", `{"a":{"b":{}}}`, Limits{MaxDepth: 2}, "limit of 2", "$.a.b"},
		{"too big", `{"a":"` + strings.Repeat("x", 100) + `"}`, Limits{MaxBytes: 64}, "over the 64-byte limit", ""},
		{"trailing", `{} x`, Limits{}, "after the end", "$"},
		{"leading zero", `[01]`, Limits{}, "want ',' or ']'", "$[0]"},
		{"bad literal", `[tru]`, Limits{}, "want true", "$[0]"},
		{"control char", "[\"a\tb\"]", Limits{}, "control character", "$[0]"},
		{"bad escape", `["\x"]`, Limits{}, "invalid escape", "$[0]"},
		{"empty", ``, Limits{}, "unexpected end of input", "$"},
		{"unterminated", `{"a":"b`, Limits{}, "unterminated string", "$.a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Canonicalize([]byte(tt.in), tt.lim)
			if err == nil {
				t.Fatal("got nil error, want one")
			}
			var ie *InputError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("got %T %v, want *InputError wrapping ErrInvalidInput", err, err)
			}
			if !strings.Contains(ie.Msg, tt.wantMsg) {
				t.Errorf("got message %q, want it to contain %q", ie.Msg, tt.wantMsg)
			}
			if ie.Path != tt.wantPath {
				t.Errorf("got path %q, want %q", ie.Path, tt.wantPath)
			}
		})
	}
}

func TestCompareUTF16Bytes(t *testing.T) {
	tests := []struct {
		a, b string
		want int // sign
	}{
		{"a", "b", -1}, {"ab", "a", 1}, {"", "", 0},
		{"\U0001F600", "\u20ac", 1}, // lead surrogate D83D sorts after U+20AC
		{"\U00010000", "\uffff", -1},
		{"\ue000", "\U00010000", 1},
		{"x\U0001F600", "x\U0001F601", -1},
	}
	for _, tt := range tests {
		got := compareUTF16Bytes([]byte(tt.a), []byte(tt.b))
		if sign(got) != tt.want {
			t.Errorf("compare(%q, %q) = %d, want sign %d", tt.a, tt.b, got, tt.want)
		}
		if ref := sign(compareRef(tt.a, tt.b)); ref != tt.want {
			t.Errorf("reference compare(%q, %q) = %d, want %d", tt.a, tt.b, ref, tt.want)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// compareRef compares by explicit UTF-16 encoding.
func compareRef(a, b string) int {
	ua, ub := utf16Units(a), utf16Units(b)
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return int(ua[i]) - int(ub[i])
		}
	}
	return len(ua) - len(ub)
}

func utf16Units(s string) []uint16 {
	var out []uint16
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xD800+(r>>10)), uint16(0xDC00+(r&0x3FF)))
		} else {
			out = append(out, uint16(r))
		}
	}
	return out
}

// FuzzCanonicalize holds Canonicalize to jcs.Transform on every input it
// accepts, and to idempotence.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1,2.5,-0,1e21,"x\u0000"]}`, `{"\ud83d\ude00":1,"\u20ac":2}`, `[]`, `"s"`, `1e-7`,
		`{"a":{"c":1,"b":2},"a\u0000":null}`, `[0.1,123e-2,-5E+3]`, `{"\\":1,"\"":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := Canonicalize(in, Limits{MaxDepth: 1000})
		if err != nil {
			return
		}
		ref, rerr := jcs.Transform(in)
		if rerr != nil {
			t.Fatalf("Canonicalize accepted %q as %q, jcs.Transform rejects it: %v", in, got, rerr)
		}
		if !bytes.Equal(got, ref) {
			t.Fatalf("Canonicalize(%q) = %q, jcs.Transform = %q", in, got, ref)
		}
		again, err := Canonicalize(got, Limits{MaxDepth: 1000})
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("not idempotent: %q -> %q (%v)", got, again, err)
		}
	})
}
