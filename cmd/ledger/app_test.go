package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger"
)

// run runs the ledger program in process and returns its exit code, stdout
// and stderr.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmdline.Run(context.Background(), newApp(strings.NewReader(stdin), &out, &errb), append([]string{"ledger"}, args...), &errb)
	return code, out.String(), errb.String()
}

// events renders n events spread over sessions.
func events(sessions []string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		s := sessions[i%len(sessions)]
		fmt.Fprintf(&b, `{"tenant_id":"acme","session_id":%q,"event_type":"PreToolUse","ts_unix_ms":%d,"payload":{"tool_name":"Bash","tool_input":{"command":"echo %d"},"n":%d}}`+"\n",
			s, 1763830000000+i, i, i)
	}
	return b.String()
}

func TestExportImportExportIsByteIdentical(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	in := events([]string{"s-1", "s.2", "ü *>/"}, 30)
	if code, _, errs := run(t, in, "--data", a, "append"); code != 0 {
		t.Fatalf("append: exit %d: %s", code, errs)
	}
	first := filepath.Join(dir, "first.ndjson")
	if code, _, errs := run(t, "", "export", "--data", a, "-o", first); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	if code, out, errs := run(t, "", "--data", b, "import", first); code != 0 || !strings.Contains(out, "30 envelopes appended") {
		t.Fatalf("import: exit %d: %s %s", code, out, errs)
	}
	second := filepath.Join(dir, "second.ndjson")
	if code, _, errs := run(t, "", "--data", b, "export", "-o", second); code != 0 {
		t.Fatalf("export b: exit %d: %s", code, errs)
	}
	x, _ := os.ReadFile(first)
	y, _ := os.ReadFile(second)
	if !bytes.Equal(x, y) || len(x) == 0 {
		t.Fatalf("bundles differ:\n%s\n---\n%s", x, y)
	}
	// Importing again is a no-op.
	if code, out, _ := run(t, "", "--data", b, "import", first); code != 0 || !strings.Contains(out, "0 envelopes appended, 30 already present") {
		t.Fatalf("re-import: exit %d: %s", code, out)
	}
	// A session that exists with other envelopes is refused, and nothing
	// is appended.
	other := filepath.Join(dir, "other.ndjson")
	c := filepath.Join(dir, "c")
	run(t, events([]string{"s-1"}, 2), "--data", c, "append")
	run(t, "", "--data", c, "export", "-o", other)
	code, _, errs := run(t, "", "--data", b, "import", other)
	if code != 1 || !strings.Contains(errs, "acme/s-1 seq 1") {
		t.Fatalf("conflicting import: exit %d: %s", code, errs)
	}
	third := filepath.Join(dir, "third.ndjson")
	run(t, "", "--data", b, "export", "-o", third)
	if z, _ := os.ReadFile(third); !bytes.Equal(x, z) {
		t.Fatal("the refused import changed the store")
	}
}

func TestVerifyBundleTamper(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d")
	run(t, events([]string{"a", "b"}, 12), "--data", data, "append")
	bundle := filepath.Join(dir, "b.ndjson")
	if code, _, errs := run(t, "", "--data", data, "export", "-o", bundle); code != 0 {
		t.Fatal(errs)
	}
	raw, _ := os.ReadFile(bundle)
	lines := strings.SplitAfter(strings.TrimSuffix(string(raw), "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\n")
	}
	// lines[0..5] are session a, seq 0..5; lines[6..11] session b.
	tests := []struct {
		name   string
		tamper func([]string) []string
		want   string // session, seq and kind as text prints them
	}{
		{"byte flip", func(l []string) []string { l[2] = strings.Replace(l[2], "echo 4", "echo 5", 1); return l }, "acme/a seq 2: hash_mismatch"},
		{"deleted", func(l []string) []string { return append(l[:3:3], l[4:]...) }, "acme/a seq 4: seq_gap"},
		{"reordered", func(l []string) []string { l[3], l[4] = l[4], l[3]; return l }, "acme/a seq 3: seq_reorder"},
		{"duplicated", func(l []string) []string { return append(l[:2:2], append([]string{l[1]}, l[2:]...)...) }, "acme/a seq 1: duplicate"},
		{"spliced", func(l []string) []string { return append(l[:2:2], append([]string{l[8]}, l[2:]...)...) }, "acme/a seq 2: foreign_session"},
		{"genesis", func(l []string) []string { return l[1:] }, "acme/a seq 1: bad_genesis"},
		{"rewritten with valid hash", func(l []string) []string { l[2] = reseal(t, strings.Replace(l[2], "echo 4", "rm -rf", 1)); return l }, "acme/a seq 3: broken_link"},
		{"not canonical", func(l []string) []string {
			l[5] = strings.Replace(l[5], `{"event_type"`, `{ "event_type"`, 1)
			return l
		}, "acme/a seq 5: not_canonical"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := append([]string(nil), lines...)
			p := filepath.Join(t.TempDir(), "t.ndjson")
			os.WriteFile(p, []byte(strings.Join(tt.tamper(lines), "\n")+"\n"), 0o600)
			code, out, _ := run(t, "", "verify", "--deep", "--bundle", p)
			if code != 1 {
				t.Fatalf("exit %d, want 1: %s", code, out)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, out)
			}
			code, js, _ := run(t, "", "verify", "--deep", "--bundle", p, "--format", "json")
			var rep ledger.Report
			if err := json.Unmarshal([]byte(js), &rep); err != nil || code != 1 || len(rep.Faults) == 0 {
				t.Fatalf("json: exit %d, %v: %s", code, err, js)
			}
			// The import of a tampered bundle is refused.
			code, _, errs := run(t, "", "--data", filepath.Join(t.TempDir(), "x"), "import", p)
			if code != 1 || !strings.Contains(errs, "refusing") {
				t.Errorf("import: exit %d: %s", code, errs)
			}
		})
	}
	if code, out, _ := run(t, "", "verify", "--deep", "--bundle", bundle); code != 0 || !strings.Contains(out, "OK: 12 envelopes in 2 sessions") {
		t.Fatalf("clean bundle: exit %d: %s", code, out)
	}
}

