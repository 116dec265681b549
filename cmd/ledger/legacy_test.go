package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLegacyRecordingsVerify (issue 23): recordings made by earlier
// versions (fixtures/legacy/make.sh) verify under their own format's
// rules, with ledger verify and with verify.py: record format 1 (before
// record signatures: a verdict's v1 receipt carries its own signature) is
// reported as legacy, with what it guarantees, not as a storm of
// unsigned_record; the recording made just before this change (signed
// records, format 1 checkpoints, key files without a purpose header)
// verifies with no note at all; and a format 1 receipt that was changed
// is still bad_signature.
func TestLegacyRecordingsVerify(t *testing.T) {
	for _, c := range []struct {
		name, checkpointKey string
		legacy              bool
	}{
		{"format1", "receipt-ed25519.pub.pem", true}, // checkpoints were signed with the record key then
		{"pre23", "checkpoint-ed25519.pub.pem", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join("../../fixtures/legacy", c.name)
			bundle, recKey, cpKey := filepath.Join(dir, "bundle.ndjson"), filepath.Join(dir, "receipt-ed25519.pub.pem"), filepath.Join(dir, c.checkpointKey)
			for _, deep := range []bool{false, true} {
				args := []string{"verify", "--bundle", bundle, "--pubkey", recKey, "--checkpoint", filepath.Join(dir, "checkpoint.note"), "--checkpoint-pubkey", cpKey}
				if deep {
					args = append(args, "--deep")
				}
				code, out, errs := run(t, "", args...)
				if code != 0 || strings.Contains(out, "LEGACY") != c.legacy {
					t.Errorf("ledger %v: exit %d, legacy notes %v (want %v):\n%s%s", args, code, strings.Contains(out, "LEGACY"), c.legacy, out, errs)
				}
			}
			out, err := python(t, "bundle", "--pubkey", recKey, "--checkpoint", filepath.Join(dir, "checkpoint.note"), "--checkpoint-pubkey", cpKey, bundle)
			if err != nil || strings.Contains(out, "LEGACY") != c.legacy {
				t.Errorf("verify.py: %v\n%s", err, out)
			}
		})
	}
	// A format 1 verdict changed to allow (its receipt still says deny),
	// and one whose receipt was changed where it agrees with nothing else
	// (its flags): each caught, in ledger verify and in verify.py.
	lines := readLines(t, "../../fixtures/legacy/format1/bundle.ndjson")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, `"aarts":"deny"`) {
			at = i
		}
	}
	if at < 0 {
		t.Fatal("no denied verdict in the format 1 recording")
	}
	key := "../../fixtures/legacy/format1/receipt-ed25519.pub.pem"
	seq := string(envelopeOf(t, lines[at])["seq"])
	for _, c := range []struct {
		name, from, to string
		kind           string
	}{
		{"verdict says allow", `"decision":"deny","matched_rule_id"`, `"decision":"allow","matched_rule_id"`, "receipt_mismatch"},
		{"receipt flags changed", `"no_principal",`, ``, "bad_signature"},
	} {
		forged := append([]string(nil), lines...)
		if !strings.Contains(forged[at], c.from) {
			t.Fatalf("%s: %q not in the verdict", c.name, c.from)
		}
		forged[at] = strings.Replace(forged[at], c.from, c.to, 1)
		path := filepath.Join(t.TempDir(), "forged.ndjson")
		os.WriteFile(path, []byte(strings.Join(resealAll(t, forged), "\n")+"\n"), 0o600)
		want := "default/legacy-1 seq " + seq + ": " + c.kind
		if code, out, _ := run(t, "", "verify", "--bundle", path, "--pubkey", key); code != 1 || !strings.Contains(out, want) {
			t.Errorf("%s: ledger verify exit %d, want %q:\n%s", c.name, code, want, out)
		}
		if out, err := python(t, "bundle", "--pubkey", key, path); err == nil || !strings.Contains(out, "seq "+seq+": "+c.kind) {
			t.Errorf("%s: verify.py %v, want %s:\n%s", c.name, err, c.kind, out)
		}
	}
}
