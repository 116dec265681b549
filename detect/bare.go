package detect

import (
	"encoding/base64"
	"math"
	"strings"
)

// Bare credentials: a secret that comes with no name beside it (an AWS
// secret access key pasted alone, printed by a tool, a line of a
// credentials file read back) has only its shape to go by. The rule below
// is calibrated on that shape, and on the project's own tree and fixtures
// (TestBareRuleOwnTree: no finding on hashes, UUIDs, commit ids, base64
// digests, signatures or ciphertexts in them).
//
// An AWS secret access key is 30 random bytes in base64: exactly 40
// characters of [A-Za-z0-9/+], with no padding. A candidate is a run of
// those characters of exactly that length: a longer run (a base64 blob, a
// signature, a ciphertext), or one followed by '=' (padded base64, a
// digest), or one joined to a base64url or identifier character ('-',
// '_') on either side is something else.
const bareAWSLen = 40

// Shannon entropy (bits per character, over the 40 characters) of random
// 40-character base64: median 4.78; 1 in 1,000 below 4.35, 1 in 10,000
// below 4.25, 1 in 100,000 below 4.15 (2·10^5 samples from crypto/rand).
// Hex, however mixed, stays at or below 4 (log2 16); a path or a word
// stays far below (src/main/java/com/example/service/Handler: 3.82).
//
//   - bareMinEntropy: the threshold for a key found alone. It also needs
//     upper- and lower-case letters and a digit or one of '/' '+' (a random
//     key lacks them about 1 time in 4,000: (52/64)^40). Together with
//     the entropy threshold, TestBareRuleIsCalibrated misses 1 of 10,000
//     random keys standing alone.
//   - bareNearEntropy: the threshold where the context says what the value
//     is: an AWS access key id (AKIA…, ASIA…) within bareNear bytes, or the
//     word "secret" just before it (aws configure's "AWS Secret Access Key
//     [None]: "). It still needs a letter of each case, and no hex-only
//     string passes.
//   - bareSeq: a key holding that many ascending characters in a row
//     (0123…, abcd…) is a placeholder (sequence).
//   - bareTextShare: base64 that decodes to at least that share of
//     printable bytes (27 of an AWS key's 30) is encoded text, not a key
//     (encodedText).
const (
	bareMinEntropy  = 4.25
	bareNearEntropy = 3.5
	bareNear        = 256
	bareSecretWord  = 64
	bareSeq         = 5
	bareTextShare   = 0.9
)

// bareAWSSecret accepts the run text[s:e] (found by the bare detector's
// pattern, a maximal run of [A-Za-z0-9/+]) as an AWS secret access key
// standing alone.
func bareAWSSecret(text string, s, e int) bool {
	if e-s != bareAWSLen {
		return false
	}
	if s > 0 && (text[s-1] == '-' || text[s-1] == '_') {
		return false // part of base64url or of an identifier
	}
	if e < len(text) && strings.IndexByte("-_=", text[e]) >= 0 {
		return false // padded base64, base64url, an identifier
	}
	v := text[s:e]
	var upper, lower, digit, sym, hexOnly = false, false, false, false, true
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'A' <= c && c <= 'Z':
			upper = true
			hexOnly = hexOnly && c <= 'F'
		case 'a' <= c && c <= 'z':
			lower = true
			hexOnly = hexOnly && c <= 'f'
		case '0' <= c && c <= '9':
			digit = true
		default:
			sym = true
			hexOnly = false
		}
	}
	if hexOnly || !upper || !lower || sequence(v) || encodedText(v) {
		return false
	}
	if nearAWSKeyID(text, s, e) || secretWordBefore(text, s) {
		return entropy(v) >= bareNearEntropy
	}
	if filePath(v) || identifierWords(v) {
		return false
	}
	return (digit || sym) && entropy(v) >= bareMinEntropy
}

// identifierWords reports whether v reads as words run together, an
// identifier or a test's name (TestMCPBehindGatewayOnEveryHost/opencode):
// three quarters of it or more in words of four letters or more, each
// lower-case but for a first capital. About 17 in a million random keys
// do; one named as a secret, or beside its key id, is judged as a key all
// the same.
func identifierWords(v string) bool {
	inWords := 0
	for i := 0; i < len(v); {
		j := i
		if 'A' <= v[j] && v[j] <= 'Z' {
			j++
		}
		k := j
		for k < len(v) && 'a' <= v[k] && v[k] <= 'z' {
			k++
		}
		if k-j >= 3 {
			inWords += k - i
			i = k
			continue
		}
		i++
	}
	return 4*inWords >= 3*len(v)
}

