// Package detect is agentledger's one set of detectors for secrets and
// personal data. Everything that writes or shows text the engine was sent
// uses it: the sealer (which encrypts what it finds before an event is
// recorded), the redactor of rejection excerpts and defects, verdict
// reasons and artifacts, the snapshot and pending APIs, telemetry and
// error messages. The reducer's data classification uses the subset of
// precise detectors that mark a value as what it is (Classifying): a
// finding there changes decisions, so a heuristic such as "a value
// assigned to something named *_TOKEN" seals and redacts but never taints.
//
// The package is pure: no I/O, no clock, no randomness.
package detect

import (
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Data classes the detectors assign.
const (
	ClassPII         = "PII"
	ClassPaymentCard = "PAYMENT_CARD"
	ClassSecret      = "SECRET"
)

// Span is where one detector matched in a text: text[Start:End] is the
// sensitive value (for a credential assigned to a name or passed as a
// flag, the value alone: the name stays readable).
type Span struct {
	Start, End int
	Class      string
	Detector   string
}

type detector struct {
	name  string
	class string
	re    *regexp.Regexp
	// group, when non-zero, is the submatch that is the sensitive value.
	group int
	// check, when set, validates a match: text is the whole text, m the
	// match's span.
	check func(text string, start, end int) bool
	// hints: a text can only match if it contains one of them (a cheap
	// test that spares the regular expression on most texts); "0" stands
	// for any digit. fold: the hints are lower case and matched in any
	// case.
	hints []string
	fold  bool
	// classifies: a match says what the value is with confidence, so the
	// reducer classifies data with it.
	classifies bool
	// gate, when set, stands for hints: a text can only match if gate
	// says so.
	gate func(text string) bool
	// shape: the detector goes by a value's shape alone, with nothing
	// beside it that names it a credential; it seals and redacts what it
	// finds, but what it finds is not shown to be a secret (Secrets).
	shape bool
	// guess: the detector goes by the name a value is given (password=,
	// --token, a URL's password), which a project's local defaults share
	// with real credentials; Secrets counts a value it finds only when the
	// value itself looks like a credential (strongValue).
	guess bool
}

// mayMatch reports whether text contains one of d's hints.
func (d *detector) mayMatch(text string) bool {
	if d.gate != nil {
		return d.gate(text)
	}
	for _, h := range d.hints {
		switch {
		case h == "0":
			if strings.ContainsAny(text, "0123456789") {
				return true
			}
		case d.fold:
			if containsFold(text, h) {
				return true
			}
		case strings.Contains(text, h):
			return true
		}
	}
	return len(d.hints) == 0
}

// containsFold reports whether s contains the lower-case ASCII needle in
// any case.
func containsFold(s, needle string) bool {
	first := needle[0]
	upper := first
	if 'a' <= first && first <= 'z' {
		upper = first - 'a' + 'A'
	}
	for i := 0; i+len(needle) <= len(s); i++ {
		c := s[i]
		if c != first && c != upper {
			j := strings.IndexByte(s[i+1:], first)
			k := strings.IndexByte(s[i+1:], upper)
			if j < 0 && k < 0 {
				return false
			}
			if j < 0 || (k >= 0 && k < j) {
				j = k
			}
			i += j // the loop adds the 1
			continue
		}
		if strings.EqualFold(s[i:i+len(needle)], needle) {
			return true
		}
	}
	return false
}

// detectors are the detectors, compiled once on first use (a program
// that only links this package, such as the thin hook, pays nothing at
// start).
var detectors = sync.OnceValue(func() []detector {
	return []detector{
		// Personal data.
		{name: "email", class: ClassPII, re: regexp.MustCompile(`[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}\b`), hints: []string{"@"}, classifies: true},
		{name: "phone", class: ClassPII, re: regexp.MustCompile(`(?:\+\d{1,3}[ .-]?)?\(?\b\d{3}\)?[ .-]\d{3}[ .-]\d{4}\b`), hints: []string{"0"}, classifies: true},
		{name: "national_id", class: ClassPII, re: regexp.MustCompile(`\b\d{3}-\d{2}-\d{4}\b`), check: validSSN, hints: []string{"-"}, classifies: true},
		{name: "payment_card", class: ClassPaymentCard, re: regexp.MustCompile(`\b(?:\d[ -]?){12,18}\d\b`), check: luhn, hints: []string{"0"}, classifies: true},

		// Secrets that say what they are.
		{name: "private_key", class: ClassSecret, re: regexp.MustCompile(`-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY( BLOCK)?-----`), hints: []string{"PRIVATE KEY"}, classifies: true},
		{name: "aws_access_key", class: ClassSecret, re: regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), hints: []string{"AKIA", "ASIA"}, classifies: true},
		{name: "aws_secret_key", class: ClassSecret, re: regexp.MustCompile(`(?i)aws_secret_access_key["']?(?:\s*[=:]\s*|\s+)["']?[A-Za-z0-9/+=]{40}`), hints: []string{"secret_access_key"}, fold: true, classifies: true},
		{name: "github_token", class: ClassSecret, re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})\b`), hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, classifies: true},
		{name: "slack_token", class: ClassSecret, re: regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}\b`), hints: []string{"xox"}, classifies: true},
		{name: "stripe_key", class: ClassSecret, re: regexp.MustCompile(`\b[sr]k_live_[0-9A-Za-z]{20,}\b`), hints: []string{"k_live_"}, classifies: true},
		{name: "google_api_key", class: ClassSecret, re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`), hints: []string{"AIza"}, classifies: true},
		{name: "openai_key", class: ClassSecret, re: regexp.MustCompile(`\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}\b`), hints: []string{"sk-"}, classifies: true},
		{name: "jwt", class: ClassSecret, re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), hints: []string{"eyJ"}, classifies: true},
		{name: "gitlab_token", class: ClassSecret, re: regexp.MustCompile(`\bgl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,}`), hints: []string{"glpat-", "gldt-", "glrt-", "glptt-"}},
		{name: "npm_token", class: ClassSecret, re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`), hints: []string{"npm_"}},
		{name: "huggingface_token", class: ClassSecret, re: regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}\b`), hints: []string{"hf_"}},
		{name: "sendgrid_key", class: ClassSecret, re: regexp.MustCompile(`\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b`), hints: []string{"SG."}},
		{name: "google_oauth_token", class: ClassSecret, re: regexp.MustCompile(`\bya29\.[0-9A-Za-z_-]{20,}`), hints: []string{"ya29."}},
		{name: "webhook_url", class: ClassSecret, re: regexp.MustCompile(`https://(?:hooks\.slack\.com/services|discord(?:app)?\.com/api/webhooks)/[A-Za-z0-9/_-]{16,}`), hints: []string{"hooks.slack.com", "/api/webhooks/"}},

		// Credentials found by where they stand: the value alone is the span.
		{name: "bearer_token", class: ClassSecret, re: regexp.MustCompile(`(?i)\b(?:bearer|token)\s+([A-Za-z0-9._~+/=-]{12,})`), group: 1, check: randomLooking, hints: []string{"bearer", "token "}, fold: true},
		{name: "basic_auth", class: ClassSecret, re: regexp.MustCompile(`(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})`), group: 1, check: basicCredential, hints: []string{"basic"}, fold: true},
		{name: "url_password", class: ClassSecret, re: regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/:@"'<>]*:([^\s/@"'<>]+)@`), group: 1, hints: []string{"://"}, guess: true},
		{name: "password_flag", class: ClassSecret, re: regexp.MustCompile(`(?i)(?:^|[\s"'])--?(?:password|passwd|pass|pwd|token|secret|api-?key|access-?key|secret-?key|client-?secret|auth-?token)(?:=|\s+)("[^"\n]*"|'[^'\n]*'|[^\s"'|&;]+)`), group: 1, check: notPlaceholder, hints: []string{"-pass", "-pwd", "-token", "-secret", "-api", "-access", "-client", "-auth"}, fold: true, guess: true},
		{name: "sql_password", class: ClassSecret, re: regexp.MustCompile(`(?i)\b(?:identified\s+by|(?:with|encrypted)\s+password)\s+('[^'\n]*'|"[^"\n]*")`), group: 1, hints: []string{"identified", "password"}, fold: true, guess: true},
		{name: "secret_assignment", class: ClassSecret, re: regexp.MustCompile(`(?i)\b[A-Za-z0-9_.-]*(?:password|passwd|passphrase|pwd|secret|token|api[-_]?key|access[-_]?key|accountkey|private[-_]?key|auth[-_]?key|subscription[-_]?key|credentials?)["']?\s*(?::=|[:=])\s*("[^"\n]*"|'[^'\n]*'|[^\s"'&;|,(){}\[\]<>` + "`" + `]+)`), group: 1, check: assignedLiteral, hints: []string{"pass", "pwd", "secret", "token", "key", "credential"}, fold: true, guess: true},
		// NAME=value in a shell or an env file, the name in capitals: the value
		// is a literal whatever it looks like.
		{name: "secret_assignment", class: ClassSecret, re: regexp.MustCompile(`\b([A-Z0-9_]*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY|ACCESS_KEY|PRIVATE_KEY|_KEY|_PAT)[A-Z0-9_]*)=("[^"\n]*"|'[^'\n]*'|[^\s"'&;|` + "`" + `]+)`), group: 2, check: envLiteral, hints: []string{"PASS", "SECRET", "TOKEN", "KEY", "_PAT"}, guess: true},
		// A user:password a command takes (curl -u), and passwords tools take
		// after -p: glued to it in the MySQL family, after login commands and
		// sshpass.
		{name: "password_flag", class: ClassSecret, re: regexp.MustCompile(`(?:^|\s)(?:-u|--user)(?:\s+|=)["']?[^\s:"']*[A-Za-z][^\s:"']*:([^\s"'@]+)`), group: 1, check: notPlaceholder, hints: []string{" -u", "-u ", "--user"}, guess: true},
		{name: "password_flag", class: ClassSecret, re: regexp.MustCompile(`(?i)\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]*?\s-p([^\s"'|&;]{3,})`), group: 1, check: notPlaceholder, hints: []string{"mysql", "mariadb"}, fold: true, guess: true},
		{name: "password_flag", class: ClassSecret, re: regexp.MustCompile(`(?i)\b(?:sshpass|login)\b[^\n|;&]*?\s-p\s*("[^"\n]*"|'[^'\n]*'|[^\s"'|&;]+)`), group: 1, check: notPlaceholder, hints: []string{"sshpass", "login"}, fold: true, guess: true},

		// Credentials found by their shape alone (bare.go): an AWS secret
		// access key with no name beside it. The pattern finds maximal runs of
		// its characters (after a JSON escape such as \n, which is not part of
		// the run); bareAWSSecret calibrates. A heuristic: it seals and
		// redacts, never classifies.
		{name: "bare_aws_secret", class: ClassSecret, re: regexp.MustCompile(`(?:\\[nrtbf])?([A-Za-z0-9/+]{40,})`), group: 1, check: bareAWSSecret, gate: hasLongRun, shape: true},
		// Other tokens of random letters and digits alone (bareToken).
		{name: "bare_token", class: ClassSecret, re: regexp.MustCompile(`(?:\\[nrtbf])?([A-Za-z0-9]{32,})`), group: 1, check: bareToken, gate: hasAlnumRun, shape: true},
	}
})

