// Package checkpoint writes and checks signed checkpoints of a ledger, and
// proves what they commit to.
//
// A checkpoint (format 2) is a C2SP signed note whose body is a C2SP
// tlog-checkpoint: the log's origin, its size — the number of envelopes in
// the stream — and the RFC 6962 Merkle root over every envelope in the
// stream's append order (Log). Because the tree only grows, any two
// checkpoints of one log are consistent (the smaller is a prefix of the
// larger) unless the log was rewritten, and `ledger prove` prints the
// inclusion and consistency proofs any RFC 6962 verifier checks; a witness
// that refuses to cosign two checkpoints that are not consistent turns a
// fork into evidence. After the three body lines, extension lines list
// every session's last seq and head hash: the session-head index, which
// names the sessions a cut or rewrite touched.
//
// A hash chain alone cannot show that its tail was cut off or that a whole
// suffix was rewritten with freshly computed hashes; a checkpoint taken
// before can. Checking a ledger against a checkpoint finds every session
// that is now shorter than the checkpoint says (truncated), every session
// whose envelope at the checkpointed seq has another hash (rewritten or
// forked), and, over the whole stream, a log shorter than the checkpoint
// or with another root at its size.
//
// Format 1 and 0 checkpoints (before format 2) had the number of sessions
// as their size and a Merkle root over the session heads (format 0 with
// the first, NUL-separated leaves); they are still read, and checked by
// their heads alone.
package checkpoint

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/agentledger/agentledger/ledger"
)

// KeyName names agentledger's checkpoint keys in signed notes.
const KeyName = "agentledger"

// Head is one session's state in a checkpoint.
type Head struct {
	Tenant  string
	Session string
	Seq     uint64
	Hash    string
}

func (h Head) key() ledger.SessionKey { return ledger.SessionKey{Tenant: h.Tenant, Session: h.Session} }

// Checkpoint is the state of a ledger at one moment: its origin (the
// stream), its size and Merkle root, and every session's head in (tenant,
// session) order.
type Checkpoint struct {
	// Version is the checkpoint's format: 2; or 1 or 0 for one written
	// before format 2, whose Size is the number of sessions and whose Root
	// is over their heads (format 1: length-prefixed leaves; format 0: the
	// first, NUL-separated text leaves).
	Version int
	Origin  string
	Size    int64
	Root    [32]byte
	Heads   []Head
}

// Version2 is the format New writes.
const Version2 = 2

// versionLine opens a format 2 checkpoint's extension lines.
const versionLine = "agentledger-checkpoint/2"

// New returns the checkpoint of log (its size and root now) and heads (in
// any order) for origin.
func New(origin string, log *Log, heads []Head) (*Checkpoint, error) {
	root, err := log.Root(log.Size())
	if err != nil {
		return nil, err
	}
	hs := slices.Clone(heads)
	slices.SortFunc(hs, func(a, b Head) int { return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Session, b.Session)) })
	return &Checkpoint{Version: Version2, Origin: origin, Size: log.Size(), Root: root, Heads: hs}, nil
}

// leaf is the bytes a session's head contributes to the tree, every field
// length-prefixed so that no two heads share a leaf whatever bytes their
// ids hold: uint16 big-endian length and bytes of the tenant, the same of
// the session id, the seq as uint64 big-endian, and the 32 bytes of the
// head hash.
func leaf(h Head) []byte {
	b := make([]byte, 0, 2+len(h.Tenant)+2+len(h.Session)+8+32)
	b = binary.BigEndian.AppendUint16(b, uint16(len(h.Tenant)))
	b = append(b, h.Tenant...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(h.Session)))
	b = append(b, h.Session...)
	b = binary.BigEndian.AppendUint64(b, h.Seq)
	sum, err := hex.DecodeString(h.Hash)
	if err != nil || len(sum) != 32 {
		sum = make([]byte, 32) // a malformed head: it never matches a real one
	}
	return append(b, sum...)
}

