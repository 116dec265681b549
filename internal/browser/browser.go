// Package browser opens agentledger's pages in a real headless Chromium
// for tests: it records what the browser itself reports (console
// messages, uncaught exceptions, log entries such as a Content-Security-
// Policy violation, and every network request) so a test can assert that a
// page loaded nothing from anywhere and raised no error, and it reads the
// rendered DOM and takes screenshots.
//
// Chromium comes from Debian's package (.ci/run installs it). Without it a
// test skips, unless AGENTLEDGER_BROWSER_REQUIRED is set, as CI sets it.
package browser

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Path finds Chromium: $AGENTLEDGER_CHROMIUM, then chromium on PATH.
func Path() string {
	if p := os.Getenv("AGENTLEDGER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Browser is one headless Chromium with one tab.
type Browser struct {
	ctx    context.Context
	cancel func()

	mu       sync.Mutex
	problems []string // console errors, exceptions, error log entries
	requests []string // every request's URL
}

// Open starts Chromium for t (skipping t when there is none and CI does
// not require it) and stops it when t ends.
func Open(t testing.TB) *Browser {
	t.Helper()
	path := Path()
	if path == "" {
		if os.Getenv("AGENTLEDGER_BROWSER_REQUIRED") != "" {
			t.Fatal("no Chromium found (AGENTLEDGER_BROWSER_REQUIRED is set): apt-get install chromium")
		}
		t.Skip("no Chromium found (apt-get install chromium, or set AGENTLEDGER_CHROMIUM)")
	}
	// The flags keep Chromium from reaching out on its own (updates,
	// sync, safe browsing): every request seen is the page's.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter"),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &Browser{ctx: ctx, cancel: func() { cancel(); acancel() }}
	t.Cleanup(b.cancel)
	if err := chromedp.Listen(ctx, b.listen); err != nil {
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	err := b.Do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, t, log.Enable, cdp.Empty{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, runtime.Enable, cdp.Empty{})
		return err
	}))
	if err != nil {
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	return b
}

func (b *Browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, strings.Trim(string(a.Value), `"`)+a.Description)
			}
			b.problems = append(b.problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(parts, " ")))
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.problems = append(b.problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
			b.problems = append(b.problems, fmt.Sprintf("log %s %s: %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.URL)
	}
}

// Do runs chromedp actions in the tab, in order.
func (b *Browser) Do(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](t testing.TB, b *Browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// FileURL is the file:// URL of a local path.
func FileURL(t testing.TB, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return (&url.URL{Scheme: "file", Path: abs}).String()
}

// Load opens a URL (a local path is opened as a file) and waits for the
// page to load. What the browser saw before is forgotten.
func (b *Browser) Load(t testing.TB, target string) {
	t.Helper()
	b.mu.Lock()
	b.problems, b.requests = nil, nil
	b.mu.Unlock()
	if !strings.Contains(target, "://") {
		target = FileURL(t, target)
	}
	if err := b.Do(chromedp.Navigate(target), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("load %s: %v", target, err)
	}
}

// DOM is the rendered document, as chromium --dump-dom prints it.
func (b *Browser) DOM(t testing.TB) string {
	return Eval[string](t, b, "document.documentElement.outerHTML")
}

// Count is the number of elements selector matches.
func (b *Browser) Count(t testing.TB, selector string) int {
	return Eval[int](t, b, fmt.Sprintf("document.querySelectorAll(%q).length", selector))
}

// Problems are the console errors and warnings, uncaught exceptions and
// error log entries (a blocked load is one) seen so far.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.problems)
}

// Requests are the URLs of every request the browser made so far.
func (b *Browser) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests)
}

// Clean fails t if the browser saw a problem or a request to anything but
// allowed (URL prefixes).
func (b *Browser) Clean(t testing.TB, allowed ...string) {
	t.Helper()
	// Let late events arrive: a page's last log entry comes after load.
	_ = b.Do(chromedp.Sleep(300 * time.Millisecond))
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the browser reported problems:\n%s", strings.Join(p, "\n"))
	}
	for _, u := range b.Requests() {
		if !slices.ContainsFunc(allowed, func(a string) bool { return strings.HasPrefix(u, a) }) {
			t.Errorf("the page made a request: %s", u)
		}
	}
}

// Screenshot writes a full-page PNG named name into
// $AGENTLEDGER_SCREENSHOTS (docs/img when regenerating README's), or into
// t's temporary directory, and returns its path. dark renders the page
// with prefers-color-scheme: dark.
func (b *Browser) Screenshot(t testing.TB, name string, width int64, dark bool) string {
	t.Helper()
	dir := os.Getenv("AGENTLEDGER_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 800), chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// DumpDOM runs Chromium's own `--headless --dump-dom` on a local page
// and returns the DOM it prints once the page has loaded and its script
// has run.
func DumpDOM(t testing.TB, page string) string {
	t.Helper()
	path := Path()
	if path == "" {
		t.Skip("no Chromium found")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir="+t.TempDir(), "--dump-dom", FileURL(t, page))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", page, err)
	}
	return string(out)
}