// filePath reports whether v reads as a file path: three slashes or more,
// and either a leading one (/tmp/TestX123/001/m) or a third of it in
// lower-case runs of three or more, one of five or more among them
// (src/handlers/CheckoutForm/v2/Form7).
// A random key does either about once in two thousand; one named as a
// secret, or beside its key id, is judged as a key all the same.
func filePath(v string) bool {
	if strings.Count(v, "/") < 3 {
		return false
	}
	if v[0] == '/' {
		return true
	}
	inRuns, run, longest := 0, 0, 0
	for i := 0; i <= len(v); i++ {
		if i < len(v) && 'a' <= v[i] && v[i] <= 'z' {
			run++
			continue
		}
		if run >= 3 {
			inRuns += run
		}
		longest, run = max(longest, run), 0
	}
	return 3*inRuns >= len(v) && longest >= 5
}

// sequence reports whether v holds bareSeq characters in a row, each one
// more than the one before (0123…, abcd…, ABCD…): a placeholder someone
// typed, not random bytes (in a random key, about 2 in a million).
func sequence(v string) bool {
	n := 1
	for i := 1; i < len(v); i++ {
		if v[i] == v[i-1]+1 {
			if n++; n >= bareSeq {
				return true
			}
		} else {
			n = 1
		}
	}
	return false
}

// encodedText reports whether v (its longest prefix of whole base64
// quanta) is base64 of text: at least bareTextShare of the bytes it
// decodes to are printable ASCII, tab or newline (of 30 random bytes about
// 11 are, 27 or more about once in 10^9; of 48, 43 or more rarer still).
func encodedText(v string) bool {
	raw, err := base64.StdEncoding.DecodeString(v[:len(v)/4*4])
	if err != nil || len(raw) == 0 {
		return false
	}
	n := 0
	for _, c := range raw {
		if ' ' <= c && c <= '~' || c == '\t' || c == '\n' || c == '\r' {
			n++
		}
	}
	return float64(n) >= bareTextShare*float64(len(raw))
}

// isB64 reports whether c is one of the characters of an AWS secret
// access key: [A-Za-z0-9/+].
func isB64(c byte) bool { return b64Table[c] }

var b64Table = func() (t [256]bool) {
	for c := range t {
		t[c] = 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '/' || c == '+'
	}
	return t
}()

// hasLongRun reports whether text holds a run of at least bareAWSLen
// characters of [A-Za-z0-9/+]: only then can the bare detector match.
func hasLongRun(text string) bool {
	run := 0
	for i := 0; i < len(text); i++ {
		if !b64Table[text[i]] {
			run = 0
			continue
		}
		if run++; run >= bareAWSLen {
			return true
		}
	}
	return false
}

// nearAWSKeyID reports whether an AWS access key id stands within
// bareNear bytes of text[s:e].
func nearAWSKeyID(text string, s, e int) bool {
	w := text[max(0, s-bareNear):min(len(text), e+bareNear)]
	for _, id := range []string{"AKIA", "ASIA"} {
		for i := 0; ; {
			j := strings.Index(w[i:], id)
			if j < 0 {
				break
			}
			k := i + j + 4
			n := 0
			for k+n < len(w) && n < 16 && ('A' <= w[k+n] && w[k+n] <= 'Z' || '0' <= w[k+n] && w[k+n] <= '9') {
				n++
			}
			if n == 16 {
				return true
			}
			i = k
		}
	}
	return false
}

// secretWordBefore reports whether "secret" (any case) stands within
// bareSecretWord bytes before text[s].
func secretWordBefore(text string, s int) bool {
	return containsFold(text[max(0, s-bareSecretWord):s], "secret")
}

