// Package randvalue fills Go values with random contents for differential
// tests: strings with escapes, invalid UTF-8 and characters outside the
// BMP, integers and floats at the edges of what a float64 holds exactly,
// nil and empty slices, maps and pointers, and JSON documents in
// json.RawMessage and interface fields.
package randvalue

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"time"
)

// Strings are the strings a value is filled with, besides random ones.
var Strings = []string{"", "a", "PreToolUse", "<&>", "é", "\u2028", "\x00\x1f\x7f", "\"\\/", "\xff", "a\xc3", "😀", "\ue000", "\U0001F600b", "tab\there", "Zz", "zZ"}

var numbers = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e21, 1e-7, 5e-324, math.MaxFloat64, 1 << 53, 1<<53 + 2, 123456789.125, -2.5}

var ints = []int64{0, 1, -1, 42, 1<<53 - 1, -(1<<53 - 1)}

// bigInts are integers past 2^53, which a float64 may not hold: one
// integer in a hundred is one of them.
var bigInts = []int64{1 << 53, 1<<53 + 1, 1 << 60, math.MaxInt64, math.MinInt64}

// Raw are the JSON documents a json.RawMessage is filled with: canonical
// and not.
var Raw = []string{`{}`, `[]`, `null`, `{"b":1,"a":[true,false,null]}`, `{ "z" : "\u0041\u00e9" , "a": 1.50 }`, `"x"`, `1e2`, `{"k":{"y":2,"x":1}}`}

var (
	rawType  = reflect.TypeFor[json.RawMessage]()
	timeType = reflect.TypeFor[time.Time]()
	numType  = reflect.TypeFor[json.Number]()
)

// Fill sets v, which must be settable, to a random value of its type, at
// most depth levels of containers deep.
func Fill(rng *rand.Rand, v reflect.Value, depth int) {
	t := v.Type()
	switch t {
	case rawType:
		if rng.IntN(4) > 0 {
			v.SetBytes([]byte(Raw[rng.IntN(len(Raw))]))
		}
		return
	case timeType:
		v.Set(reflect.ValueOf(time.Unix(rng.Int64N(1<<33), rng.Int64N(1e9)).UTC()))
		return
	case numType:
		v.SetString([]string{"1", "-0", "1.50", "1e3", "12345678901234567890"}[rng.IntN(5)])
		return
	}
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := integer(rng)
		if v.OverflowInt(n) {
			n = int64(rng.IntN(100))
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		i := integer(rng)
		if i < 0 {
			i = -i
		}
		n := uint64(i)
		if v.OverflowUint(n) {
			n = uint64(rng.IntN(100))
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		f := numbers[rng.IntN(len(numbers))]
		if rng.IntN(2) == 0 {
			f = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		}
		if v.OverflowFloat(f) {
			f = 0.5
		}
		v.SetFloat(f)
	case reflect.String:
		v.SetString(String(rng))
	case reflect.Pointer:
		if rng.IntN(3) == 0 || depth <= 0 {
			v.SetZero()
			return
		}
		p := reflect.New(t.Elem())
		Fill(rng, p.Elem(), depth-1)
		v.Set(p)
	case reflect.Slice:
		if rng.IntN(4) == 0 || depth <= 0 {
			v.SetZero()
			return
		}
		n := rng.IntN(4)
		s := reflect.MakeSlice(t, n, n)
		for i := range n {
			Fill(rng, s.Index(i), depth-1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			Fill(rng, v.Index(i), depth-1)
		}
	case reflect.Map:
		if rng.IntN(4) == 0 || depth <= 0 {
			v.SetZero()
			return
		}
		m := reflect.MakeMap(t)
		for range rng.IntN(4) {
			k := reflect.New(t.Key()).Elem()
			Fill(rng, k, 0)
			e := reflect.New(t.Elem()).Elem()
			Fill(rng, e, depth-1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Interface:
		if a := Any(rng, depth-1); t.NumMethod() == 0 && depth > 0 && a != nil {
			v.Set(reflect.ValueOf(a))
		}
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				Fill(rng, v.Field(i), depth-1)
			}
		}
	}
}

func integer(rng *rand.Rand) int64 {
	switch r := rng.IntN(100); {
	case r == 0:
		return bigInts[rng.IntN(len(bigInts))]
	case r < 50:
		return ints[rng.IntN(len(ints))]
	}
	return rng.Int64N(1000) - 500
}

// String is a random string: one of Strings, random bytes, or both.
func String(rng *rand.Rand) string {
	switch rng.IntN(3) {
	case 0:
		return Strings[rng.IntN(len(Strings))]
	case 1:
		b := make([]byte, rng.IntN(8))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	return fmt.Sprintf("%s%d%s", Strings[rng.IntN(len(Strings))], rng.IntN(100), Strings[rng.IntN(len(Strings))])
}

// Any is a random value as json.Unmarshal builds them (with json.Number
// among the numbers), at most depth levels deep.
func Any(rng *rand.Rand, depth int) any {
	switch rng.IntN(8) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return numbers[rng.IntN(len(numbers))]
	case 3:
		return json.Number([]string{"1", "-0", "1.50", "1e3"}[rng.IntN(4)])
	case 4:
		if depth > 0 {
			a := make([]any, rng.IntN(3))
			for i := range a {
				a[i] = Any(rng, depth-1)
			}
			return a
		}
	case 5:
		if depth > 0 {
			m := map[string]any{}
			for range rng.IntN(3) {
				m[String(rng)] = Any(rng, depth-1)
			}
			return m
		}
	}
	return String(rng)
}
