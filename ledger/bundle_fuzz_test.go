package ledger

import (
	"bytes"
	"testing"
)

// FuzzReadBundle: any bundle either fails to read with an error, or
// verifies into a report; LoadBundle returns chains exactly when its
// report has no fault (whatever verifies loads; a bundle in stream order
// loads too), and those chains re-export to a bundle that verifies clean.
func FuzzReadBundle(f *testing.F) {
	var good, stream bytes.Buffer
	heads := map[string]Head{}
	for i := 0; i < 3; i++ {
		for _, session := range []string{"s", "u"} {
			e, err := Seal(heads[session], Event{TenantID: "t", SessionID: session, EventType: "PreToolUse", TsUnixMs: int64(i), Payload: []byte(`{"i":1}`)}, Limits{})
			if err != nil {
				f.Fatal(err)
			}
			if session == "s" {
				good.Write(e.Bytes())
				good.WriteByte('\n')
			}
			stream.Write(e.Bytes())
			stream.WriteByte('\n')
			heads[session] = e.Head()
		}
	}
	f.Add(good.Bytes())
	f.Add(stream.Bytes()) // stream order: two sessions interleaved
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
		// LoadBundle also takes stream order (sessions interleaved), which
		// VerifyBundle reads as splices: it loads what verifies, and what
		// else it loads verify faults only as foreign_session.
		if rep.OK() && !rep2.OK() || rep2.OK() != (chains != nil || rep2.Envelopes == 0) {
			t.Fatalf("report OK %v, load OK %v, %d chains", rep.OK(), rep2.OK(), len(chains))
		}
		if !rep2.OK() {
			return
		}
		for _, f := range rep.Faults {
			if f.Kind != ForeignSession {
				t.Fatalf("loaded a bundle that verify faults: %v", f)
			}
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