// window is how much of a text the detectors read at once; texts longer
// than that are read in overlapping windows, so that a match across a
// border is found.
const (
	window  = 256 << 10
	overlap = 8 << 10
)

// Spans returns every match of every detector in text, in text order (a
// secret before personal data where two start together). A private key's
// span runs from its header to its END line. Matches may overlap.
func Spans(text string) []Span {
	var out []Span
	for start := 0; ; start += window - overlap {
		end := min(len(text), start+window)
		for _, sp := range windowSpans(text[start:end]) {
			sp.Start += start
			sp.End += start
			if !slices.Contains(out, sp) {
				out = append(out, sp)
			}
		}
		if end == len(text) {
			break
		}
	}
	for i, sp := range out {
		if sp.Detector == "private_key" {
			out[i].End = keyBlockEnd(text, sp.Start)
		}
	}
	slices.SortStableFunc(out, func(a, b Span) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return classRank(a.Class) - classRank(b.Class)
	})
	return out
}

func classRank(class string) int {
	if class == ClassSecret {
		return 0
	}
	return 1
}

func windowSpans(text string) []Span {
	var out []Span
	ds := detectors()
	for i := range ds {
		d := &ds[i]
		if !d.mayMatch(text) {
			continue
		}
		for _, m := range d.re.FindAllStringSubmatchIndex(text, -1) {
			s, e := m[0], m[1]
			if d.group > 0 {
				s, e = m[2*d.group], m[2*d.group+1]
			}
			if s < 0 || e <= s {
				continue
			}
			if d.check == nil || d.check(text, s, e) {
				out = append(out, Span{Start: s, End: e, Class: d.class, Detector: d.name})
			}
		}
	}
	return out
}