// entropy is the Shannon entropy of the bytes of v, in bits per byte.
func entropy(v string) float64 {
	var n [256]int
	for i := 0; i < len(v); i++ {
		n[v[i]]++
	}
	h := 0.0
	for _, c := range n {
		if c > 0 {
			p := float64(c) / float64(len(v))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// bareFound reports whether a bare-credential detector finds one in text.
func bareFound(text string) bool {
	ds := detectors()
	for i := range ds {
		d := &ds[i]
		if d.gate == nil || d.class != ClassSecret {
			continue
		}
		for _, m := range d.re.FindAllStringSubmatchIndex(text, -1) {
			if d.check(text, m[2*d.group], m[2*d.group+1]) {
				return true
			}
		}
	}
	return false
}

// Other bare tokens: an API key or a session secret of random letters and
// digits (base62: most providers' unprefixed keys, Vercel, Mailgun,
// Postmark, OpenRouter's older keys, Heroku's API keys, a password manager's
// generated password) pasted alone. A candidate is a maximal run of
// [A-Za-z0-9] of bareTokenMin to bareTokenMax characters that stands apart
// (not joined to '+', '/', '=', '_', '-' or '.', so not part of base64, a
// base64url or JWT segment, an identifier or a host name), with a letter of
// each case and a digit, not hex (hashes and commit ids are hex), not a
// typed sequence, not base64 of text, and random enough:
//
//   - bareTokenEntropy gives, by length, the Shannon entropy below which
//     1 in 1,000 random base62 strings falls (2·10^4 samples a length);
//     the rule takes what is at least that.
//   - wordy: a run holding words (an identifier such as
//     TestSealHashIsSHA256OfJCSWithoutHash, a CamelCase type name) has
//     bareTokenWords or more of its characters in lower-case runs of three
//     or more and bareTokenVowels or more of its letters vowels (random
//     base62: about a fifth vowels, and that much of it in such runs 1
//     time in 1,000 at 32 characters, less when longer). A wordy run is
//     taken only where a credential word or an AWS key id stands near it.
//
// Hex and padded base64 standing alone are not found: by shape they are
// digests as often as keys (a named rule finds them where a name says
// what they are).
const (
	bareTokenMin    = 32
	bareTokenMax    = 64
	bareTokenVowels = 0.3
	bareTokenWords  = 0.45
)

// bareTokenEntropy is the threshold for a run of n characters,
// interpolated between measured lengths.
func bareTokenEntropy(n int) float64 {
	pts := [...]struct {
		n int
		h float64
	}{{32, 4.05}, {40, 4.32}, {48, 4.52}, {64, 4.81}}
	for i := 1; i < len(pts); i++ {
		if n <= pts[i].n {
			a, b := pts[i-1], pts[i]
			return a.h + (b.h-a.h)*float64(n-a.n)/float64(b.n-a.n)
		}
	}
	return pts[len(pts)-1].h
}

// bareToken accepts the run text[s:e] (a maximal run of [A-Za-z0-9]
// found by the pattern) as a bare token.
func bareToken(text string, s, e int) bool {
	if e-s < bareTokenMin || e-s > bareTokenMax {
		return false
	}
	if joinedBefore(text, s) || joinedAfter(text, e) {
		return false
	}
	v := text[s:e]
	var upper, lower, digit, hexOnly = false, false, false, true
	letters, vowels := 0, 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'A' <= c && c <= 'Z':
			upper, hexOnly = true, hexOnly && c <= 'F'
			letters++
		case 'a' <= c && c <= 'z':
			lower, hexOnly = true, hexOnly && c <= 'f'
			letters++
		default:
			digit = true
		}
		if strings.IndexByte("aeiouAEIOU", c) >= 0 {
			vowels++
		}
	}
	if hexOnly || !upper || !lower || !digit || sequence(v) || encodedText(v) || entropy(v) < bareTokenEntropy(len(v)) {
		return false
	}
	return !wordy(v, letters, vowels) || nearAWSKeyID(text, s, e) || credentialWordBefore(text, s)
}

// wordy reports whether v (letters of its characters letters, vowels of
// them vowels) reads as words joined together rather than random.
func wordy(v string, letters, vowels int) bool {
	inRuns, run := 0, 0
	for i := 0; i <= len(v); i++ {
		if i < len(v) && 'a' <= v[i] && v[i] <= 'z' {
			run++
			continue
		}
		if run >= 3 {
			inRuns += run
		}
		run = 0
	}
	return float64(inRuns) >= bareTokenWords*float64(len(v)) && float64(vowels) >= bareTokenVowels*float64(letters)
}

// joinedBefore reports whether the run starting at text[s] continues
// something before it: base64 ('+', '/'), base64url or an identifier ('_',
// '-'), a JSON escape (\uXXXX: the unescaped text is read too), or a
// dotted name (a '.' after a letter or digit). A '=' before it is an
// assignment (key=TOKEN), not padding, which only ends base64.
func joinedBefore(text string, s int) bool {
	if s == 0 {
		return false
	}
	switch c := text[s-1]; {
	case strings.IndexByte("+/_-\\", c) >= 0:
		return true
	case c == '.':
		return s >= 2 && isAlnum(text[s-2])
	}
	return false
}

// joinedAfter reports whether the run ending before text[e] goes on: base64
// or its padding, base64url or an identifier, or a dotted name (a '.'
// before a letter or digit; a '.' that ends a sentence does not join).
func joinedAfter(text string, e int) bool {
	if e >= len(text) {
		return false
	}
	switch c := text[e]; {
	case strings.IndexByte("+/=_-", c) >= 0:
		return true
	case c == '.':
		return e+1 < len(text) && isAlnum(text[e+1])
	}
	return false
}

func isAlnum(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
}

// credentialWordBefore reports whether a word that says a credential
// follows ("secret", "token", "key", "password", "bearer", "auth") stands
// within bareSecretWord bytes before text[s].
func credentialWordBefore(text string, s int) bool {
	w := text[max(0, s-bareSecretWord):s]
	for _, word := range []string{"secret", "token", "key", "password", "bearer", "auth"} {
		if containsFold(w, word) {
			return true
		}
	}
	return false
}

// hasAlnumRun reports whether text holds a run of at least bareTokenMin
// letters and digits: only then can the bare token detector match.
func hasAlnumRun(text string) bool {
	run := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			run = 0
			continue
		}
		if run++; run >= bareTokenMin {
			return true
		}
	}
	return false
}
