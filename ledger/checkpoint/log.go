package checkpoint

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// Log is the Merkle tree (RFC 6962; RFC 9162 §2.1) over every envelope of
// a ledger's stream, in the stream's append order: leaf i is the stored
// bytes of the envelope at stream position i+1, its leaf hash
// SHA-256(0x00 || bytes). Appending only ever adds leaves, so a tree of
// size n is a prefix of every later tree, and a consistency proof shows
// it. The zero Log is empty and ready to use; it is not safe for
// concurrent use.
type Log struct {
	stored []tlog.Hash // tlog's stored hashes: every complete subtree
	n      int64
}

// Add appends one envelope's stored bytes as the next leaf.
func (l *Log) Add(envelope []byte) {
	l.AddHash(tlog.RecordHash(envelope))
}

// AddHash appends a leaf by its leaf hash.
func (l *Log) AddHash(leaf tlog.Hash) {
	hs, err := tlog.StoredHashesForRecordHash(l.n, leaf, l.reader())
	if err != nil {
		panic(err) // every index it reads is below l.n's stored hashes
	}
	l.stored = append(l.stored, hs...)
	l.n++
}

// Size is the number of leaves.
func (l *Log) Size() int64 { return l.n }

func (l *Log) reader() tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(l.stored)) {
				return nil, fmt.Errorf("log: stored hash %d of %d", x, len(l.stored))
			}
			out[i] = l.stored[x]
		}
		return out, nil
	})
}

// Root is the root hash of the tree of the first size leaves.
func (l *Log) Root(size int64) ([32]byte, error) {
	if size < 0 || size > l.n {
		return [32]byte{}, fmt.Errorf("log: no tree of size %d (the log has %d envelopes)", size, l.n)
	}
	h, err := tlog.TreeHash(size, l.reader())
	return h, err
}

// Leaf is the leaf hash of leaf i.
func (l *Log) Leaf(i int64) ([32]byte, error) {
	if i < 0 || i >= l.n {
		return [32]byte{}, fmt.Errorf("log: no leaf %d (the log has %d envelopes)", i, l.n)
	}
	return l.stored[tlog.StoredHashIndex(0, i)], nil
}

// Origin is the origin line of the checkpoints of a log kept in stream:
// "agentledger/<stream>/<log id>", the log id the first 16 hex digits of
// the leaf hash of its first envelope — which never changes, and tells two
// ledgers with the same stream name apart ("empty" before the first).
func Origin(stream string, l *Log) string {
	id := "empty"
	if leaf, err := l.Leaf(0); err == nil {
		id = hex.EncodeToString(leaf[:8])
	}
	return "agentledger/" + stream + "/" + id
}

// StreamOf is the stream an origin names (agentledger/<stream>/...), ""
// when it names none. In a ledger spread over several streams each stream
// is a log of its own, with checkpoints of its own: this says which.
func StreamOf(origin string) string {
	rest, ok := strings.CutPrefix(origin, "agentledger/")
	if !ok {
		return ""
	}
	stream, _, _ := strings.Cut(rest, "/")
	return stream
}

// OtherStreams reports whether origins a and b name two streams of one
// ledger spread over several (L-i and L-j, i ≠ j, as ledger/store names
// them): two logs, whose checkpoints say nothing about each other.
func OtherStreams(a, b string) bool {
	sa, sb := StreamOf(a), StreamOf(b)
	la, oka := ledgerOf(sa)
	lb, okb := ledgerOf(sb)
	return oka && okb && la == lb && sa != sb
}

