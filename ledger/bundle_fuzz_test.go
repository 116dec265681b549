package ledger

import (
	"bytes"
	"testing"
)

// FuzzReadBundle: any bundle either fails to read with an error, or
// verifies into a report; LoadBundle returns chains exactly when the
// report has no fault, and those chains re-export to a bundle that
// verifies clean.
func FuzzReadBundle(f *testing.F) {
	var good bytes.Buffer
	head := Head{}
	for i := 0; i < 3; i++ {
		e, err := Seal(head, Event{TenantID: "t", SessionID: "s", EventType: "PreToolUse", TsUnixMs: int64(i), Payload: []byte(`{"i":1}`)}, Limits{})
		if err != nil {
			f.Fatal(err)
		}
		good.Write(e.Bytes())
		good.WriteByte('\n')
		head = e.Head()
	}
	f.Add(good.Bytes())
	f.Add(append(bytes.Clone(good.Bytes()), good.Bytes()...))
	f.Add([]byte("\n\n{}\n"))
	f.Add(bytes.Replace(good.Bytes(), []byte(`"seq":1`), []byte(`"seq":2`), 1))
	// Small limits keep each run cheap; the limits themselves are tested
	// elsewhere.
	lim := Limits{MaxBytes: 1 << 16, MaxDepth: 32}
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := VerifyBundle(bytes.NewReader(data), Deep, lim)
		chains, rep2, err2 := LoadBundle(bytes.NewReader(data), lim)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("VerifyBundle and LoadBundle disagree: %v / %v", err, err2)
		}
		if err != nil {
			return
		}
		if rep.OK() != rep2.OK() || rep.OK() != (chains != nil || rep.Envelopes == 0) {
			t.Fatalf("report OK %v, load OK %v, %d chains", rep.OK(), rep2.OK(), len(chains))
		}
		if !rep.OK() {
			return
		}
		var out bytes.Buffer
		w := NewBundleWriter(&out)
		for _, c := range chains {
			for _, e := range c {
				if err := w.Write(e); err != nil {
					t.Fatal(err)
				}
			}
		}
		w.Flush()
		again, err := VerifyBundle(&out, Deep, lim)
		if err != nil || !again.OK() || again.Envelopes != rep.Envelopes {
			t.Fatalf("re-exported bundle: %v %+v", err, again)
		}
	})
}