// Root is the RFC 6962 Merkle tree hash over heads' leaves, in order.
func Root(heads []Head) [32]byte {
	hashes := make([][32]byte, len(heads))
	for i, h := range heads {
		hashes[i] = sha256.Sum256(append([]byte{0}, leaf(h)...))
	}
	return treeHash(hashes)
}

func treeHash(leaves [][32]byte) [32]byte {
	switch len(leaves) {
	case 0:
		return sha256.Sum256(nil)
	case 1:
		return leaves[0]
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	l, r := treeHash(leaves[:k]), treeHash(leaves[k:])
	return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

// Text is the checkpoint's note body: origin, size and base64 root (the
// tlog-checkpoint lines), then the extension lines — the version line and
// one line per session: tenant, session (each URL path-escaped), seq and
// head hash, separated by single spaces.
func (c *Checkpoint) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
	if c.Version >= Version2 {
		fmt.Fprintf(&b, "%s %d\n", versionLine, len(c.Heads))
	}
	for _, h := range c.Heads {
		fmt.Fprintf(&b, "%s %s %d %s\n", url.PathEscape(h.Tenant), url.PathEscape(h.Session), h.Seq, h.Hash)
	}
	return b.String()
}

// Sign returns the checkpoint as a signed note.
func (c *Checkpoint) Sign(key ed25519.PrivateKey) ([]byte, error) {
	s, err := signer(key)
	if err != nil {
		return nil, err
	}
	return note.Sign(&note.Note{Text: c.Text()}, s)
}

// signer turns an Ed25519 key into a note signer named KeyName.
func signer(key ed25519.PrivateKey) (note.Signer, error) {
	vkey, err := note.NewEd25519VerifierKey(KeyName, key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	parts := strings.SplitN(vkey, "+", 3) // name, hash, key
	skey := "PRIVATE+KEY+" + KeyName + "+" + parts[1] + "+" + base64.StdEncoding.EncodeToString(append([]byte{1}, key.Seed()...))
	return note.NewSigner(skey)
}

// ErrSignature is returned when a checkpoint's signature does not verify
// with the given key.
var ErrSignature = errors.New("checkpoint signature does not verify")

// OpenWith opens a signed checkpoint with whichever key of ring (key id to
// public key, as receipt.Keyring) signed it, trying them in key-id order.
// It fails with ErrSignature when none did.
func OpenWith(msg []byte, ring map[string]ed25519.PublicKey) (*Checkpoint, error) {
	err := ErrSignature
	for _, id := range slices.Sorted(maps.Keys(ring)) {
		var c *Checkpoint
		if c, err = Open(msg, ring[id]); !errors.Is(err, ErrSignature) {
			return c, err
		}
	}
	return nil, err
}

// ErrRecordsKey is returned when a checkpoint is signed with a records
// key: a key signs for its purpose only, whatever the checkpoint's format
// (a records key that signed a format 0 checkpoint could otherwise hide a
// session it deleted behind it).
var ErrRecordsKey = fmt.Errorf("%w: it is signed with a records key, which signs records only", ErrSignature)

// OpenByRole opens a signed checkpoint with a checkpoint key of
// checkpoints, and never with a key of records, in any format: a
// checkpoint one of records signed is ErrRecordsKey. (A recording of the
// days one key signed both, format 0 and 1, is checked with that key given
// as a checkpoint key: its operator's word, not the checkpoint's.)
func OpenByRole(msg []byte, checkpoints, records map[string]ed25519.PublicKey) (*Checkpoint, error) {
	c, err := OpenWith(msg, checkpoints)
	if !errors.Is(err, ErrSignature) || len(records) == 0 {
		return c, err
	}
	if _, rerr := OpenWith(msg, records); rerr == nil {
		return nil, ErrRecordsKey
	}
	return nil, err
}

// Open verifies a signed checkpoint with pub and parses it. The root is
// recomputed from the listed heads and must match.
func Open(msg []byte, pub ed25519.PublicKey) (*Checkpoint, error) {
	n, err := openNote(msg, pub)
	if err != nil {
		return nil, err
	}
	return parse(n.Text)
}

// openNote verifies a signed checkpoint's signature with pub (ErrSignature
// when it does not verify) and returns the note.
func openNote(msg []byte, pub ed25519.PublicKey) (*note.Note, error) {
	vkey, err := note.NewEd25519VerifierKey(KeyName, pub)
	if err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, err
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSignature, err)
	}
	return n, nil
}

