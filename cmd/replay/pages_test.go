package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/browser"
	"github.com/agentledger/agentledger/replay"
)

// TestReportPagesInBrowser renders the HTML report of the strict and the
// loose replay of fixtures/reports in headless Chromium: no console error,
// no request beyond the file itself, the summary's counts on the page, a
// timeline per changed session with every changed step highlighted, and
// every caused_by link landing on a row. Screenshots are written
// (AGENTLEDGER_SCREENSHOTS=docs/img regenerates README's).
func TestReportPagesInBrowser(t *testing.T) {
	b := browser.Open(t)
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"strict", []string{"--policy", "default", "--policy", fx + "/policies/strict", "--manifest", manifest}, 0},
		{"loose", []string{"--manifest", fx + "/manifests/coding-agent-loose.json"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := append([]string{"exact", "--bundle", sessions}, tc.args...)
			_, out, _ := run(t, append(base, "--format", "json")...)
			rep := decode(t, out)
			path := filepath.Join(t.TempDir(), tc.name+".html")
			if code, _, errs := run(t, append(base, "--format", "html", "-o", path)...); code != tc.code {
				t.Fatalf("exit %d: %s", code, errs)
			}
			b.Load(t, path)
			checkReportPage(t, b, rep)
			b.Clean(t, browser.FileURL(t, path))
			shot := b.Screenshot(t, "replay-report-"+tc.name+".png", 1200, false)
			if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
				t.Fatalf("screenshot %s: %v", shot, err)
			}
			b.Screenshot(t, "replay-report-"+tc.name+"-dark.png", 1200, true)
		})
	}
}

// checkReportPage checks the rendered page against the report it shows.
func checkReportPage(t *testing.T, b *browser.Browser, rep *replay.Report) {
	t.Helper()
	s := rep.Summary
	for id, want := range map[string]int{"n-sessions": s.Sessions, "n-steps": s.Steps, "n-identical": s.Identical, "n-changed": s.Changed,
		"n-faulty": s.Faulty, "n-diffs": s.Diffs} {
		if got := browser.Eval[string](t, b, fmt.Sprintf("document.getElementById(%q).textContent", id)); got != fmt.Sprint(want) {
			t.Errorf("#%s = %q, want %d", id, got, want)
		}
	}
	gate := browser.Eval[string](t, b, `document.getElementById("gate").textContent`)
	if want := map[bool]string{true: "passed", false: "failed"}[rep.Gate.Passed]; gate != want {
		t.Errorf("gate %q, want %q", gate, want)
	}
	if n := b.Count(t, "section.session"); n != s.Changed {
		t.Errorf("%d changed sessions shown, want %d", n, s.Changed)
	}
	changedSteps := 0
	for i, r := range rep.Sessions {
		seqs := map[uint64]bool{}
		for _, d := range r.Diffs {
			seqs[d.Seq] = true
		}
		changedSteps += len(seqs)
		for seq := range seqs {
			sel := fmt.Sprintf("#s%d-%d", i, seq)
			if n := b.Count(t, sel+".changed"); n != 1 {
				t.Errorf("%s/%s seq %d: the changed step is not highlighted (%s)", r.TenantID, r.SessionID, seq, sel)
			}
		}
		if len(r.Timeline) > 0 {
			if n := b.Count(t, fmt.Sprintf("#s%d tr.step", i)); n != len(r.Timeline) {
				t.Errorf("%s: %d timeline rows, want %d", r.SessionID, n, len(r.Timeline))
			}
		}
	}
	if n := b.Count(t, "tr.step.changed"); n != changedSteps {
		t.Errorf("%d highlighted steps, want %d", n, changedSteps)
	}
	dangling := browser.Eval[int](t, b, `Array.from(document.querySelectorAll("a.caused-by")).filter(a => !document.getElementById(a.getAttribute("href").slice(1))).length`)
	if dangling != 0 {
		t.Errorf("%d caused_by links lead nowhere", dangling)
	}
	// Readable without JavaScript: the filter box is the script's only
	// addition, and every row is in the document as written.
	dom := b.DOM(t)
	for _, r := range rep.Sessions {
		if !r.Identical && !strings.Contains(dom, r.SessionID) {
			t.Errorf("%s is not on the page", r.SessionID)
		}
	}
	if shown := browser.Eval[bool](t, b, `!document.getElementById("filter").hidden`); !shown {
		t.Error("the filter box is not shown with JavaScript on")
	}
}
