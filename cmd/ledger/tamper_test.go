package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/ledger"
)

const fixturePub = "../../fixtures/keys/fixture-ed25519.pub.pem"

// envelopeOf reads a bundle line as a generic object.
func envelopeOf(t *testing.T, line string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	return m
}

// resealAll renumbers and relinks every chain of lines and recomputes every
// hash, as a forger with write access to the stream would: the chains
// verify. Payloads are kept byte for byte (so a forged payload may carry
// keys no sealer would accept).
func resealAll(t *testing.T, lines []string) []string {
	t.Helper()
	type head struct {
		seq  uint64
		hash string
	}
	heads := map[string]*head{}
	out := make([]string, len(lines))
	for i, l := range lines {
		m := envelopeOf(t, l)
		key := string(m["tenant_id"]) + "/" + string(m["session_id"])
		h := heads[key]
		if h == nil {
			m["seq"], m["prev_hash"] = json.RawMessage("0"), json.RawMessage("null")
			h = &head{}
			heads[key] = h
		} else {
			m["seq"], m["prev_hash"] = json.RawMessage(fmt.Sprint(h.seq+1)), json.RawMessage(`"`+h.hash+`"`)
			h.seq++
		}
		delete(m, "hash")
		raw, _ := json.Marshal(m)
		body, err := ledger.Canonicalize(raw, ledger.Limits{})
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		sum := sha256.Sum256(body)
		h.hash = hex.EncodeToString(sum[:])
		m["hash"] = json.RawMessage(`"` + h.hash + `"`)
		raw, _ = json.Marshal(m)
		c, err := ledger.Canonicalize(raw, ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(c)
	}
	return out
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(raw)), "\n")
}

