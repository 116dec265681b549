package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/internal/browser"
)

// TestIncidentPageInBrowser imports a shipped recording (the real Claude
// Code session, with an approval), takes a checkpoint, and opens `ledger
// show --format html` of it in headless Chromium: no console error, no
// request beyond the file; every envelope in order, every verdict with its
// decision, the resolution with who gave it, receipts verified with the
// fixture key, the head covered by the checkpoint; sealed values stay
// sealed.
func TestIncidentPageInBrowser(t *testing.T) {
	b := browser.Open(t)
	const rec = "../../fixtures/sessions/coding-agent/host-claude-code.ndjson"
	data := filepath.Join(t.TempDir(), "d")
	if code, _, errs := run(t, "", "--data", data, "import", rec); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := run(t, "", "--data", data, "checkpoint", "-o", filepath.Join(t.TempDir(), "cp")); code != 0 {
		t.Fatal(errs)
	}
	types, decisions := recordedTypes(t, rec, "host-claude-code")
	code, out, errs := run(t, "", "--data", data, "--format", "html", "show", "--pubkey", "../../fixtures/keys/fixture-ed25519.pub.pem", "host-claude-code")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	path := filepath.Join(t.TempDir(), "incident.html")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(browser.DumpDOM(t, path), `<tr id="seq-`); n != len(types) {
		t.Errorf("--dump-dom: %d rows, want %d envelopes", n, len(types))
	}
	b.Load(t, path)
	if n := b.Count(t, "#timeline tr.row"); n != len(types) {
		t.Errorf("%d rows, want %d envelopes", n, len(types))
	}
	for i, typ := range types {
		if got := browser.Eval[string](t, b, fmt.Sprintf(`document.querySelector("#seq-%d td:nth-child(3)").textContent`, i)); got != typ {
			t.Errorf("seq %d: %q, want %q", i, got, typ)
		}
	}
	for d, n := range decisions {
		if got := browser.Eval[string](t, b, fmt.Sprintf(`document.getElementById("n-%s").textContent`, d)); got != fmt.Sprint(n) {
			t.Errorf("%s: %s on the page, %d recorded", d, got, n)
		}
	}
	if n := b.Count(t, "svg rect"); n != decisions["allow"]+decisions["ask"]+decisions["deny"] {
		t.Errorf("the decision strip has %d squares", n)
	}
	for id, want := range map[string]string{"chain-status": "ok", "receipt-status": "ok", "checkpoint-status": "ok"} {
		if got := browser.Eval[string](t, b, fmt.Sprintf(`document.querySelector("#%s b").textContent`, id)); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	if n := b.Count(t, "tr.resolution"); n == 0 || !strings.Contains(b.DOM(t), "by ") {
		t.Error("the resolution and who gave it are not shown")
	}
	if n := b.Count(t, ".receipt"); n != decisions["allow"]+decisions["ask"]+decisions["deny"] {
		t.Errorf("%d receipt lines", n)
	}
	b.Clean(t, browser.FileURL(t, path))
	b.Screenshot(t, "incident.png", 1200, false)
}

// recordedTypes reads a bundle's envelope types in seq order for one
// session, and its verdicts by decision.
func recordedTypes(t *testing.T, path, session string) ([]string, map[string]int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var types []string
	decisions := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var e struct {
			Session string `json:"session_id"`
			Type    string `json:"event_type"`
			Payload struct {
				Verdict struct {
					Decision string `json:"decision"`
				} `json:"verdict"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Session != session {
			continue
		}
		types = append(types, e.Type)
		if e.Type == "Verdict" {
			decisions[e.Payload.Verdict.Decision]++
		}
	}
	return types, decisions
}

// TestShowSaysWhoResolved: the text timeline reads a resolution as what
// was resolved and by whom, not as cut-off JSON.
func TestShowSaysWhoResolved(t *testing.T) {
	data := filepath.Join(t.TempDir(), "d")
	if code, _, errs := run(t, "", "--data", data, "import", "../../fixtures/sessions/coding-agent/host-claude-code.ndjson"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := run(t, "", "--data", data, "show", "host-claude-code")
	if code != 0 || !strings.Contains(out, "Resolution         ") || !strings.Contains(out, "approved for seq 18 by host") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
}

// TestShowSaysWhatTheHostWasTold: a verdict the host got no decision for
// is not printed as a bare allow, and a monitored verdict says it was not
// enforced.
func TestShowSaysWhatTheHostWasTold(t *testing.T) {
	data := filepath.Join(t.TempDir(), "d")
	if code, _, errs := run(t, "", "--data", data, "import", "../../fixtures/sessions/coding-agent/host-claude-code.ndjson"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := run(t, "", "--data", data, "show", "host-claude-code")
	if code != 0 || !strings.Contains(out, "[host given no decision: its own rules decided]") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	monitored := verdictGist(aarts.VerdictRecord{Verdict: aarts.Verdict{Decision: aarts.Deny}, ReasonCode: "SECRET_EXFIL", HostAnswer: aarts.HostAnswerNone, Enforced: new(bool)})
	if !strings.Contains(monitored, "deny SECRET_EXFIL [monitor mode: recorded, not enforced] [host given no decision") {
		t.Errorf("a monitored deny reads %q", monitored)
	}
}