// ParseNote reads a signed checkpoint without checking its signature:
// its body alone (for a checkpoint embedded in a ledger record, whose own
// signature vouches for it, or when no checkpoint key is at hand).
func ParseNote(msg []byte) (*Checkpoint, error) {
	body, _, ok := strings.Cut(string(msg), "\n\n")
	if !ok {
		return nil, errors.New("checkpoint: not a signed note (no blank line before the signatures)")
	}
	return parse(body + "\n")
}

func parse(text string) (*Checkpoint, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 {
		return nil, errors.New("checkpoint: want origin, size and root lines")
	}
	c := &Checkpoint{Version: 1, Origin: lines[0]}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return nil, fmt.Errorf("checkpoint: size line %q is not a decimal size", lines[1])
	}
	c.Size = size
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != 32 {
		return nil, fmt.Errorf("checkpoint: root line %q is not a base64 SHA-256", lines[2])
	}
	copy(c.Root[:], root)
	heads := lines[3:]
	if len(heads) > 0 && strings.HasPrefix(heads[0], versionLine+" ") {
		c.Version = Version2
		n, err := strconv.Atoi(strings.TrimPrefix(heads[0], versionLine+" "))
		if heads = heads[1:]; err != nil || n != len(heads) {
			return nil, fmt.Errorf("checkpoint: version line %q does not match its %d session lines", lines[3], len(heads))
		}
	} else if size != int64(len(heads)) {
		return nil, fmt.Errorf("checkpoint: size line %q does not match its %d session lines (format 1)", lines[1], len(heads))
	}
	for i, l := range heads {
		f := strings.Split(l, " ")
		if len(f) != 4 {
			return nil, fmt.Errorf("checkpoint line %d: want tenant, session, seq, head", i+len(lines)-len(heads)+1)
		}
		t, err1 := url.PathUnescape(f[0])
		s, err2 := url.PathUnescape(f[1])
		seq, err3 := strconv.ParseUint(f[2], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("checkpoint line %d: %w", i+len(lines)-len(heads)+1, err)
		}
		c.Heads = append(c.Heads, Head{Tenant: t, Session: s, Seq: seq, Hash: f[3]})
	}
	if c.Version == 1 {
		if r := Root(c.Heads); !bytes.Equal(r[:], root) {
			if r0 := rootV0(c.Heads); !bytes.Equal(r0[:], root) {
				return nil, errors.New("checkpoint: the root does not match the listed sessions (format 1 or 0)")
			}
			c.Version = 0
		}
	}
	return c, nil
}

// rootV0 is the root of a format 0 checkpoint (the first format): each
// head's leaf the text tenant NUL session NUL seq (decimal) NUL hash.
func rootV0(heads []Head) [32]byte {
	hashes := make([][32]byte, len(heads))
	for i, h := range heads {
		hashes[i] = sha256.Sum256(fmt.Appendf([]byte{0}, "%s\x00%s\x00%d\x00%s", h.Tenant, h.Session, h.Seq, h.Hash))
	}
	return treeHash(hashes)
}

