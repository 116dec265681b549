package ledger

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

var update = flag.Bool("update", false, "rewrite fixtures/vectors from the table in vectors_test.go")

const vectorsPath = "../fixtures/vectors/vectors.ndjson"

// vector is one line of fixtures/vectors/vectors.ndjson: an envelope without
// its hash, as input text (deliberately not canonical), its RFC 8785 form
// and the expected hash, which is the SHA-256 of that form.
type vector struct {
	Name      string `json:"name"`
	Input     string `json:"input"`
	Canonical string `json:"canonical"`
	Hash      string `json:"hash"`
}

// vectorInputs is the source of fixtures/vectors; `go test ./ledger -run
// TestVectors -update` regenerates the file from it.
var vectorInputs = []struct {
	name, payload string
	extra         map[string]string // member name -> JSON text
}{
	{"genesis-empty-payload", `{}`, nil},
	{"utf16-vs-utf8-key-order", `{"\u20ac":1,"\ud83d\ude00":2,"\ufb33":3,"a":4,"\u0080":5}`, nil},
	{"line-separators", `{"s":"\u2028\u2029"}`, nil},
	{"nul-and-controls", `{"s":"\u0000\u0001\u001f\b\f\n\r\t"}`, nil},
	{"quote-and-backslash", `{"s":"\"\\"}`, nil},
	{"script-and-solidus", `{"s":"</script>\/"}`, nil},
	{"number-1e21", `{"n":1e21}`, nil},
	{"number-0.1", `{"n":0.1}`, nil},
	{"number-minus-zero", `{"n":-0}`, nil},
	{"number-min-subnormal", `{"n":5e-324}`, nil},
	{"number-max-double", `{"n":1.7976931348623157e308}`, nil},
	{"numbers-mixed", `{"a":1E-7,"b":123.456e2,"c":-1.5,"d":1e-6,"e":100.0,"f":9007199254740991,"g":-9007199254740991,"h":1e17}`, nil},
	{"empty-containers", `{"o":{},"a":[],"n":[[],{}],"s":""}`, nil},
	{"deep-nesting", strings.Repeat(`{"d":`, 50) + `[1]` + strings.Repeat(`}`, 50), nil},
	{"whitespace", "{ \"b\" :\t[ 1 ,\n2 ] ,\r\n \"a\" : { } }", nil},
	{"literals", `{"t":true,"f":false,"z":null}`, nil},
	{"numeric-like-keys", `{"10":1,"9":2,"a":3,"A":4,"_":5,"":6}`, nil},
	{"non-bmp-values", `{"emoji":"\ud83d\ude00 e\u0301 \u00e9 \u4e2d"}`, nil},
	{"escaped-keys", `{"\"":1,"\\":2,"\n":3,"a\u0000b":4}`, nil},
	{"session-id-specials", `{}`, map[string]string{"session_id": `"a.b*c> d/e\u00e9"`}},
	{"tenant-and-seq", `{"k":"v"}`, map[string]string{"tenant_id": `"acme-prod"`, "seq": `7`, "prev_hash": `"` + strings.Repeat("ab", 32) + `"`}},
	// Sealed references (package seal): the chain hashes the sealed form,
	// so an auditor needs no key.
	{"sealed-string", `{"hook_point":"PreToolUse","tool_input":{"command":{"$sealed":{"v":1,"kind":"github_token","kid":"0123456789abcdef0123456789abcdef-00112233aabbccdd","alg":"AES-256-GCM","nonce":"AAECAwQFBgcICQoL","ct":"3q2+7w==","redacted":"git push https://x:‹sealed:github_token›@github.com/o/r.git"}}}}`, nil},
	{"sealed-field", `{"hook_point":"PostToolUse","tool_result":{"$sealed":{"json":true,"v":1,"kind":"field:tool_result","kid":"0123456789abcdef0123456789abcdef-00112233aabbccdd","alg":"AES-256-GCM","nonce":"AAECAwQFBgcICQoL","ct":"yv66vg=="}}}`, map[string]string{"event_type": `"PostToolUse"`, "seq": `1`, "prev_hash": `"` + strings.Repeat("cd", 32) + `"`}},
	{"verdict", `{"for_seq":3,"for_hash":"` + strings.Repeat("0f", 32) + `","decision":"deny","reasons":["EGRESS_DENY"],"constraints":{"timeout_ms":30000}}`, map[string]string{"event_type": `"Verdict"`, "seq": `4`, "prev_hash": `"` + strings.Repeat("12", 32) + `"`}},
}

