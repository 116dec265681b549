package canon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/randvalue"
)

// every kind of field json.Marshal writes, and those AppendMarshal hands
// to it.
type kinds struct {
	B      bool              `json:"b"`
	I      int               `json:"i,omitempty"`
	I8     int8              `json:"i8"`
	U      uint64            `json:"u,omitempty"`
	F      float64           `json:"f"`
	F32    float32           `json:"f32"`
	S      string            `json:"s,omitempty"`
	Named  label             `json:"named"`
	P      *kinds            `json:"p,omitempty"`
	PS     *string           `json:"ps"`
	L      []string          `json:"l"`
	LE     []int             `json:"le,omitempty"`
	A      [2]int            `json:"a"`
	Bytes  []byte            `json:"bytes"`
	M      map[string]int    `json:"m,omitempty"`
	MI     map[int]string    `json:"mi"`
	Any    any               `json:"any"`
	AnyE   any               `json:"any_e,omitempty"`
	Raw    json.RawMessage   `json:"raw,omitempty"`
	Num    json.Number       `json:"num,omitempty"`
	T      time.Time         `json:"t"`
	Skip   string            `json:"-"`
	Dash   string            `json:"-,"`
	NoTag  string            //nolint
	Bad    string            `json:"a b\\c"`
	Unicd  string            `json:"é😀"`
	Ord    string            `json:"\ue000"`
	Emb    inner             `json:"emb"`
	MS     map[string]*inner `json:"ms"`
	hidden string
}

type label string

type inner struct {
	X   int    `json:"x"`
	Y   string `json:"y,omitempty"`
	Raw json.RawMessage
}

// embeds has an embedded struct: json.Marshal's promotion rules apply.
type embeds struct {
	inner
	Z   int `json:"z"`
	Str int `json:"str,string"`
}

func reference(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Canonicalize(raw, Limits{MaxBytes: math.MaxInt, MaxDepth: math.MaxInt})
}

func sameAsReference(t *testing.T, v any) {
	t.Helper()
	want, werr := reference(v)
	got, gerr := AppendMarshal(nil, v)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%#v:\njson.Marshal+Canonicalize: %s, %v\nAppendMarshal: %s, %v", v, want, werr, got, gerr)
	}
	if werr == nil && !bytes.Equal(got, want) {
		t.Fatalf("%#v:\njson.Marshal+Canonicalize: %s\nAppendMarshal:             %s", v, want, got)
	}
}

// TestMarshalIsCanonicalizedJSON holds AppendMarshal to json.Marshal then
// Canonicalize, byte for byte, on random values of every kind of field.
func TestMarshalIsCanonicalizedJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(8785, 1))
	errs := 0
	for range 3000 {
		for _, typ := range []reflect.Type{reflect.TypeFor[kinds](), reflect.TypeFor[embeds](), reflect.TypeFor[map[string]any](), reflect.TypeFor[[]any]()} {
			v := reflect.New(typ)
			randvalue.Fill(rng, v.Elem(), 5)
			sameAsReference(t, v.Elem().Interface())
			sameAsReference(t, v.Interface())
			if _, err := reference(v.Interface()); err != nil {
				errs++
			}
		}
	}
	if errs == 0 {
		t.Fatal("no random value was refused: the edge cases (NaN-free big integers, duplicate keys) were never reached")
	}
	for _, v := range []any{nil, math.NaN(), math.Inf(1), uint64(1<<53 + 1), int64(1 << 60), "\xff\xfe", map[string]int{"\xff": 1, "\xfe": 2}, []float64{math.Copysign(0, -1), 1e21, 1e-7}, make(chan int)} {
		sameAsReference(t, v)
	}
}

// ptrM and ptrT marshal through their pointers: json.Marshal calls the
// methods on values it can take the address of (slice elements, fields
// reached through a pointer) and writes other values as they are.
type ptrM struct{ X int }

func (*ptrM) MarshalJSON() ([]byte, error) { return []byte(` "custom" `), nil }

type ptrT struct{ X int }

func (*ptrT) MarshalText() ([]byte, error) { return []byte("text"), nil }

type holdsPtr struct {
	M ptrM `json:"m"`
	T ptrT `json:"t"`
}

type cycle struct {
	Next *cycle `json:"next"`
}

// TestMarshalEdges: the cases the random values do not reach.
func TestMarshalEdges(t *testing.T) {
	c := &cycle{}
	c.Next = c
	type symbolTag struct {
		A string `json:"a€"` // € is not a letter or digit: json.Marshal uses the field's name
	}
	type punctuationOrder struct {
		A int `json:"a"`
		B int `json:"a!"` // sorted by the key, not by its quoted form
		C int `json:"k"`
		D int `json:"k x"`
	}
	type raw struct {
		R json.RawMessage `json:"r"`
	}
	type negZero struct {
		F float64 `json:"f,omitempty"`
		G float64 `json:"g"`
	}
	deep := json.RawMessage(strings.Repeat("[", 10001) + strings.Repeat("]", 10001))
	for _, v := range []any{
		[]ptrM{{1}}, &holdsPtr{}, holdsPtr{}, []ptrT{{1}}, map[string]ptrM{"a": {1}},
		symbolTag{"x"}, punctuationOrder{1, 2, 3, 4}, raw{json.RawMessage{}}, raw{nil}, raw{json.RawMessage(" [1, {\"b\":2,\"a\":1}] ")},
		map[string]any{"r": deep}, negZero{math.Copysign(0, -1), math.Copysign(0, -1)}, c,
	} {
		sameAsReference(t, v)
	}
	if _, err := AppendMarshal(nil, c); err == nil {
		t.Fatal("a value holding itself was written")
	}
}

// FuzzMarshal: any JSON document, read as json.Unmarshal reads it (with
// and without json.Number), is written by AppendMarshal as json.Marshal
// then Canonicalize writes it.
func FuzzMarshal(f *testing.F) {
	for _, s := range randvalue.Raw {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"a":"\ud800","b":"\u2028<>&","c":[1e400]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) == nil {
			sameAsReference(t, v)
		}
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if d.Decode(&v) == nil {
			sameAsReference(t, v)
		}
		sameAsReference(t, string(data))
	})
}

type tree struct {
	Name string  `json:"name"`
	Kids []*tree `json:"kids,omitempty"`
}

// TestMarshalConcurrently: encoders built and used by many goroutines at
// once, for a type that holds itself (run with -race).
func TestMarshalConcurrently(t *testing.T) {
	v := &tree{Name: "a", Kids: []*tree{{Name: "b"}, {Name: "c", Kids: []*tree{{Name: "d"}}}}}
	want, err := reference(v)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			got, err := AppendMarshal(nil, v)
			if err == nil && !bytes.Equal(got, want) {
				err = fmt.Errorf("got %s, want %s", got, want)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