// ledgerOf is the ledger a stream named L-i is stream i of.
func ledgerOf(stream string) (string, bool) {
	i := strings.LastIndexByte(stream, '-')
	if i <= 0 || i == len(stream)-1 || len(stream)-i > 2 && stream[i+1] == '0' {
		return "", false
	}
	for _, c := range stream[i+1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return stream[:i], true
}

// InclusionProof is the audit path of leaf Index in the tree of size
// TreeSize (RFC 9162 §2.1.3), JSON as `ledger prove inclusion` prints it.
type InclusionProof struct {
	Version  int      `json:"v"`
	Index    int64    `json:"leaf_index"`
	TreeSize int64    `json:"tree_size"`
	LeafHash string   `json:"leaf_hash"` // base64
	Root     string   `json:"root"`      // base64
	Path     []string `json:"path"`      // base64, leaf to root
}

// ConsistencyProof shows the tree of size OldSize is a prefix of the tree
// of size NewSize (RFC 9162 §2.1.4).
type ConsistencyProof struct {
	Version int      `json:"v"`
	OldSize int64    `json:"old_size"`
	NewSize int64    `json:"new_size"`
	OldRoot string   `json:"old_root"`
	NewRoot string   `json:"new_root"`
	Path    []string `json:"path"`
}

// ProofVersion is the version of the proof formats.
const ProofVersion = 1

// ProveInclusion proves leaf i is in the tree of size size.
func (l *Log) ProveInclusion(i, size int64) (*InclusionProof, error) {
	if i < 0 || i >= size {
		return nil, fmt.Errorf("log: leaf %d is not in a tree of size %d", i, size)
	}
	root, err := l.Root(size)
	if err != nil {
		return nil, err
	}
	p, err := tlog.ProveRecord(size, i, l.reader())
	if err != nil {
		return nil, err
	}
	leaf, _ := l.Leaf(i)
	return &InclusionProof{Version: ProofVersion, Index: i, TreeSize: size, LeafHash: b64(leaf), Root: b64(root), Path: b64s(p)}, nil
}

// ProveConsistency proves the tree of size old is a prefix of the tree of
// size size.
func (l *Log) ProveConsistency(old, size int64) (*ConsistencyProof, error) {
	if old < 0 || old > size {
		return nil, fmt.Errorf("log: no consistency from size %d to %d", old, size)
	}
	oldRoot, err := l.Root(old)
	if err != nil {
		return nil, err
	}
	newRoot, err := l.Root(size)
	if err != nil {
		return nil, err
	}
	var p tlog.TreeProof
	if old > 0 {
		if p, err = tlog.ProveTree(size, old, l.reader()); err != nil {
			return nil, err
		}
	}
	return &ConsistencyProof{Version: ProofVersion, OldSize: old, NewSize: size, OldRoot: b64(oldRoot), NewRoot: b64(newRoot), Path: b64s(p)}, nil
}

// Check verifies an inclusion proof against its own root (which the
// caller compares with a signed checkpoint's).
func (p *InclusionProof) Check() error {
	path, err := unb64s(p.Path)
	leaf, err1 := unb64(p.LeafHash)
	root, err2 := unb64(p.Root)
	if err != nil || err1 != nil || err2 != nil {
		return fmt.Errorf("inclusion proof: malformed hash")
	}
	if err := tlog.CheckRecord(path, p.TreeSize, root, p.Index, leaf); err != nil {
		return fmt.Errorf("inclusion proof: %w", err)
	}
	return nil
}

// Check verifies a consistency proof between its two roots.
func (p *ConsistencyProof) Check() error {
	path, err := unb64s(p.Path)
	oldRoot, err1 := unb64(p.OldRoot)
	newRoot, err2 := unb64(p.NewRoot)
	if err != nil || err1 != nil || err2 != nil {
		return fmt.Errorf("consistency proof: malformed hash")
	}
	if p.OldSize == 0 || p.OldSize == p.NewSize {
		if p.OldSize == p.NewSize && oldRoot != newRoot {
			return fmt.Errorf("consistency proof: two trees of size %d with different roots", p.OldSize)
		}
		return nil
	}
	if err := tlog.CheckTree(path, p.NewSize, newRoot, p.OldSize, oldRoot); err != nil {
		return fmt.Errorf("consistency proof: %w", err)
	}
	return nil
}

func b64(h tlog.Hash) string { return base64.StdEncoding.EncodeToString(h[:]) }

func b64s(hs []tlog.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = b64(h)
	}
	return out
}

func unb64(s string) (tlog.Hash, error) {
	var h tlog.Hash
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("not a base64 SHA-256: %q", s)
	}
	copy(h[:], b)
	return h, nil
}

func unb64s(ss []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(ss))
	for i, s := range ss {
		h, err := unb64(s)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}