// reseal recomputes a tampered envelope's hash, as an attacker who knows the
// format would: SHA-256 of the canonical line without its hash member.
func reseal(t *testing.T, line string) string {
	t.Helper()
	i := strings.Index(line, `"hash":"`)
	if i < 0 {
		t.Fatalf("no hash in %s", line)
	}
	member := line[i : i+len(`"hash":"`)+64+2]
	sum := sha256.Sum256([]byte(strings.Replace(line, member, "", 1)))
	return strings.Replace(line, member, `"hash":"`+hex.EncodeToString(sum[:])+`",`, 1)
}

func TestAppendBadInputAppendsNothing(t *testing.T) {
	good := `{"session_id":"s","event_type":"PreToolUse","payload":{"ok":true}}`
	deep := `{"session_id":"s","event_type":"PreToolUse","payload":` + strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70) + "}"
	big := `{"session_id":"s","event_type":"PreToolUse","payload":{"x":"` + strings.Repeat("x", 1<<20) + `"}}`
	tests := []struct {
		name, line, want string
	}{
		{"invalid utf8", "{\"session_id\":\"s\",\"event_type\":\"PreToolUse\",\"payload\":{\"a\":\"\xc3\x28\"}}", "$.payload.a: invalid UTF-8"},
		{"lone surrogate", `{"session_id":"s","event_type":"PreToolUse","payload":{"a":"\udead"}}`, "$.payload.a: lone surrogate"},
		{"duplicate key", `{"session_id":"s","event_type":"PreToolUse","payload":{"a":{"b":1,"b":2}}}`, `$.payload.a: duplicate key "b"`},
		{"big integer", `{"session_id":"s","event_type":"PreToolUse","payload":{"id":12345678901234567890}}`, "$.payload.id: integer 12345678901234567890 is not its own RFC 8785 form"},
		{"out of range", `{"session_id":"s","event_type":"PreToolUse","payload":{"x":1e999}}`, "$.payload.x: number 1e999 is outside the float64 range"},
		{"too deep", deep, "nesting deeper than the limit of 64"},
		{"too large", big, "over the 1048576-byte limit"},
		{"custom depth limit", `{"session_id":"s","event_type":"PreToolUse","payload":{"a":{"b":{}}}}`, "nesting deeper than the limit of 3"},
		{"missing session", `{"event_type":"PreToolUse","payload":{}}`, "$.session_id: missing required field"},
		{"mistyped payload", `{"session_id":"s","event_type":"PreToolUse","payload":[1]}`, "$.payload: payload must be a JSON object"},
		{"mistyped ts", `{"session_id":"s","event_type":"PreToolUse","payload":{},"ts_unix_ms":"x"}`, "$.ts_unix_ms"},
		{"empty session", `{"session_id":"","event_type":"PreToolUse","payload":{}}`, "$.session_id: session_id must not be empty"},
		{"empty event type", `{"session_id":"s","event_type":"","payload":{}}`, "$.event_type: event_type must not be empty"},
		{"bad tenant", `{"tenant_id":"Acme Corp","session_id":"s","event_type":"PreToolUse","payload":{}}`, "$.tenant_id: tenant_id \"Acme Corp\" must match"},
		{"not json", `hello`, "$: unexpected character 'h'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "d")
			args := []string{"--data", data, "append"}
			if strings.HasPrefix(tt.name, "custom") {
				args = append(args, "--max-depth", "3")
			}
			code, _, errs := run(t, good+"\n"+tt.line+"\n"+good+"\n", args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, errs)
			}
			if !strings.Contains(errs, "line 2: ") || !strings.Contains(errs, tt.want) || !strings.Contains(errs, "nothing was appended") {
				t.Errorf("message %q lacks line 2 and %q", errs, tt.want)
			}
			// Nothing was created either: reading the directory finds no
			// ledger (and does not create one).
			code, out, errs := run(t, "", "--data", data, "--format", "json", "sessions")
			if code != 3 || !strings.Contains(errs, "holds no ledger") {
				t.Errorf("store after the refused append: exit %d: %s %s", code, out, errs)
			}
			if _, err := os.Stat(filepath.Join(data, "jetstream")); err == nil {
				t.Errorf("reading %s created a ledger", data)
			}
		})
	}
}

