package page

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTheCSPAllowsExactlyWhatIsServed: the style and script a page
// carries hash to what its Content-Security-Policy allows (html/template
// must not have changed a byte of them), and nothing else is allowed.
func TestTheCSPAllowsExactlyWhatIsServed(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "t <b>", template.HTML("<p>x</p>")); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	between := func(open, close string) string {
		_, rest, _ := strings.Cut(html, open)
		body, _, _ := strings.Cut(rest, close)
		return body
	}
	for _, part := range []string{between("<style>", "</style>"), between("<script>", "</script>")} {
		sum := sha256.Sum256([]byte(part))
		if h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(CSP, h) || len(part) < 100 {
			t.Errorf("what is served (%d bytes) is not what the CSP allows", len(part))
		}
	}
	if !strings.Contains(CSP, "default-src 'none'") || strings.Contains(CSP, "unsafe") || !strings.Contains(html, "t &lt;b&gt;") {
		t.Errorf("CSP %s", CSP)
	}
}

func TestChartLabelsAreCutByRune(t *testing.T) {
	out := string(Bars("t", []Bar{{Label: strings.Repeat("é", 50), Count: 1}}))
	if !utf8.ValidString(out) || !strings.Contains(out, strings.Repeat("é", 33)+"…") {
		t.Fatalf("label: %s", out)
	}
}
