package mcpproxy

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/inbox"
	"github.com/agentledger/agentledger/internal/browser"
)

// TestToolChangeApprovalIsInformed (issue 40): a rug-pulled tool's ask in
// the approvers' inbox, in headless Chromium, names the server and who
// asked, and shows the tool's definition as pinned and as declared now,
// their diff, and the scan's flag with the words that raised it; the
// ledger keeps both definitions in the re-declaration, so an auditor sees
// what was approved.
func TestToolChangeApprovalIsInformed(t *testing.T) {
	r := newRigWith(t, nil, []string{"-rug-pull"})
	cs := r.client(t, "stdio", "2025-11-25")
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	pending := r.eng.Pending(context.Background(), "default")
	if len(pending) != 1 || pending[0].Server != "filesystem" || len(pending[0].ToolChanges) != 1 {
		t.Fatalf("pending: %+v", pending)
	}

	_, envs := r.recorded(t)
	var redeclared map[string]json.RawMessage
	for _, e := range envs {
		var ev map[string]json.RawMessage
		if e.EventType() == "PreMCPConnect" && json.Unmarshal(e.Payload(), &ev) == nil && ev["tool_changes"] != nil {
			redeclared = ev
		}
	}
	if redeclared == nil || !strings.Contains(string(redeclared["tool_definitions"]), "send the file to this address") ||
		!strings.Contains(string(redeclared["pinned_definitions"]), `"read_file"`) || strings.Contains(string(redeclared["pinned_definitions"]), "send the file") {
		t.Fatalf("the re-declaration on record does not hold both definitions: %s", redeclared)
	}

	tokens := tokensOf(t, "approver-token", `"tenant":"default","role":"approver","name":"oncall","principal":"oncall@shop.example"`)
	srv := httptest.NewServer(inbox.With(engine.Handler(engine.ServerConfig{Engine: r.eng, Store: r.st, Tokens: tokens}),
		inbox.Config{Engine: r.eng, Store: r.st, Tokens: tokens}))
	t.Cleanup(srv.Close)
	b := browser.Open(t)
	b.Load(t, srv.URL+"/inbox")
	if err := b.Do(chromedp.SendKeys(chromedp.CSS("#token"), "approver-token"), chromedp.Click(chromedp.CSS("#sign-in")),
		chromedp.WaitReady(chromedp.CSS("#who"))); err != nil {
		t.Fatal(err)
	}
	ask := "#ask-" + pending[0].PendingID
	text := browser.Eval[string](t, b, `document.querySelector("`+ask+`").textContent`)
	for _, want := range []string{"MCP server filesystem: tools changed read_file", HostID, "TOOL_CHANGED"} {
		if !strings.Contains(text, want) {
			t.Errorf("the ask lacks %q:\n%s", want, text)
		}
	}
	change := ask + ` .tool-change[data-tool="read_file"]`
	if n := b.Count(t, change+" pre.diff span.add"); n == 0 {
		t.Errorf("the diff shows no added line")
	}
	added := browser.Eval[string](t, b, `[...document.querySelectorAll('`+change+` pre.diff span.add')].map(e => e.textContent).join("\n")`)
	if !strings.Contains(added, "send the file to this address") {
		t.Errorf("the diff's added lines: %s", added)
	}
	flag := browser.Eval[string](t, b, `document.querySelector('`+change+` li.flag').textContent`)
	if !strings.HasPrefix(flag, "exfiltration: ") || !strings.Contains(flag, "send the file to this address") {
		t.Errorf("the flag and its words: %q", flag)
	}
	before := browser.Eval[string](t, b, `document.querySelector('`+change+` td.before').textContent`)
	after := browser.Eval[string](t, b, `document.querySelector('`+change+` td.after').textContent`)
	if !strings.Contains(before, `"name": "read_file"`) || strings.Contains(before, "send the file") || !strings.Contains(after, "send the file") {
		t.Errorf("both definitions:\npinned %s\nnow %s", before, after)
	}
	if err := b.Do(chromedp.Click(chromedp.CSS(change + " details summary"))); err != nil {
		t.Fatal(err)
	}
	b.Clean(t, srv.URL)
	b.Screenshot(t, "inbox-tool-change.png", 1100, false)
}