// Fault kinds a checkpoint finds.
const (
	// LogTruncated: the stream holds fewer envelopes than the checkpoint's
	// size (its tail was cut off).
	LogTruncated ledger.FaultKind = "log_truncated"
	// LogRewritten: the first size envelopes of the stream have another
	// Merkle root than the checkpoint's (something in them was changed,
	// removed or inserted: the log forked).
	LogRewritten ledger.FaultKind = "log_rewritten"
	// Truncated: the session is shorter than the checkpoint says, or gone.
	Truncated ledger.FaultKind = "truncated"
	// Rewritten: the envelope at the checkpointed seq has another hash
	// (the suffix was rewritten, or the chain forked).
	Rewritten ledger.FaultKind = "rewritten"
)

// Fault kinds two checkpoints of one ledger find between them.
const (
	// SplitView: two checkpoints of one log's size with two roots, or one
	// session's envelope at one seq with two hashes: the ledger was shown
	// forked.
	SplitView ledger.FaultKind = "split_view"
	// RolledBack: a session the checkpoint of the smaller log lists stands
	// further back in (or is missing from) the checkpoint of the larger.
	RolledBack ledger.FaultKind = "rolled_back"
	// NotCosigned: a checkpoint given lacks the cosignature of a witness
	// the verifier requires.
	NotCosigned ledger.FaultKind = "not_cosigned"
	// CosignedOther: a checkpoint carries a witness's cosignature line
	// made over another note: the witness saw a view of the log the
	// verifier did not receive.
	CosignedOther ledger.FaultKind = "cosigned_other"
)

// Consistent returns the faults between two checkpoints of one ledger
// (their names na and nb, for the faults' details): a log only grows, so
// format 2 checkpoints of one size have one root, and every session the
// checkpoint of the smaller log lists reaches at least as far in the
// larger, with the same head where it stands at the same seq.
func Consistent(a, b *Checkpoint, na, nb string) []*ledger.ChainError {
	if a.Size > b.Size {
		a, b, na, nb = b, a, nb, na
	}
	var faults []*ledger.ChainError
	if a.Version >= Version2 && b.Version >= Version2 && a.Size == b.Size && a.Root != b.Root {
		faults = append(faults, &ledger.ChainError{Kind: SplitView, Tenant: "agentledger", Session: "log", Seq: uint64(a.Size),
			Want: base64.StdEncoding.EncodeToString(a.Root[:]), Got: base64.StdEncoding.EncodeToString(b.Root[:]),
			Detail: fmt.Sprintf("checkpoints %s and %s: one log size, two roots", na, nb)})
	}
	later := map[ledger.SessionKey]Head{}
	for _, h := range b.Heads {
		later[h.key()] = h
	}
	for _, h := range a.Heads {
		got, ok := later[h.key()]
		switch {
		case !ok || got.Seq < h.Seq:
			where := "not at all"
			if ok {
				where = fmt.Sprintf("at seq %d", got.Seq)
			}
			faults = append(faults, &ledger.ChainError{Kind: RolledBack, Tenant: h.Tenant, Session: h.Session, Seq: h.Seq, Want: h.Hash,
				Detail: fmt.Sprintf("checkpoint %s has the session at seq %d; %s, of a log at least as large, %s", na, h.Seq, nb, where)})
		case got.Seq == h.Seq && got.Hash != h.Hash:
			faults = append(faults, &ledger.ChainError{Kind: SplitView, Tenant: h.Tenant, Session: h.Session, Seq: h.Seq, Want: h.Hash, Got: got.Hash,
				Detail: fmt.Sprintf("checkpoints %s and %s name two heads at one seq", na, nb)})
		}
	}
	return faults
}

// HashAt returns the hash of a session's envelope at seq as the ledger
// holds it now, and whether the session reaches seq at all.
type HashAt func(ctx context.Context, k ledger.SessionKey, seq uint64) (hash string, ok bool, err error)

