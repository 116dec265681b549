package checkpoint

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// ErrFork is returned when a witness is asked to cosign a checkpoint that
// is not consistent with the last one it cosigned for the same log: the
// same size with another root, a smaller size, or a larger one without a
// valid consistency proof.
var ErrFork = errors.New("not consistent with the last checkpoint cosigned")

// Seen is what a witness remembers of one log: the size and root of the
// last checkpoint it cosigned.
type Seen struct {
	Size int64  `json:"size"`
	Root string `json:"root"` // base64
	// Key is the id of the log key that signed it: a witness follows one
	// log per key, so that a renamed origin is not a new log — one per
	// stream of a ledger spread over several (OtherStreams), whose key
	// signs each stream's log.
	Key string `json:"key"`
}

// Witness cosigns checkpoints of logs it follows (C2SP tlog-cosignature,
// Ed25519), each only if it is consistent with the last one it cosigned
// for that log: it never signs two views of one log that cannot both be
// true.
type Witness struct {
	Name string
	Key  ed25519.PrivateKey
	// Seen holds, by origin, the last checkpoint cosigned; Cosign updates
	// it, and the caller keeps it durably.
	Seen map[string]Seen
}

// Cosign verifies msg, a checkpoint signed with logKey, against the last
// checkpoint cosigned for its origin — equal, or a prefix proven by proof
// (a consistency proof from that size and root to msg's) — and returns msg
// with the witness's cosignature added. A checkpoint that is not
// consistent is ErrFork, and nothing is signed or remembered.
func (w *Witness) Cosign(msg []byte, logKey ed25519.PublicKey, proof *ConsistencyProof, now time.Time) ([]byte, error) {
	n, err := openNote(msg, logKey)
	if err != nil {
		return nil, err
	}
	cp, err := parse(n.Text)
	if err != nil {
		return nil, err
	}
	if cp.Version < Version2 {
		return nil, fmt.Errorf("a format %d checkpoint commits to no log: nothing to witness", cp.Version)
	}
	root := base64.StdEncoding.EncodeToString(cp.Root[:])
	if !validOrigin(cp.Origin) {
		return nil, fmt.Errorf("origin %q is not agentledger/<stream>/<log id>", cp.Origin)
	}
	keyID := logKeyID(logKey)
	for origin, seen := range w.Seen {
		if seen.Key == keyID && origin != cp.Origin && !OtherStreams(origin, cp.Origin) {
			return nil, fmt.Errorf("%s: %w: its key signs the log %s, which this witness follows", cp.Origin, ErrFork, origin)
		}
	}
	if seen, ok := w.Seen[cp.Origin]; ok {
		if seen.Key != "" && seen.Key != keyID {
			return nil, fmt.Errorf("%s: %w: signed with another key than the log's", cp.Origin, ErrFork)
		}
		if err := consistent(seen, cp.Size, root, proof); err != nil {
			return nil, fmt.Errorf("%s at size %d: %w: %w", cp.Origin, cp.Size, ErrFork, err)
		}
	}
	out, err := note.Sign(n, &cosigner{name: w.Name, key: w.Key, at: now})
	if err != nil {
		return nil, err
	}
	if w.Seen == nil {
		w.Seen = map[string]Seen{}
	}
	w.Seen[cp.Origin] = Seen{Size: cp.Size, Root: root, Key: keyID}
	return out, nil
}

// logKeyID names a log key in a witness's state: the first 16 hex digits
// of the SHA-256 of the public key.
func logKeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// validOrigin reports whether origin has the form of a format 2
// checkpoint's: agentledger/<stream>/<16 hex digits or "empty">.
func validOrigin(origin string) bool {
	rest, ok := strings.CutPrefix(origin, "agentledger/")
	stream, id, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || stream == "" || strings.ContainsAny(stream, " /") {
		return false
	}
	if id == "empty" {
		return true
	}
	_, err := hex.DecodeString(id)
	return err == nil && len(id) == 16 && strings.ToLower(id) == id
}

