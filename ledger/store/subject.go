package store

import (
	"fmt"
	"strings"

	"github.com/agentledger/agentledger/ledger"
)

// EscapeToken turns any session id into one NATS subject token. Bytes in
// [A-Za-z0-9_-] stand for themselves; every other byte (including '.', '*',
// '>', whitespace, '/', '%' and each byte of a non-ASCII character) becomes
// %XX with uppercase hex. The mapping is injective, so distinct ids never
// share a subject, and UnescapeToken inverts it.
func EscapeToken(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&0xF])
	}
	return b.String()
}

const upperHex = "0123456789ABCDEF"

// UnescapeToken inverts EscapeToken.
func UnescapeToken(t string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(t) {
			return "", fmt.Errorf("subject token %q: truncated escape", t)
		}
		hi, lo := unhex(t[i+1]), unhex(t[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("subject token %q: bad escape %q", t, t[i:i+3])
		}
		b.WriteByte(byte(hi<<4 | lo))
		i += 2
	}
	return b.String(), nil
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// subjects maps session keys to subjects of one stream.
type subjects struct {
	prefix string // e.g. "ledger"
}

func (s subjects) of(k ledger.SessionKey) string {
	return s.prefix + "." + k.Tenant + "." + EscapeToken(k.Session)
}

func (s subjects) tenant(t string) string { return s.prefix + "." + t + ".*" }

func (s subjects) all() string { return s.prefix + ".>" }

func (s subjects) session(id string) string { return s.prefix + ".*." + EscapeToken(id) }

func (s subjects) key(subject string) (ledger.SessionKey, error) {
	rest, ok := strings.CutPrefix(subject, s.prefix+".")
	if !ok {
		return ledger.SessionKey{}, fmt.Errorf("subject %q is outside %s.>", subject, s.prefix)
	}
	tenant, tok, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(tok, ".") {
		return ledger.SessionKey{}, fmt.Errorf("subject %q is not %s.<tenant>.<session>", subject, s.prefix)
	}
	session, err := UnescapeToken(tok)
	if err != nil {
		return ledger.SessionKey{}, err
	}
	return ledger.SessionKey{Tenant: tenant, Session: session}, nil
}