// Check compares the ledger (through hashAt) with c and returns a fault
// for every session that is shorter than c says or differs at its
// checkpointed seq. Sessions created after c are not its business.
func (c *Checkpoint) Check(ctx context.Context, hashAt HashAt) ([]*ledger.ChainError, error) {
	var faults []*ledger.ChainError
	for _, h := range c.Heads {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		got, ok, err := hashAt(ctx, h.key(), h.Seq)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h.key(), err)
		}
		switch {
		case !ok:
			faults = append(faults, &ledger.ChainError{Kind: Truncated, Tenant: h.Tenant, Session: h.Session, Seq: h.Seq,
				Want: h.Hash, Detail: fmt.Sprintf("the checkpoint has the session up to seq %d; the ledger ends before it", h.Seq)})
		case got != h.Hash:
			faults = append(faults, &ledger.ChainError{Kind: Rewritten, Tenant: h.Tenant, Session: h.Session, Seq: h.Seq,
				Want: h.Hash, Got: got, Detail: "the envelope at the checkpointed seq has another hash"})
		}
	}
	return faults, nil
}

// CheckLog compares the log of a whole stream with c (format 2): a fault
// when the log is shorter than c or has another root at c's size. The
// fault names no session (Tenant "agentledger", Session "log"); its Seq
// is c's size. A format 1 checkpoint commits to no log: nil.
func (c *Checkpoint) CheckLog(l *Log) *ledger.ChainError {
	if c.Version < Version2 {
		return nil
	}
	if l.Size() < c.Size {
		return &ledger.ChainError{Kind: LogTruncated, Tenant: "agentledger", Session: "log", Seq: uint64(c.Size),
			Detail: fmt.Sprintf("the checkpoint has %d envelopes; the stream holds %d", c.Size, l.Size())}
	}
	if c.Size > 0 && !strings.HasSuffix(c.Origin, "/"+strings.TrimPrefix(Origin("", l), "agentledger//")) {
		return &ledger.ChainError{Kind: LogRewritten, Tenant: "agentledger", Session: "log", Seq: uint64(c.Size),
			Detail: fmt.Sprintf("the checkpoint's origin %s names another log than the stream's (its first envelope)", c.Origin)}
	}
	root, err := l.Root(c.Size)
	if err != nil || root != c.Root {
		return &ledger.ChainError{Kind: LogRewritten, Tenant: "agentledger", Session: "log", Seq: uint64(c.Size),
			Want: base64.StdEncoding.EncodeToString(c.Root[:]), Got: base64.StdEncoding.EncodeToString(root[:]),
			Detail: fmt.Sprintf("the first %d envelopes of the stream have another Merkle root than the checkpoint's", c.Size)}
	}
	return nil
}

// Heads returns the head of each chain (each one session's envelopes in
// seq order).
func Heads(chains [][]*ledger.Envelope) []Head {
	var hs []Head
	for _, c := range chains {
		if len(c) == 0 {
			continue
		}
		last := c[len(c)-1]
		hs = append(hs, Head{Tenant: last.TenantID(), Session: last.SessionID(), Seq: last.Seq(), Hash: last.Hash()})
	}
	return hs
}

// InChains answers HashAt from chains in memory (a loaded bundle).
func InChains(chains [][]*ledger.Envelope) HashAt {
	idx := map[ledger.SessionKey][]*ledger.Envelope{}
	for _, c := range chains {
		if len(c) > 0 {
			idx[c[0].Key()] = c
		}
	}
	return func(_ context.Context, k ledger.SessionKey, seq uint64) (string, bool, error) {
		c := idx[k]
		i, found := slices.BinarySearchFunc(c, seq, func(e *ledger.Envelope, s uint64) int { return cmp.Compare(e.Seq(), s) })
		if !found {
			return "", false, nil
		}
		return c[i].Hash(), true, nil
	}
}

// InVerifier answers HashAt from what a ledger.Verifier read in its pass
// (ledger verify checks a checkpoint in the same pass as the chains).
func InVerifier(v *ledger.Verifier) HashAt {
	return func(_ context.Context, k ledger.SessionKey, seq uint64) (string, bool, error) {
		h, ok := v.HashAt(k, seq)
		return h, ok, nil
	}
}
