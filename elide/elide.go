// Package elide fits a JSON document under a size limit by cutting its
// longest string values to an excerpt, and says what it cut: each cut value's
// place (a JSON Pointer, RFC 6901), length and SHA-256. It is how a hook
// input larger than the record's limit (a 1.3 MB package-lock.json written,
// a long test log read back) is recorded and judged on what can be read,
// instead of being refused for its size. It is pure: no I/O, no clock.
package elide

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentledger/agentledger/detect"
)

// Member is the event member in which an engine records what it cut.
const Member = "elided"

// DefaultKeep is how much of a cut value stays, at most: its first bytes,
// on a character boundary.
const DefaultKeep = 16 << 10

// Cut is one string value shortened to fit.
type Cut struct {
	// Pointer is where the value was, as a JSON Pointer into the document
	// as it was given.
	Pointer string `json:"pointer"`
	// Size is the value's length in bytes (UTF-8).
	Size int `json:"size"`
	// SHA256 is the hex SHA-256 of the whole value (its UTF-8 bytes).
	SHA256 string `json:"sha256"`
	// Kept is how many of its first bytes the document still holds.
	Kept int `json:"kept"`
	// Found names what the caller's scan found in the whole value (kinds of
	// sensitive data, never the data), so that what was cut still counts.
	Found []string `json:"found,omitempty"`
}

// ErrStructure means cutting string values cannot bring the document under
// the limit: its size is in its structure (keys, numbers, many short
// values), which is not cut.
var ErrStructure = errors.New("the document is over the limit in its structure, not in long strings")

// Fit returns doc unchanged when it is at most limit bytes; otherwise the
// document with its longest string values cut to at most keep bytes each
// (DefaultKeep when keep <= 0), longest first, until it fits, and the cuts
// in document order, each with what scan (when not nil) found in the whole
// value. doc must be one JSON value; duplicate keys and other defects
// should be refused before (canon). Object members keep their order;
// numbers are kept as written. The result is deterministic when scan is.
func Fit(doc []byte, limit, keep int, scan func(string) []string) ([]byte, []Cut, error) {
	if len(doc) <= limit {
		return doc, nil, nil
	}
	if keep <= 0 {
		keep = DefaultKeep
	}
	root, err := parse(doc)
	if err != nil {
		return nil, nil, err
	}
	var strs []*node
	root.walk("", func(n *node) { strs = append(strs, n) })
	order := slices.Clone(strs)
	slices.SortStableFunc(order, func(a, b *node) int { return cmp.Compare(len(b.str), len(a.str)) })
	size := len(doc)
	var cuts []*node
	for _, n := range order {
		if size <= limit || len(n.str) <= keep {
			break
		}
		before := encodedLen(n.str)
		n.cut = true
		n.kept = excerpt(n.str, keep)
		size -= before - encodedLen(n.kept)
		cuts = append(cuts, n)
	}
	out := root.encode(nil)
	if len(out) > limit {
		return nil, nil, fmt.Errorf("%w (%d bytes after cutting %d values, limit %d)", ErrStructure, len(out), len(cuts), limit)
	}
	var list []Cut
	for _, n := range strs {
		if n.cut {
			sum := sha256.Sum256([]byte(n.str))
			c := Cut{Pointer: n.pointer, Size: len(n.str), SHA256: hex.EncodeToString(sum[:]), Kept: len(n.kept)}
			if scan != nil {
				c.Found = scan(n.str)
			}
			list = append(list, c)
		}
	}
	return out, list, nil
}

// excerpt is the first at most keep bytes of s, ending on a character,
// and before any secret or piece of personal data the cut would split: a
// part of one is something no detector recognizes, to seal or redact.
func excerpt(s string, keep int) string {
	if len(s) <= keep {
		return s
	}
	from := max(0, keep-straddle)
	for _, sp := range detect.Spans(s[from:min(len(s), keep+straddle)]) {
		if from+sp.Start < keep && keep < from+sp.End {
			keep = from + sp.Start
			break
		}
	}
	s = s[:keep]
	for len(s) > 0 {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1] // part of a character cut in two
	}
	return s
}

// straddle is how far either side of a cut excerpt looks for a value the
// cut would split (a private key block can be longer; its header is what
// the detectors find, and a cut after the header leaves it found).
const straddle = 4 << 10

func encodedLen(s string) int {
	b, _ := marshal(s)
	return len(b)
}

// node is a parsed JSON value that keeps member order and number text.
type node struct {
	kind    byte // '{', '[', '"', or 0 for a literal kept as written
	keys    []string
	items   []*node
	str     string
	raw     json.RawMessage
	pointer string
	cut     bool
	kept    string
}

func parse(doc []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	n, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("more than one JSON value")
	}
	return n, nil
}

func parseValue(dec *json.Decoder) (*node, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := t.(type) {
	case json.Delim:
		n := &node{kind: byte(v)}
		for dec.More() {
			if v == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				n.keys = append(n.keys, key)
			}
			item, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, item)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &node{kind: '"', str: v}, nil
	case json.Number:
		return &node{raw: json.RawMessage(v.String())}, nil
	default:
		raw, _ := json.Marshal(v) // true, false, null
		return &node{raw: raw}, nil
	}
}

// walk sets every node's pointer and calls fn on each string, in
// document order.
func (n *node) walk(at string, fn func(*node)) {
	n.pointer = at
	switch n.kind {
	case '"':
		fn(n)
	case '{':
		for i, item := range n.items {
			item.walk(at+"/"+escape(n.keys[i]), fn)
		}
	case '[':
		for i, item := range n.items {
			item.walk(at+"/"+strconv.Itoa(i), fn)
		}
	}
}

func escape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

func (n *node) encode(b []byte) []byte {
	switch n.kind {
	case '"':
		s := n.str
		if n.cut {
			s = n.kept
		}
		q, _ := marshal(s)
		return append(b, q...)
	case '{', '[':
		b = append(b, n.kind)
		for i, item := range n.items {
			if i > 0 {
				b = append(b, ',')
			}
			if n.kind == '{' {
				q, _ := marshal(n.keys[i])
				b = append(append(b, q...), ':')
			}
			b = item.encode(b)
		}
		if n.kind == '{' {
			return append(b, '}')
		}
		return append(b, ']')
	default:
		return append(b, n.raw...)
	}
}

// marshal encodes a string as JSON without HTML escaping.
func marshal(s string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