// vectorEnvelope renders an envelope without hash with payload and
// overrides, members in a non-canonical order.
func vectorEnvelope(payload string, extra map[string]string) string {
	fields := map[string]string{
		"v": `1`, "ts_unix_ms": `1763830000000`, "tenant_id": `"default"`, "session_id": `"sess-1"`,
		"seq": `0`, "prev_hash": `null`, "event_type": `"PreToolUse"`,
	}
	for k, v := range extra {
		fields[k] = v
	}
	order := []string{"v", "ts_unix_ms", "tenant_id", "session_id", "seq", "prev_hash", "event_type"}
	var b strings.Builder
	b.WriteString(`{"payload": ` + payload)
	for _, k := range order {
		b.WriteString(`, "` + k + `": ` + fields[k])
	}
	b.WriteString("}")
	return b.String()
}

func TestVectors(t *testing.T) {
	if *update {
		var buf bytes.Buffer
		for _, in := range vectorInputs {
			text := vectorEnvelope(in.payload, in.extra)
			c, err := jcs.Transform([]byte(text))
			if err != nil {
				t.Fatalf("%s: %v", in.name, err)
			}
			sum := sha256.Sum256(c)
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(vector{Name: in.name, Input: text, Canonical: string(c), Hash: hex.EncodeToString(sum[:])}); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(vectorsPath, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var v vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		n++
		t.Run(v.Name, func(t *testing.T) {
			got, err := Canonicalize([]byte(v.Input), Limits{})
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if string(got) != v.Canonical {
				t.Errorf("Canonicalize:\n got %s\nwant %s", got, v.Canonical)
			}
			ref, _ := jcs.Transform([]byte(v.Input))
			if string(ref) != v.Canonical {
				t.Errorf("jcs.Transform:\n got %s\nwant %s", ref, v.Canonical)
			}
			sum := sha256.Sum256([]byte(v.Canonical))
			if hex.EncodeToString(sum[:]) != v.Hash {
				t.Errorf("sha256 of canonical: got %x, want %s", sum, v.Hash)
			}
			// Sealing the same fields gives the same hash, and the sealed
			// bytes decode and verify.
			var m struct {
				Tenant    string          `json:"tenant_id"`
				Session   string          `json:"session_id"`
				EventType string          `json:"event_type"`
				Ts        int64           `json:"ts_unix_ms"`
				Seq       uint64          `json:"seq"`
				Prev      *string         `json:"prev_hash"`
				Payload   json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal([]byte(v.Canonical), &m); err != nil {
				t.Fatal(err)
			}
			head := Head{}
			if m.Prev != nil {
				head = Head{Seq: m.Seq - 1, Hash: *m.Prev}
			}
			e, err := Seal(head, Event{TenantID: m.Tenant, SessionID: m.Session, EventType: m.EventType, TsUnixMs: m.Ts, Payload: m.Payload}, Limits{})
			if err != nil {
				t.Fatalf("Seal: %v", err)
			}
			if e.Hash() != v.Hash {
				t.Errorf("Seal: got hash %s, want %s", e.Hash(), v.Hash)
			}
			if _, err := Decode(e.Bytes(), Limits{}); err != nil {
				t.Errorf("Decode sealed: %v", err)
			}
		})
	}
	if n < 20 {
		t.Fatalf("got %d vectors, want at least 20", n)
	}
	if _, err := os.Stat(filepath.Dir(vectorsPath)); err != nil {
		t.Fatal(err)
	}
}