// keyBlockEnd is where the private key block whose header starts at start
// ends: after its END line, or at the end of the text.
func keyBlockEnd(text string, start int) int {
	i := strings.Index(text[start:], "-----END ")
	if i < 0 {
		return len(text)
	}
	j := strings.Index(text[start+i+len("-----END "):], "-----")
	if j < 0 {
		return len(text)
	}
	return start + i + len("-----END ") + j + len("-----")
}

// Classify returns the kinds of data the classifying detectors find in
// text (each detector's first 16 matches are tried), sorted by detector:
// what the reducer records of a value, never the value. It reads text
// whole, in windows.
func Classify(text string) []Detection {
	var out []Detection
	for start := 0; ; start += window - overlap {
		end := min(len(text), start+window)
		w := text[start:end]
		ds := detectors()
		for i := range ds {
			d := &ds[i]
			if !d.classifies || !d.mayMatch(w) || slices.Contains(out, Detection{d.class, d.name}) {
				continue
			}
			for _, m := range d.re.FindAllStringIndex(w, 16) {
				if d.check == nil || d.check(w, m[0], m[1]) {
					out = append(out, Detection{Class: d.class, Detector: d.name})
					break
				}
			}
		}
		if end == len(text) {
			break
		}
	}
	slices.SortFunc(out, func(a, b Detection) int { return strings.Compare(a.Detector, b.Detector) })
	return out
}

