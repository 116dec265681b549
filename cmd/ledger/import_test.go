package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/ledger"
)

// streamOrder returns the lines of a per-session bundle in the order the
// stream holds them: by time, sessions interleaved.
func streamOrder(t *testing.T, bundle []byte) [][]byte {
	t.Helper()
	lines := bytes.SplitAfter(bundle, []byte("\n"))
	lines = slices.DeleteFunc(lines, func(l []byte) bool { return len(l) == 0 })
	ts := func(l []byte) int64 {
		e, err := ledger.Decode(bytes.TrimSuffix(l, []byte("\n")), ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return e.TsUnixMs()
	}
	slices.SortStableFunc(lines, func(a, b []byte) int { return int(ts(a) - ts(b)) })
	return lines
}

// TestImportStreamOrder imports a file whose sessions are interleaved as
// the stream holds them: it is accepted and stored as the per-session
// export is, and a true fault in it is still refused, naming what and
// where, with nothing appended.
func TestImportStreamOrder(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if code, _, errs := run(t, events([]string{"s-1", "s.2", "s-1", "ü *>/"}, 30), "--data", a, "append"); code != 0 {
		t.Fatalf("append: exit %d: %s", code, errs)
	}
	exported := filepath.Join(dir, "export.ndjson")
	if code, _, errs := run(t, "", "--data", a, "export", "-o", exported); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	want, _ := os.ReadFile(exported)
	lines := streamOrder(t, want)
	stream := filepath.Join(dir, "stream.ndjson")
	os.WriteFile(stream, bytes.Join(lines, nil), 0o600)
	if bytes.Equal(bytes.Join(lines, nil), want) {
		t.Fatal("the stream-order file is the export: the test shows nothing")
	}

	// ledger verify and verify.py read it as it is: interleaving is no
	// fault.
	if code, out, errs := run(t, "", "verify", "--deep", "--bundle", stream); code != 0 {
		t.Errorf("verify of a stream-order file: exit %d: %s %s", code, out, errs)
	}
	if out, err := python(t, "bundle", stream); err != nil {
		t.Errorf("verify.py of a stream-order file: %v\n%s", err, out)
	}
	b := filepath.Join(dir, "b")
	if code, out, errs := run(t, "", "--data", b, "import", stream); code != 0 || !strings.Contains(out, "imported 3 sessions: 30 envelopes appended") {
		t.Fatalf("import of a stream-order file: exit %d: %s %s", code, out, errs)
	}
	again := filepath.Join(dir, "again.ndjson")
	if code, _, errs := run(t, "", "--data", b, "export", "-o", again); code != 0 {
		t.Fatalf("export b: exit %d: %s", code, errs)
	}
	if got, _ := os.ReadFile(again); !bytes.Equal(got, want) {
		t.Fatalf("the imported store exports\n%s\nwant\n%s", got, want)
	}

	// Faults in a stream-order file: a gap (line 8, ü seq 1, left out), a
	// fork (a second envelope at s-1 seq 1), a bad hash (s-1 seq 5).
	gap := slices.Delete(slices.Clone(lines), 7, 8)
	other := filepath.Join(dir, "other")
	run(t, events([]string{"s-1"}, 2), "--data", other, "append")
	_, otherBundle, _ := run(t, "", "--data", other, "export")
	forked := bytes.SplitAfter([]byte(otherBundle), []byte("\n"))[1] // another s-1 seq 1
	fork := slices.Insert(slices.Clone(lines), 20, forked)
	badHash := slices.Clone(lines)
	badHash[10] = bytes.Replace(badHash[10], []byte(`"echo 10"`), []byte(`"echo Y"`), 1)
	for _, tc := range []struct {
		name  string
		lines [][]byte
		want  []string
	}{
		{"gap", gap, []string{"acme/ü *>/ seq 2: seq_gap", "[line 11]"}},
		{"fork", fork, []string{"acme/s-1 seq 1: duplicate", "the chain forks", "[line 21]"}},
		{"bad hash", badHash, []string{"acme/s-1 seq 5: hash_mismatch", "[line 11]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.ndjson")
			os.WriteFile(p, bytes.Join(tc.lines, nil), 0o600)
			c := filepath.Join(t.TempDir(), "c")
			code, _, errs := run(t, "", "--data", c, "import", p)
			if code != 1 || !strings.Contains(errs, "nothing was imported") {
				t.Fatalf("import: exit %d: %s", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("import refusal says\n%s\nwant it to name %q", errs, w)
				}
			}
			if strings.Contains(errs, "foreign_session") {
				t.Errorf("import refusal names interleaving a fault:\n%s", errs)
			}
			if code, out, _ := run(t, "", "--data", c, "export"); code == 0 && out != "" {
				t.Errorf("a refused import appended:\n%s", out)
			}
		})
	}
}