func TestGlobalFlagsBeforeAndAfterAndEnv(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	run(t, events([]string{"s"}, 1), "append", "--data", a)
	t.Setenv("LEDGER_DATA", b)
	run(t, events([]string{"s"}, 2), "append")
	t.Setenv("LEDGER_FORMAT", "json")
	_, outA, _ := run(t, "", "--data", a, "sessions")
	_, outB, _ := run(t, "", "sessions")
	_, outText, _ := run(t, "", "sessions", "--format", "text", "--data", a)
	if !strings.Contains(outA, `"count":1`) || !strings.Contains(outB, `"count":2`) || !strings.Contains(outText, "TENANT") {
		t.Fatalf("got a=%s b=%s text=%s", outA, outB, outText)
	}
	// A flag after the command beats one before it.
	_, out, _ := run(t, "", "--data", b, "sessions", "--data", a)
	if !strings.Contains(out, `"count":1`) {
		t.Fatalf("inner flag: got %s", out)
	}
	if code, _, _ := run(t, "", "--format", "yaml", "sessions"); code != 2 {
		t.Fatalf("bad --format: exit %d, want 2", code)
	}
	if code, _, _ := run(t, "", "--nats", "nats://127.0.0.1:1", "sessions"); code != 3 {
		t.Fatalf("unreachable store: exit %d, want 3", code)
	}
}

var update = flag.Bool("update", false, "rewrite fixtures/demo/demo.bundle.ndjson and fixtures/vectors/formats")

// TestDemoBundleGolden appends the shipped demo events into an empty store
// and exports them: the bundle is byte-identical to the committed one on any
// machine, since every event carries its timestamp.
func TestDemoBundleGolden(t *testing.T) {
	const golden = "../../fixtures/demo/demo.bundle.ndjson"
	dir := t.TempDir()
	events, err := os.ReadFile("../../fixtures/demo/demo.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, string(events), "--data", filepath.Join(dir, "d"), "append"); code != 0 {
		t.Fatal(errs)
	}
	out := filepath.Join(dir, "demo.ndjson")
	if code, _, errs := run(t, "", "--data", filepath.Join(dir, "d"), "export", "-o", out); code != 0 {
		t.Fatal(errs)
	}
	got, _ := os.ReadFile(out)
	if *update {
		os.WriteFile(golden, got, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("export differs from %s:\n%s", golden, got)
	}
	if code, out, _ := run(t, "", "verify", "--deep", "--bundle", golden); code != 0 || !strings.Contains(out, "OK: 16 envelopes in 2 sessions") {
		t.Fatalf("verify golden: exit %d: %s", code, out)
	}
	// Appending the same input again is a no-op, said plainly.
	code, out2, errs := run(t, string(events), "--data", filepath.Join(dir, "d"), "append")
	if code != 0 || !strings.Contains(out2, "stored already") || errs != "" {
		t.Fatalf("re-append: exit %d: %s %s", code, out2, errs)
	}
	if code, out, _ := run(t, "", "--data", filepath.Join(dir, "d"), "verify", "--deep"); code != 0 || !strings.Contains(out, "16 envelopes in 2 sessions") {
		t.Fatalf("after the re-append: exit %d: %s", code, out)
	}
	// The demo's events are valid AARTS events: every one parses, so the
	// demo can be replayed.
	err = ledger.ReadLines(bytes.NewReader(events), ledger.Limits{}, func(line []byte, n int) error {
		var ev struct {
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return err
		}
		_, err := aarts.ParseEvent(ev.Payload)
		return err
	})
	if err != nil {
		t.Fatalf("demo event: %v", err)
	}
}

func TestVersion(t *testing.T) {
	if code, out, _ := run(t, "", "--version"); code != 0 || !strings.Contains(out, "ledger version") || !strings.Contains(out, "commit") || !strings.Contains(out, "go1.") {
		t.Fatalf("--version: exit %d: %q", code, out)
	}
}

// TestShowHTMLEscapes: what a host sent is text in the HTML timeline,
// never markup: a payload holding a script tag comes out escaped.
func TestShowHTMLEscapes(t *testing.T) {
	data := filepath.Join(t.TempDir(), "d")
	ev := `{"session_id":"xss","event_type":"PreToolUse","ts_unix_ms":1763800000000,"payload":{"tool_input":{"command":"echo <script>alert(1)</script>"}}}` + "\n"
	if code, _, errs := run(t, ev, "--data", data, "append"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := run(t, "", "--data", data, "--format", "html", "show", "xss")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(out, "<script>alert") || !strings.Contains(out, "&lt;script&gt;alert") {
		t.Fatalf("the payload is not escaped:\n%s", out)
	}
}