// MayHoldSecret reports whether text (raw JSON text or a plain string) may
// hold a secret: whether it holds a hint of any secret detector, in any
// case, once the JSON escapes that could hide one (\uXXXX, \/) are undone.
// A text for which it is false needs no scan. It reads text once (the byte
// trigrams it holds) and searches only for the hints whose trigrams are all
// there, so an ordinary event costs little more than reading it.
func MayHoldSecret(text string) bool {
	if hidingEscape(text) {
		text = UnescapeJSON(text)
	}
	var seen [triBits / 64]uint64
	// run, longRun: the same pass looks for a run of characters long
	// enough to be a bare credential (bare.go), which has no hint.
	run, longRun := 0, false
	for i := 0; i < min(2, len(text)); i++ {
		run = (run + 1) * b2i(b64Table[text[i]])
	}
	if len(text) >= 2 {
		t := foldByte(text[0])<<5 ^ foldByte(text[1])
		for i := 2; i < len(text); i++ {
			t = (t<<5 ^ foldByte(text[i])) & (triBits - 1)
			seen[t>>6] |= 1 << (t & 63)
			run = (run + 1) * b2i(b64Table[text[i]])
			longRun = longRun || run >= bareTokenMin
		}
	}
	for _, h := range secretHints() {
		all := true
		for _, t := range h.trigrams {
			if seen[t>>6]&(1<<(t&63)) == 0 {
				all = false
				break
			}
		}
		if all && (h.exact && strings.Contains(text, h.text) || !h.exact && containsFold(text, h.text)) {
			return true
		}
	}
	return longRun && bareFound(text)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// triBits is the size of the set of (hashed) byte trigrams MayHoldSecret
// keeps of a text.
const triBits = 1 << 13

// trigram is the slot of three bytes in that set: each folded to lower case
// (foldByte), shifted in five bits apart. Different trigrams may share a
// slot; the set only ever errs towards a search.
func trigram(a, b, c byte) uint32 {
	return (foldByte(a)<<10 ^ foldByte(b)<<5 ^ foldByte(c)) & (triBits - 1)
}

// foldByte is b with its 0x20 bit set: an ASCII letter in lower case.
func foldByte(b byte) uint32 { return uint32(b | 0x20) }

// hidingEscape reports whether text holds a JSON escape that could hide a
// hint: \uXXXX or \/.
func hidingEscape(text string) bool {
	for i := strings.IndexByte(text, '\\'); i >= 0 && i+1 < len(text); {
		if c := text[i+1]; c == 'u' || c == '/' {
			return true
		}
		j := strings.IndexByte(text[i+2:], '\\')
		if j < 0 {
			return false
		}
		i += 2 + j
	}
	return false
}

// hint is a secret detector's hint in lower case, with its (hashed) byte
// trigrams.
type hint struct {
	text     string // lower case when !exact
	exact    bool   // the detector matches it in this case only
	trigrams []uint32
}

// secretHints are the hints of every secret detector, in lower case.
var secretHints = sync.OnceValue(func() []hint {
	var out []hint
	seen := map[string]bool{}
	for _, d := range detectors() {
		if d.class != ClassSecret {
			continue
		}
		for _, h := range d.hints {
			if d.fold {
				h = strings.ToLower(h)
			}
			if seen[h] {
				continue
			}
			seen[h] = true
			if len(h) < 3 {
				panic("detect: a secret hint shorter than 3 bytes: " + h)
			}
			var tris []uint32
			for i := 0; i+2 < len(h); i++ {
				tris = append(tris, trigram(h[i], h[i+1], h[i+2]))
			}
			out = append(out, hint{text: h, exact: !d.fold, trigrams: tris})
		}
	}
	return out
})

func lowerASCII(c byte) byte { return lowerTable[c] }

var lowerTable = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i + 'a' - 'A')
		}
	}
	return t
}()

