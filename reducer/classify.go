package reducer

import (
	"regexp"
	"slices"
	"strings"
)

// Data classes the detectors assign.
const (
	ClassPII         = "PII"
	ClassPaymentCard = "PAYMENT_CARD"
	ClassSecret      = "SECRET"
	// ClassUnclassified is data a tool read that no label and no detector
	// classified, when the manifest treats unlabelled data as sensitive
	// (data_labels.unlabeled, AARM R2's default).
	ClassUnclassified = "UNCLASSIFIED"
)

// Detection is one kind of sensitive data found in a text.
type Detection struct {
	Class    string
	Detector string
}

type detector struct {
	name  string
	class string
	re    *regexp.Regexp
	check func(string) bool // optional validation of a match
	// hints: a text can only match if it contains one of them (a cheap
	// test that spares the regular expression on most texts); "0" stands
	// for any digit.
	hints []string
}

// mayMatch reports whether text contains one of d's hints.
func (d *detector) mayMatch(text string) bool {
	for _, h := range d.hints {
		if h == "0" {
			if strings.ContainsAny(text, "0123456789") {
				return true
			}
		} else if strings.Contains(text, h) {
			return true
		}
	}
	return len(d.hints) == 0
}

var detectors = []detector{
	{"email", ClassPII, regexp.MustCompile(`[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}\b`), nil, []string{"@"}},
	{"phone", ClassPII, regexp.MustCompile(`(?:\+\d{1,3}[ .-]?)?\(?\b\d{3}\)?[ .-]\d{3}[ .-]\d{4}\b`), nil, []string{"0"}},
	{"national_id", ClassPII, regexp.MustCompile(`\b\d{3}-\d{2}-\d{4}\b`), validSSN, []string{"-"}},
	{"payment_card", ClassPaymentCard, regexp.MustCompile(`\b(?:\d[ -]?){12,18}\d\b`), luhn, []string{"0"}},
	{"private_key", ClassSecret, regexp.MustCompile(`-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY( BLOCK)?-----`), nil, []string{"PRIVATE KEY"}},
	{"aws_access_key", ClassSecret, regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), nil, []string{"AKIA", "ASIA"}},
	{"aws_secret_key", ClassSecret, regexp.MustCompile(`(?i)aws_secret_access_key\s*[=:]\s*["']?[A-Za-z0-9/+=]{40}`), nil, []string{"ecret_access_key", "ECRET_ACCESS_KEY", "ecret_Access_Key"}},
	{"github_token", ClassSecret, regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})\b`), nil, []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	{"slack_token", ClassSecret, regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}\b`), nil, []string{"xox"}},
	{"stripe_key", ClassSecret, regexp.MustCompile(`\b[sr]k_live_[0-9A-Za-z]{20,}\b`), nil, []string{"k_live_"}},
	{"google_api_key", ClassSecret, regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`), nil, []string{"AIza"}},
	{"openai_key", ClassSecret, regexp.MustCompile(`\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}\b`), nil, []string{"sk-"}},
	{"jwt", ClassSecret, regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), nil, []string{"eyJ"}},
}

// maxScan bounds how much of one text the detectors read.
const maxScan = 256 << 10

// Detect returns the kinds of sensitive data in text, sorted by detector.
// It never returns the data itself.
func Detect(text string) []Detection {
	if len(text) > maxScan {
		text = text[:maxScan]
	}
	var out []Detection
	for i := range detectors {
		d := &detectors[i]
		if !d.mayMatch(text) {
			continue
		}
		for _, m := range d.re.FindAllString(text, 16) {
			if d.check == nil || d.check(m) {
				out = append(out, Detection{Class: d.class, Detector: d.name})
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b Detection) int { return strings.Compare(a.Detector, b.Detector) })
	return out
}

// DetectWhole is Detect over all of text, however long (in windows of the
// size Detect reads, overlapping so that a match across a border is
// found), for a value the engine cut to fit the record.
func DetectWhole(text string) []Detection {
	var out []Detection
	for start := 0; ; start += maxScan - 4096 {
		for _, d := range Detect(text[start:]) {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
		if len(text)-start <= maxScan {
			break
		}
	}
	slices.SortFunc(out, func(a, b Detection) int { return strings.Compare(a.Detector, b.Detector) })
	return out
}

// Label is a detection as a cut value records it: "CLASS:detector".
func (d Detection) Label() string { return d.Class + ":" + d.Detector }

// Span is where one detector matched in a text: text[Start:End].
type Span struct {
	Start, End int
	Class      string
	Detector   string
}

// Spans returns every match of the detectors in text (up to 16 per
// detector, within the first maxScan bytes), in text order. Sealing uses it
// to find the values it encrypts.
func Spans(text string) []Span {
	if len(text) > maxScan {
		text = text[:maxScan]
	}
	var out []Span
	for i := range detectors {
		d := &detectors[i]
		if !d.mayMatch(text) {
			continue
		}
		for _, m := range d.re.FindAllStringIndex(text, 16) {
			if d.check == nil || d.check(text[m[0]:m[1]]) {
				out = append(out, Span{Start: m[0], End: m[1], Class: d.class, Detector: d.name})
			}
		}
	}
	slices.SortFunc(out, func(a, b Span) int { return a.Start - b.Start })
	return out
}

// luhn reports whether the digits of s pass the Luhn check.
func luhn(s string) bool {
	var digits []int
	for _, c := range s {
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
func validSSN(s string) bool {
	area, group, serial := s[:3], s[4:6], s[7:]
	return area != "000" && area != "666" && area[0] != '9' && group != "00" && serial != "0000"
}
