package hostconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// node is a JSON value that keeps the order of an object's members, so
// that a host's configuration file is edited in place: what agentledger
// does not touch keeps its order and its text.
type node struct {
	obj    []member // an object (isObj)
	arr    []*node  // an array (isArr)
	scalar any      // a string, json.Number, bool or nil
	isObj  bool
	isArr  bool
	// raw is the value's text in the file it was read from; it is written
	// as it was while neither the value nor anything in it changed.
	raw   []byte
	dirty bool
}

// clean reports whether n and everything in it are as they were read.
func (n *node) clean() bool {
	if n.raw == nil || n.dirty {
		return false
	}
	for _, m := range n.obj {
		if !m.val.clean() {
			return false
		}
	}
	for _, v := range n.arr {
		if !v.clean() {
			return false
		}
	}
	return true
}

type member struct {
	key string
	val *node
}

func object(members ...member) *node { return &node{isObj: true, obj: members} }
func array(items ...*node) *node     { return &node{isArr: true, arr: items} }
func scalar(v any) *node             { return &node{scalar: v} }

// get returns the value of member key, or nil.
func (n *node) get(key string) *node {
	if n == nil || !n.isObj {
		return nil
	}
	for _, m := range n.obj {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// set sets member key, appending it when it is new.
func (n *node) set(key string, v *node) {
	n.dirty = true
	for i, m := range n.obj {
		if m.key == key {
			n.obj[i].val = v
			return
		}
	}
	n.obj = append(n.obj, member{key, v})
}

// remove removes member key.
func (n *node) remove(key string) {
	for i, m := range n.obj {
		if m.key == key {
			n.dirty = true
			n.obj = append(n.obj[:i], n.obj[i+1:]...)
			return
		}
	}
}

// str is the value of a string member, or "".
func (n *node) str(key string) string {
	s, _ := n.get(key).value().(string)
	return s
}

func (n *node) value() any {
	if n == nil {
		return nil
	}
	return n.scalar
}

// equal reports whether two values are the same JSON.
func equal(a, b *node) bool {
	if a == nil || b == nil {
		return a == b
	}
	var x, y bytes.Buffer
	a.write(&x, "")
	b.write(&y, "")
	return x.String() == y.String()
}

// parseJSON reads a configuration file's JSON, refusing what a host would
// read differently or not at all: trailing data, duplicate members.
func parseJSON(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readNode(dec, data, "$")
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the JSON value (comments are not supported)")
	}
	return n, nil
}

func readNode(dec *json.Decoder, data []byte, at string) (n *node, err error) {
	start := int(dec.InputOffset())
	for start < len(data) && strings.IndexByte(" \t\r\n:,", data[start]) >= 0 {
		start++
	}
	defer func() {
		if n != nil {
			n.raw = data[start:dec.InputOffset()]
		}
	}()
	t, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("at %s: %w", at, err)
	}
	switch t {
	case json.Delim('{'):
		n := object()
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("at %s: %w", at, err)
			}
			k := kt.(string)
			if seen[k] {
				return nil, fmt.Errorf("at %s: member %q appears twice", at, k)
			}
			seen[k] = true
			v, err := readNode(dec, data, at+"."+k)
			if err != nil {
				return nil, err
			}
			n.obj = append(n.obj, member{k, v})
		}
		_, err := dec.Token()
		return n, err
	case json.Delim('['):
		n := array()
		for i := 0; dec.More(); i++ {
			v, err := readNode(dec, data, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			n.arr = append(n.arr, v)
		}
		_, err := dec.Token()
		return n, err
	}
	return scalar(t), nil
}

// encode writes n as a configuration file indented by indent, HTML
// characters unescaped (a command's && stays &&), with a final newline.
func (n *node) encode(indent string) []byte {
	var b bytes.Buffer
	n.writeIndent(&b, "\n", indent)
	b.WriteByte('\n')
	return b.Bytes()
}

// indentOf is the indentation a file's text uses: the leading blanks of
// its first indented line, two spaces when it has none.
func indentOf(data []byte) string {
	for _, line := range strings.Split(string(data), "\n")[1:] {
		if trimmed := strings.TrimLeft(line, " \t"); trimmed != line && trimmed != "" {
			return line[:len(line)-len(trimmed)]
		}
	}
	return "  "
}

// write writes n on one line.
func (n *node) write(b *bytes.Buffer, nl string) { n.writeIndent(b, nl, "") }

// writeIndent writes n; nl is the newline and indentation of n's own line
// ("" for one line), indent one level of indentation.
func (n *node) writeIndent(b *bytes.Buffer, nl, indent string) {
	if nl != "" && n.clean() {
		b.Write(n.raw)
		return
	}
	inner := ""
	if nl != "" {
		inner = nl + indent
	}
	switch {
	case n.isObj:
		if len(n.obj) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, m := range n.obj {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(inner)
			writeScalar(b, m.key)
			b.WriteString(":")
			if nl != "" {
				b.WriteByte(' ')
			}
			m.val.writeIndent(b, inner, indent)
		}
		b.WriteString(nl)
		b.WriteByte('}')
	case n.isArr:
		if len(n.arr) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, v := range n.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(inner)
			v.writeIndent(b, inner, indent)
		}
		b.WriteString(nl)
		b.WriteByte(']')
	default:
		writeScalar(b, n.scalar)
	}
}

func writeScalar(b *bytes.Buffer, v any) {
	var s bytes.Buffer
	enc := json.NewEncoder(&s)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	b.Write(bytes.TrimRight(s.Bytes(), "\n"))
}