// Detection is one kind of sensitive data found in a text.
type Detection struct {
	Class    string
	Detector string
}

// Label is a detection as a cut value records it: "CLASS:detector".
func (d Detection) Label() string { return d.Class + ":" + d.Detector }

// Kinds returns the kinds of data that spans found, sorted by detector,
// each once.
func Kinds(spans []Span) []Detection {
	var out []Detection
	for _, sp := range spans {
		d := Detection{Class: sp.Class, Detector: sp.Detector}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b Detection) int { return strings.Compare(a.Detector, b.Detector) })
	return out
}

// Replace returns text with each span (the first of overlapping ones)
// replaced by mark(span), and the detectors that matched, in text order,
// each once.
func Replace(text string, spans []Span, mark func(Span) string) (string, []string) {
	var b strings.Builder
	var kinds []string
	at := 0
	for _, sp := range spans {
		if sp.Start < at {
			continue // overlaps the previous match
		}
		b.WriteString(text[at:sp.Start])
		b.WriteString(mark(sp))
		at = sp.End
		if !slices.Contains(kinds, sp.Detector) {
			kinds = append(kinds, sp.Detector)
		}
	}
	b.WriteString(text[at:])
	return b.String(), kinds
}

// Redact returns text with every secret and every piece of personal data
// the detectors find replaced by ‹redacted:detector›. JSON string escapes
// in text are not undone: for raw JSON text use RedactJSONText.
func Redact(text string) string {
	sp := Spans(text)
	if len(sp) == 0 {
		return text
	}
	out, _ := Replace(text, sp, func(s Span) string { return "‹redacted:" + s.Detector + "›" })
	return out
}

// Secrets names, sorted, the detectors that find a secret in text by its
// format or by what names it (a token's prefix, "password=", "Bearer"), not
// by its shape alone: a text that holds one must not reach a model as it
// is. It finds more than Classify, whose detectors are also sure of what
// kind of data a value is.
func Secrets(text string) []string {
	if !MayHoldSecret(text) {
		return nil // an ordinary result: read once, not by every detector
	}
	var out []string
	kinds := secretKinds()
	for _, sp := range Spans(text) {
		k := kinds[sp.Detector]
		if sp.Class != ClassSecret || k.shape || slices.Contains(out, sp.Detector) {
			continue
		}
		if k.guess && !strongValue(text[sp.Start:sp.End]) {
			continue // POSTGRES_PASSWORD: shop, a project's local default
		}
		out = append(out, sp.Detector)
	}
	slices.Sort(out)
	return out
}

// secretKinds says of each detector whether it goes by shape or by a
// name (a detector may have several patterns; any one says so).
var secretKinds = sync.OnceValue(func() map[string]struct{ shape, guess bool } {
	out := map[string]struct{ shape, guess bool }{}
	for _, d := range detectors() {
		k := out[d.name]
		k.shape, k.guess = k.shape || d.shape, k.guess || d.guess
		out[d.name] = k
	}
	return out
})

// strongValue reports whether v (quotes aside) looks like a credential
// rather than a word: 20 characters or more, or 8 or more mixing letters
// and digits.
func strongValue(v string) bool {
	v = strings.Trim(v, `"'`)
	if len(v) >= 20 {
		return true
	}
	return len(v) >= 8 && strings.ContainsAny(v, "0123456789") && strings.IndexFunc(v, unicode.IsLetter) >= 0
}

// RedactJSONText is Redact for raw JSON text (an excerpt of an input, an
// error quoting one): its string escapes (\/, \u0040) are undone first, so
// that none hides a secret from the detectors.
func RedactJSONText(text string) string { return Redact(UnescapeJSON(text)) }

// RedactAll redacts each of texts, returning texts itself when none
// changes.
func RedactAll(texts []string) []string {
	var out []string
	for i, t := range texts {
		r := Redact(t)
		if r != t && out == nil {
			out = slices.Clone(texts)
		}
		if out != nil {
			out[i] = r
		}
	}
	if out == nil {
		return texts
	}
	return out
}

