package browser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheBrowserSeesWhatAPageDoes checks the checker: a page that fetches
// from the network, breaks its own Content-Security-Policy or throws is
// reported; a quiet page is not.
func TestTheBrowserSeesWhatAPageDoes(t *testing.T) {
	b := Open(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	quiet := write("quiet.html", `<!doctype html><meta http-equiv="Content-Security-Policy" content="default-src 'none'"><title>q</title><p>one</p><p>two</p>`)
	b.Load(t, quiet)
	if n := b.Count(t, "p"); n != 2 {
		t.Fatalf("count %d", n)
	}
	if p := b.Problems(); len(p) != 0 {
		t.Fatalf("problems on a quiet page: %v", p)
	}
	for _, u := range b.Requests() {
		if !strings.HasPrefix(u, "file://") {
			t.Fatalf("request %s", u)
		}
	}

	loud := write("loud.html", `<!doctype html><meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'">`+
		`<img src="http://192.0.2.1/x.png"><script>console.error("boom"); throw new Error("thrown")</script>`)
	b.Load(t, loud)
	all := strings.Join(b.Problems(), "\n")
	for _, want := range []string{"boom", "thrown", "Content Security Policy"} {
		if !strings.Contains(all, want) {
			t.Errorf("%q not reported; got:\n%s", want, all)
		}
	}
}
