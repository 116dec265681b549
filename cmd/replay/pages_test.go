package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"

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
			// Chromium's own --dump-dom: every changed step is there,
			// highlighted, and so is every changed session.
			dom := browser.DumpDOM(t, path)
			steps := 0
			for _, r := range rep.Sessions {
				for _, st := range r.Timeline {
					if st.Changed {
						steps++
					}
				}
			}
			if got := strings.Count(dom, `class="step changed"`); got != steps || steps == 0 {
				t.Errorf("--dump-dom: %d changed steps, want %d", got, steps)
			}
			if got := strings.Count(dom, `<section class="box session"`); got != rep.Summary.Changed {
				t.Errorf("--dump-dom: %d changed sessions, want %d", got, rep.Summary.Changed)
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

// largeReport is a 10,000-session report made from the strict replay of
// the shipped sessions: their reports repeated under new session ids
// (about one in twelve changed, with its timeline).
func largeReport(t testing.TB, n int) *replay.Report {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmdline.Run(context.Background(), newApp(&out, &errb), []string{"replay", "exact", "--bundle", sessions, "--policy", "default",
		"--policy", fx + "/policies/strict", "--manifest", manifest, "--format", "json"}, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var base replay.Report
	if err := json.Unmarshal(out.Bytes(), &base); err != nil {
		t.Fatal(err)
	}
	var all []*replay.SessionReport
	for i := 0; len(all) < n; i++ {
		for _, r := range base.Sessions {
			if len(all) == n {
				break
			}
			c := *r
			c.SessionID = fmt.Sprintf("%s-%05d", r.SessionID, i)
			all = append(all, &c)
		}
	}
	return replay.NewReport(all, base.Summary.PolicyAfter)
}

// TestLargeReportInBrowser renders a 10,000-session report: the file is
// under 10 MB, Chromium opens it without a problem, identical sessions
// are collapsed into one list, and the filter box narrows the page to one
// session.
func TestLargeReportInBrowser(t *testing.T) {
	rep := largeReport(t, 10_000)
	path := filepath.Join(t.TempDir(), "large.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := replay.Render(f, "html", rep); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, _ := os.Stat(path)
	if fi.Size() >= 10<<20 {
		t.Fatalf("a 10,000-session report is %d bytes", fi.Size())
	}
	b := browser.Open(t)
	b.Load(t, path)
	if got := browser.Eval[string](t, b, `document.getElementById("n-sessions").textContent`); got != "10000" {
		t.Fatalf("sessions %s", got)
	}
	if n := b.Count(t, "section.session"); n != rep.Summary.Changed || b.Count(t, "#identical li") != rep.Summary.Identical {
		t.Fatalf("%d changed sections (want %d), %d identical listed (want %d)", n, rep.Summary.Changed, b.Count(t, "#identical li"), rep.Summary.Identical)
	}
	target := rep.Sessions[0]
	for _, r := range rep.Sessions {
		if !r.Identical {
			target = r
			break
		}
	}
	if err := b.Do(chromedp.SendKeys(chromedp.CSS("#filter"), target.SessionID)); err != nil {
		t.Fatal(err)
	}
	if shown := browser.Eval[int](t, b, `Array.from(document.querySelectorAll("section.session")).filter(s => !s.hidden).length`); shown != 1 {
		t.Fatalf("filtering by %s shows %d sessions", target.SessionID, shown)
	}
	b.Clean(t, browser.FileURL(t, path))
	t.Logf("10,000 sessions: %d bytes", fi.Size())
}

// BenchmarkReportHTML10k renders the 10,000-session report and opens it
// in headless Chromium, beside a plain page of the same size (one <pre>):
// ms_per_load is until the page is laid out, ratio_vs_plain compares with
// the plain page in the same run.
func BenchmarkReportHTML10k(b *testing.B) {
	rep := largeReport(b, 10_000)
	dir := b.TempDir()
	path, plain := filepath.Join(dir, "large.html"), filepath.Join(dir, "plain.html")
	var buf bytes.Buffer
	if err := replay.Render(&buf, "html", rep); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(path, buf.Bytes(), 0o644)
	os.WriteFile(plain, []byte("<!doctype html><title>plain</title><pre>"+strings.Repeat("x", buf.Len()-40)+"</pre>"), 0o644)
	br := browser.Open(b)
	load := func(p string) time.Duration {
		start := time.Now()
		br.Load(b, p)
		browser.Eval[int](b, br, "document.body.scrollHeight") // laid out
		return time.Since(start)
	}
	var report, base time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		report += load(path)
		base += load(plain)
	}
	b.ReportMetric(float64(report.Milliseconds())/float64(b.N), "ms_per_load")
	b.ReportMetric(float64(base.Milliseconds())/float64(b.N), "plain_ms_per_load")
	b.ReportMetric(float64(report)/float64(base), "ratio_vs_plain")
	b.ReportMetric(float64(buf.Len()), "bytes")
}
