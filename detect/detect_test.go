package detect

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/purity"
	"github.com/agentledger/agentledger/internal/secretcorpus"
)

func corpus(t *testing.T) []secretcorpus.Case {
	t.Helper()
	cs, err := secretcorpus.Load("testdata/secrets.json")
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestCorpusIsFound(t *testing.T) {
	for _, c := range corpus(t) {
		t.Run(c.Name, func(t *testing.T) {
			if got := Redact(c.Text); strings.Contains(got, c.Secret) {
				t.Errorf("Redact(%q) = %q, still holds %q", c.Text, got, c.Secret)
			}
			if got := RedactJSONText(secretcorpus.Escaped(c.Text)); strings.Contains(got, c.Secret) {
				t.Errorf("escaped: RedactJSONText = %q, still holds %q", got, c.Secret)
			}
			sp := Spans(c.Text)
			if len(sp) == 0 {
				t.Fatalf("Spans(%q) finds nothing", c.Text)
			}
			if sp[0].Class == ClassSecret && (!MayHoldSecret(c.Text) || !MayHoldSecret(secretcorpus.Escaped(c.Text))) {
				t.Errorf("MayHoldSecret misses %q or its escaped form", c.Text)
			}
		})
	}
}

// TestOrdinaryWorkIsNotFound: the wider detectors must not take ordinary
// commands and code for credentials (a sealed prompt or command is
// unreadable in the record, and the reducer never taints on them).
func TestOrdinaryWorkIsNotFound(t *testing.T) {
	for _, text := range []string{
		"rm -rf dist && npm run build",
		"git log --oneline 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
		"export GITHUB_TOKEN=$(gh auth token)",
		"TOKEN=${GITHUB_TOKEN} make release",
		"const token = getToken(req)",
		"def login(user: str, password: str) -> bool:",
		"token: string;",
		"password_file=/run/secrets/db",
		"max_tokens = 4096",
		"password: ${{ secrets.DB_PASSWORD }}",
		"Bearer authentication is described in RFC 6750",
		"the basic functionality works",
		"api_key = os.environ['API_KEY']",
		"sort_key = item.name",
		"curl https://example.com/api/v1/items",
		"psql postgres://localhost:5432/orders",
		"docker run -u 1000:1000 -p 8080:80 nginx",
		"mkdir -p build && ssh -p 2222 host uptime",
		"MAX_TOKENS=4096 TOKEN_FILE=/run/token python run.py",
		"git clone https://github.com/shop/web.git",
		"npm login --registry https://registry.example",
	} {
		if sp := Spans(text); len(sp) > 0 {
			t.Errorf("Spans(%q) = %+v (%q), want none", text, sp, text[sp[0].Start:sp[0].End])
		}
	}
}

// TestOrdinaryEventNeedsNoScan: the cheap gate lets an ordinary hook event
// through without a scan (what keeps sealing within 1.3x of plain
// recording): no hint of a secret detector is in it, in any case.
func TestOrdinaryEventNeedsNoScan(t *testing.T) {
	ev := `{"hook_point":"PreToolUse","session_id":"s","host_id":"claude-code","cwd":"/workspace/shop","turn_id":"toolu_01ABCDEF",` +
		`"tool_name":"shell","tool_name_native":"Bash","tool_input":{"command":"go test ./... -run TestCheckout -count=1 \u0026\u0026 git status --short",` +
		`"description":"run the checkout tests","timeout":120000},"transcript_path":"/home/dev/.claude/projects/shop/2f6c1e0a.jsonl","permission_mode":"default"}`
	if MayHoldSecret(ev) {
		t.Error("MayHoldSecret is true for an ordinary event")
		for _, h := range secretHints() {
			if h.exact && strings.Contains(ev, h.text) || !h.exact && containsFold(UnescapeJSON(ev), h.text) {
				t.Errorf("hint %q is in an ordinary event", h.text)
			}
		}
	}
}

// TestWholeTextIsScanned: a secret past the first window is found, and
// one across a window border too.
func TestWholeTextIsScanned(t *testing.T) {
	tok := "ghp_" + strings.Repeat("a1", 18)
	for _, at := range []int{window + 100, window - overlap/2 - 10, 3 * window} {
		text := strings.Repeat("x ", at/2) + tok + " y"
		if got := Redact(text); strings.Contains(got, tok) {
			t.Errorf("a token at %d is not found", at)
		}
	}
}

func TestClassifyIsPrecise(t *testing.T) {
	got := Classify("DB_PASSWORD=pl41n-text-pw curl -H 'Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c9b8a'")
	if len(got) != 0 {
		t.Errorf("Classify = %v: heuristic detectors must not classify data", got)
	}
	got = Classify("mail jane@example.org " + "ghp_" + strings.Repeat("a1", 18))
	if len(got) != 2 || got[0].Detector != "email" || got[1].Detector != "github_token" {
		t.Errorf("Classify = %v, want email and github_token", got)
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("password=x y", "DB_PASSWORD=1234")
	f.Fuzz(func(t *testing.T, a, b string) {
		text := a + b
		_ = Redact(text)
		_ = RedactJSONText(text)
		for _, sp := range Spans(text) {
			if sp.Start < 0 || sp.End > len(text) || sp.Start >= sp.End {
				t.Fatalf("span %+v out of %d bytes", sp, len(text))
			}
		}
	})
}

// TestPure: the detectors read no clock, no file and no randomness, and
// depend on nothing outside the standard library, so the reducer and
// elide stay pure.
func TestPure(t *testing.T) {
	purity.Check(t, purity.IO, func(d string) bool {
		return strings.Contains(strings.Split(d, "/")[0], ".") && d != "github.com/agentledger/agentledger/detect"
	})
}

// TestCutNeverSplitsASecret is in package elide; here: Replace keeps the
// first of overlapping spans and says which detectors matched.
func TestReplace(t *testing.T) {
	text := "a AKIAZ3XQ7MDKQ2B4LT9P b jane@example.org"
	got, kinds := Replace(text, Spans(text), func(s Span) string { return "<" + s.Detector + ">" })
	if got != "a <aws_access_key> b <email>" || len(kinds) != 2 {
		t.Errorf("Replace = %q %v", got, kinds)
	}
}

func TestUnescapeJSON(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:                    `plain`,
		`a\/b\u0040c\"d\\e\nf`:     `a/b@c"d\e f`,
		`lone \ud800 stays`:        `lone \ud800 stays`,
		`cut \u00`:                 `cut \u00`,
		`end \`:                    `end \`,
		`\u0067\u0068\u0070\u005f`: `ghp_`,
		`bad \q`:                   `bad \q`,
	} {
		if got := UnescapeJSON(in); got != want {
			t.Errorf("UnescapeJSON(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSecrets: what a tool result must not show a model — credentials by
// format, or named and strong — and what it may: values found by shape
// alone, and a project's weak local defaults.
func TestSecrets(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"token ghp_R7dKq2R7dKq2R7dKq2R7dKq2R7dKq2sP2a", []string{"bearer_token"}},
		{"DB_PASSWORD=Vq8kPz2Lm9", []string{"secret_assignment"}},
		{"POSTGRES_PASSWORD: shop", nil},
		{"postgres://shop:shop@localhost/shop", nil},
		{"postgres://app:Vq8kPz2Lm9x@db.internal/shop", []string{"url_password"}},
		{"commit 3f9a1c2b7d4e5f60718293a4b5c6d7e8f9012345", nil},
		{"AKIAABCDEFGHIJKLMNOP", []string{"aws_access_key"}},
	} {
		if got := Secrets(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Secrets(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}