// consistent reports whether a checkpoint of size and root may follow the
// one seen.
func consistent(seen Seen, size int64, root string, proof *ConsistencyProof) error {
	switch {
	case size < seen.Size:
		return fmt.Errorf("the log was cosigned at size %d already", seen.Size)
	case size == seen.Size && root != seen.Root:
		return fmt.Errorf("size %d was cosigned with root %s, this has %s", size, seen.Root, root)
	case size == seen.Size:
		return nil
	case proof == nil:
		return fmt.Errorf("a consistency proof from size %d is needed (ledger prove consistency)", seen.Size)
	case proof.OldSize != seen.Size || proof.OldRoot != seen.Root || proof.NewSize != size || proof.NewRoot != root:
		return fmt.Errorf("the proof is from size %d to %d, not from the size and root cosigned (%d) to this checkpoint's (%d)", proof.OldSize, proof.NewSize, seen.Size, size)
	}
	return proof.Check()
}

// cosigner is a note.Signer making C2SP tlog-cosignature/v1 Ed25519
// signatures: over "cosignature/v1\ntime T\n" and the note body, as
// timestamp (uint64, big-endian) ‖ signature.
type cosigner struct {
	name string
	key  ed25519.PrivateKey
	at   time.Time
}

func (c *cosigner) Name() string { return c.name }

// KeyHash is SHA-256(name ‖ "\n" ‖ 0x04 ‖ public key)[:4].
func (c *cosigner) KeyHash() uint32 {
	return CosignerKeyHash(c.name, c.key.Public().(ed25519.PublicKey))
}

func (c *cosigner) Sign(msg []byte) ([]byte, error) {
	t := uint64(c.at.Unix())
	signed := append([]byte("cosignature/v1\ntime "+strconv.FormatUint(t, 10)+"\n"), msg...)
	return append(binary.BigEndian.AppendUint64(nil, t), ed25519.Sign(c.key, signed)...), nil
}

// CosignerKeyHash is the key id of an Ed25519 cosigner's signature lines.
func CosignerKeyHash(name string, pub ed25519.PublicKey) uint32 {
	h := sha256.Sum256(append(append([]byte(name+"\n"), 0x04), pub...))
	return binary.BigEndian.Uint32(h[:4])
}

// ErrCosignature is returned when a checkpoint carries no cosignature of a
// witness.
var ErrCosignature = errors.New("no valid cosignature of the witness")

// ErrCosignedOther is returned when a checkpoint carries a witness's
// cosignature line that does not verify over its text: the witness
// cosigned another note (a view of the log this verifier did not
// receive), and the line was copied or the text edited.
var ErrCosignedOther = fmt.Errorf("%w: its cosignature is over another note than this one (a view the verifier did not receive)", ErrCosignature)

// CheckCosignature checks that msg, a signed checkpoint, carries a valid
// tlog-cosignature/v1 (Ed25519) of the witness name with key pub. A
// cosignature line of that witness over another note is ErrCosignedOther.
func CheckCosignature(msg []byte, name string, pub ed25519.PublicKey) error {
	v := &cosignVerifier{name: name, pub: pub}
	_, err := note.Open(msg, note.VerifierList(v))
	var bad *note.InvalidSignatureError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &bad):
		return fmt.Errorf("%s: %w", name, ErrCosignedOther)
	}
	return fmt.Errorf("%s: %w: %w", name, ErrCosignature, err)
}

// Cosigners returns the names on msg's signature lines other than the log
// key's (KeyName): the witnesses (or anyone) that added a signature, in
// the order the lines come.
func Cosigners(msg []byte) []string {
	_, sigs, ok := strings.Cut(string(msg), "\n\n")
	if !ok {
		return nil
	}
	var out []string
	for _, line := range strings.Split(sigs, "\n") {
		rest, ok := strings.CutPrefix(line, "\u2014 ")
		if i := strings.LastIndex(rest, " "); ok && i > 0 && rest[:i] != KeyName && !slices.Contains(out, rest[:i]) {
			out = append(out, rest[:i])
		}
	}
	return out
}

// cosignVerifier verifies the cosignature lines of one witness.
type cosignVerifier struct {
	name string
	pub  ed25519.PublicKey
}

func (v *cosignVerifier) Name() string    { return v.name }
func (v *cosignVerifier) KeyHash() uint32 { return CosignerKeyHash(v.name, v.pub) }

func (v *cosignVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig[:8])
	signed := append([]byte("cosignature/v1\ntime "+strconv.FormatUint(t, 10)+"\n"), msg...)
	return ed25519.Verify(v.pub, signed, sig[8:])
}