// TestTamperedRecordingsFailVerify forges a shipped recording the ways an
// insider with write access to the stream would, reseals every chain (so
// plain chain verification passes), and requires `ledger verify --pubkey`
// and the independent Python verifier each to name the fault and its seq.
func TestTamperedRecordingsFailVerify(t *testing.T) {
	lines := readLines(t, "../../fixtures/sessions/coding-agent/destructive-commands.ndjson")
	other := readLines(t, "../../fixtures/sessions/coding-agent/clean-session.ndjson")
	// seq 8 is `sudo rm -rf / --no-preserve-root`, seq 9 its deny.
	if !strings.Contains(lines[8], "sudo rm -rf /") || !strings.Contains(lines[9], `"decision":"deny"`) {
		t.Fatalf("the recording changed: %s / %s", lines[8], lines[9])
	}
	edit := func(i int, from, to string) []string {
		c := append([]string(nil), lines...)
		if !strings.Contains(c[i], from) {
			t.Fatalf("%q not in line %d: %s", from, i, c[i])
		}
		c[i] = strings.Replace(c[i], from, to, 1)
		return c
	}
	// An allow verdict of another session, re-labelled into this one.
	var moved string
	for _, l := range other {
		if strings.Contains(l, `"event_type":"Verdict"`) && strings.Contains(l, `"decision":"allow"`) {
			m := envelopeOf(t, l)
			m["session_id"] = envelopeOf(t, lines[9])["session_id"]
			raw, _ := json.Marshal(m)
			moved = string(raw)
			break
		}
	}
	sigValue := func(line string) string {
		i := strings.Index(line, `"value":"`)
		return line[i+len(`"value":"`) : i+len(`"value":"`)+88]
	}
	v := sigValue(lines[9])
	// The same 64 bytes, with the unused low bits of the last character set.
	malleable := v[:85] + string(v[85]+1) + "=="
	if v[85] != 'A' && v[85] != 'Q' && v[85] != 'g' && v[85] != 'w' {
		t.Fatalf("unexpected last base64 character %q", v[85])
	}
	forgedResolution := `{"event_type":"Resolution","hash":"` + strings.Repeat("0", 64) + `","payload":{"by":"ciso@corp.example","for_seq":8,"resolution":"approved","scope":"session"},"prev_hash":null,"seq":0,"session_id":"cleanup-gone-wrong","tenant_id":"default","ts_unix_ms":1,"v":1}`
	forgeries := []struct {
		name  string
		lines []string
		kind  ledger.FaultKind
		seq   int
	}{
		{"judged event rewritten", edit(8, "sudo rm -rf / --no-preserve-root", "ls -la /tmp"), ledger.ReceiptMismatch, 9},
		{"allow verdict moved in from another session", append(append(append([]string(nil), lines[:9]...), moved), lines[10:]...), ledger.ReceiptMismatch, 9},
		{"event and its verdict deleted", append(append([]string(nil), lines[:8]...), lines[10:]...), ledger.ReceiptMismatch, 9},
		{"unsigned member in the receipt", edit(9, `"receipt":{`, `"receipt":{"approved_by":"ciso@corp.example",`), ledger.BadSignature, 9},
		{"unsigned member in the decision", edit(9, `"decision":{"aarm":`, `"decision":{"override":"allow","aarm":`), ledger.BadSignature, 9},
		{"case-folded twin keys", edit(9, `"decision":"deny"`, `"decision":"allow","deciſion":"deny"`), ledger.BadRecord, 9},
		{"Kelvin-sign twin keys", edit(9, `"hook_point":"PreToolUse"`, `"hook_point":"PreToolUse","\u212aeep":1,"keep":2`), ledger.BadRecord, 9},
		{"reasons edited", edit(9, `"reasons":["`, `"reasons":["approved by the CISO; `), ledger.BadSignature, 9},
		{"matched_rule_id edited", edit(9, `"matched_rule_id":"`, `"matched_rule_id":"X`), ledger.BadSignature, 9},
		{"constraints edited", edit(9, `"timeout_ms":120000`, `"timeout_ms":99999999`), ledger.BadSignature, 9},
		{"signature in non-canonical base64", edit(9, v, malleable), ledger.BadSignature, 9},
		{"resolution forged", append(append(append([]string(nil), lines[:10]...), forgedResolution), lines[10:]...), ledger.UnsignedRecord, 10},
	}
	dir := t.TempDir()
	for i, f := range forgeries {
		t.Run(f.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("forged-%d.ndjson", i))
			os.WriteFile(path, []byte(strings.Join(resealAll(t, f.lines), "\n")+"\n"), 0o600)
			want := fmt.Sprintf("default/cleanup-gone-wrong seq %d: %s", f.seq, f.kind)
			if f.kind != ledger.BadRecord {
				// Resealed, the chains hold: only the signed records tell.
				if code, out, errs := run(t, "", "verify", "--bundle", path, "--deep"); code != 0 {
					t.Fatalf("the resealed forgery should verify as chains: exit %d %s %s", code, out, errs)
				}
			}
			for _, deep := range []bool{false, true} {
				args := []string{"verify", "--bundle", path, "--pubkey", fixturePub}
				if deep {
					args = append(args, "--deep")
				}
				code, out, errs := run(t, "", args...)
				if code != 1 || !strings.Contains(out, want) && !(deep && f.kind == ledger.BadRecord && strings.Contains(out, "malformed")) {
					t.Errorf("ledger %v: exit %d, want 1 with %q:\n%s%s", args, code, want, out, errs)
				}
			}
			out, err := python(t, "bundle", "--pubkey", fixturePub, path)
			if err == nil || !strings.Contains(out, fmt.Sprintf("seq %d: %s", f.seq, f.kind)) {
				t.Errorf("verify.py: %v, want %q:\n%s", err, want, out)
			}
		})
	}
	// The genuine recording verifies with both.
	if code, out, errs := run(t, "", "verify", "--bundle", "../../fixtures/sessions/coding-agent/destructive-commands.ndjson", "--pubkey", fixturePub, "--deep"); code != 0 {
		t.Fatalf("genuine: exit %d %s %s", code, out, errs)
	}
}
