package ledger

import (
	"strings"
	"unicode/utf8"

	"github.com/agentledger/agentledger/canon"
	"github.com/agentledger/agentledger/detect"
)

// The canonicalizer is package canon; these names keep the ledger's API
// whole for its callers.

// Limits bound what the decoder accepts (canon.Limits).
type Limits = canon.Limits

// Default limits.
const (
	DefaultMaxDepth = canon.DefaultMaxDepth
	DefaultMaxBytes = canon.DefaultMaxBytes
)

// maxSafeInteger is 2^53-1 (canon.MaxSafeInteger).
const maxSafeInteger = canon.MaxSafeInteger

// ErrInvalidInput is the parent of every input rejection (canon.ErrInvalidInput).
var ErrInvalidInput = canon.ErrInvalidInput

// InputError says what is wrong with an input and where (canon.InputError).
type InputError = canon.InputError

// AtLine returns err with its line set (canon.AtLine).
func AtLine(err error, line int) error { return canon.AtLine(err, line) }

// Canonicalize validates data as I-JSON and returns its RFC 8785 form
// (canon.Canonicalize).
func Canonicalize(data []byte, lim Limits) ([]byte, error) { return canon.Canonicalize(data, lim) }

// AppendCanonical is Canonicalize appending to dst (canon.AppendCanonical).
func AppendCanonical(dst, data []byte, lim Limits) ([]byte, error) {
	return canon.AppendCanonical(dst, data, lim)
}

// CheckRecordKeys rejects, in the payload of a record agentledger writes
// itself (Verdict, Resolution, EngineFailure, Checkpoint, Rejected), keys
// that differ only by case folding ("decision" and "deciſion"): such a
// record reads one way to a reader that matches keys exactly (jq, Python)
// and another way to one that folds case (Go's encoding/json). Hook events
// are the hosts' words, kept as sent; agentledger reads them by exact key.
func CheckRecordKeys(eventType string, payload []byte, lim Limits) error {
	if !IsRecordType(eventType) {
		return nil
	}
	if err := canon.CheckFoldedKeys(payload, lim); err != nil {
		return prefixPath(err, "$.payload")
	}
	return nil
}

// clip is the start of a value an error quotes: its secrets redacted
// first (detect.RedactJSONText), then cut, so that a cut never leaves part
// of a secret no detector recognizes.
func clip(b []byte) string {
	s := detect.RedactJSONText(strings.ToValidUTF8(string(b), "\uFFFD"))
	if len(s) <= clipBytes {
		return s
	}
	n := clipBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// clipBytes is how much of a value an error quotes.
const clipBytes = 40

func decodeKey(k []byte, escaped bool) string { return canon.DecodeKey(k, escaped) }

const hexDigits = canon.HexDigits