// randomLooking accepts a token that is not a word: it has a digit, or is
// 20 characters or longer.
func randomLooking(text string, s, e int) bool {
	v := text[s:e]
	return strings.ContainsAny(v, "0123456789") || len(v) >= 20
}

// basicCredential accepts base64 that decodes to user:password.
func basicCredential(text string, s, e int) bool {
	raw, err := base64.StdEncoding.DecodeString(text[s:e])
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(text[s:e], "="))
	}
	return err == nil && strings.Contains(string(raw), ":")
}

// notPlaceholder rejects values that only name where a secret comes from:
// a variable ($TOKEN, ${TOKEN}, %TOKEN%) or a prompt marker.
func notPlaceholder(text string, s, e int) bool {
	v := strings.Trim(text[s:e], `"'`)
	return len(v) >= 3 && !strings.HasPrefix(v, "$") && !strings.HasPrefix(v, "%") && !strings.HasPrefix(v, "<") && !strings.HasPrefix(v, "-")
}

// codeWords are values an assignment or a type annotation gives that are
// no secret.
var codeWords = map[string]bool{"string": true, "str": true, "int": true, "bool": true, "boolean": true, "number": true, "none": true,
	"null": true, "nil": true, "true": true, "false": true, "undefined": true, "bytes": true, "any": true, "object": true, "optional": true,
	"required": true, "secret": true, "password": true, "token": true, "redacted": true, "changeme": false, "self": true, "this": true}

// assignedLiteral accepts a value assigned to a secret-named thing when it
// is a literal: not a variable, a call, a type or an empty string.
func assignedLiteral(text string, s, e int) bool {
	if !notPlaceholder(text, s, e) {
		return false
	}
	v := strings.Trim(text[s:e], `"'`)
	if codeWords[strings.ToLower(v)] || strings.HasPrefix(v, "‹") {
		return false
	}
	if e < len(text) && strings.ContainsRune("(.[", rune(text[e])) {
		return false // a call or a member: code, not a value
	}
	if text[s] != '"' && text[s] != '\'' && strings.ContainsAny(v, ".") && !strings.ContainsAny(v, "0123456789") {
		return false // os.environ, process.env.X, settings.token
	}
	return true
}

// notSecretNames are the endings of capitalised names that hold something
// about a secret, not the secret: where it is, its id, its size.
var notSecretNames = []string{"_FILE", "_PATH", "_URL", "_URI", "_DIR", "_NAME", "_ID", "_TYPE", "_LENGTH", "_COUNT", "_TTL", "_EXPIRY",
	"_EXPIRES", "_ENDPOINT", "_HEADER", "_FIELD", "_PARAM", "_ENV", "_VAR", "_ALGORITHM", "_ALG", "_SIZE", "_BYTES", "_LIMIT", "_MAX", "_MIN",
	"_HOST", "_PORT", "_REGION", "_VERSION", "_ENABLED", "_MODE", "TOKENS"}

// envLiteral accepts NAME=value where NAME names a secret (not where one
// is or how big it is) and value is a literal, not a variable.
func envLiteral(text string, s, e int) bool {
	eq := strings.LastIndexByte(text[:s], '=')
	start := eq
	for start > 0 && (text[start-1] == '_' || 'A' <= text[start-1] && text[start-1] <= 'Z' || '0' <= text[start-1] && text[start-1] <= '9') {
		start--
	}
	name := text[start:max(start, eq)]
	for _, n := range notSecretNames {
		if strings.HasSuffix(name, n) {
			return false
		}
	}
	v := strings.Trim(text[s:e], `"'`)
	return len(v) >= 3 && !strings.HasPrefix(v, "$") && !strings.HasPrefix(v, "%") && !codeWords[strings.ToLower(v)]
}

// luhn reports whether the digits of the match pass the Luhn check.
func luhn(text string, s, e int) bool {
	var digits []int
	for _, c := range text[s:e] {
		if c >= '0' && c <= '9' {
			digits = append(digits, int(c-'0'))
		}
	}
	if len(digits) < 13 || len(digits) > 19 {
		return false
	}
	sum := 0
	for i := len(digits) - 1; i >= 0; i-- {
		d := digits[i]
		if (len(digits)-1-i)%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// validSSN rejects numbers the US never issues.
func validSSN(text string, s, e int) bool {
	v := text[s:e]
	area, group, serial := v[:3], v[4:6], v[7:]
	return area != "000" && area != "666" && area[0] != '9' && group != "00" && serial != "0000"
}
