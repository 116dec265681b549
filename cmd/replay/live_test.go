package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/browser"
	"github.com/agentledger/agentledger/internal/proctest"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// readFileModel is a chat model (the OpenAI API) that always plans to read
// checkout/total.go through the filesystem MCP server.
func readFileModel(t *testing.T) *httptest.Server {
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function",` +
			`"function":{"name":"mcp__filesystem__read_file","arguments":"{\"path\":\"checkout/total.go\"}"}}]},"finish_reason":"tool_calls"}],` +
			`"usage":{"prompt_tokens":50,"completion_tokens":5}}`))
	}))
	t.Cleanup(model.Close)
	return model
}

// TestLiveCommand runs `replay live` on the recorded MCP session with a
// model that always plans to read checkout/total.go: it agrees with the
// recording on the first step only. The live run lands in the ledger as a
// session that verifies.
func TestLiveCommand(t *testing.T) {
	model := readFileModel(t)
	bin := filepath.Join(t.TempDir(), "mcpserver")
	if out, err := exec.Command("go", "build", "-o", bin, fx+"/mcpserver").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	data := t.TempDir()
	code, out, errs := run(t, "live", "--bundle", sessions+"/mcp-model-swap.ndjson", "--manifest", manifest, "--data", data,
		"--model-url", model.URL, "--model", "always-read", "--mcp-command", bin, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rep := struct {
		Sessions []struct {
			LiveSessionID string  `json:"live_session_id"`
			ModelSteps    int     `json:"model_steps"`
			AgreeingSteps int     `json:"agreeing_steps"`
			FirstDiv      *uint64 `json:"first_divergence_seq"`
		} `json:"sessions"`
	}{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Sessions) != 1 || rep.Sessions[0].ModelSteps != 2 || rep.Sessions[0].AgreeingSteps != 1 || rep.Sessions[0].FirstDiv == nil ||
		!strings.HasPrefix(rep.Sessions[0].LiveSessionID, "mcp-fix-total~live-") {
		t.Fatalf("report: %s", out)
	}
	st, err := store.Open(context.Background(), store.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	vr, err := st.Verify(context.Background(), store.Filter{Session: rep.Sessions[0].LiveSessionID}, ledger.Deep, nil)
	if err != nil || !vr.OK() || vr.Envelopes == 0 {
		t.Fatalf("the live session does not verify: %v %+v", err, vr)
	}
	// The same run as a page: recorded and candidate side by side.
	page := filepath.Join(t.TempDir(), "live.html")
	if code, _, errs := run(t, "live", "--bundle", sessions+"/mcp-model-swap.ndjson", "--manifest", manifest, "--data", t.TempDir(),
		"--model-url", model.URL, "--model", "always-read", "--mcp-command", bin, "--format", "html", "-o", page); code != 0 {
		t.Fatalf("html: exit %d: %s", code, errs)
	}
	b := browser.Open(t)
	b.Load(t, page)
	if n, changed := b.Count(t, "table.side-by-side tr.step"), b.Count(t, "table.side-by-side tr.step.changed"); n != 2 || changed != 1 {
		t.Errorf("side by side: %d steps, %d differing; want 2 and 1", n, changed)
	}
	if got := browser.Eval[string](t, b, `document.getElementById("n-agree").textContent`); got != "1/2" {
		t.Errorf("agreement %q", got)
	}
	b.Clean(t, browser.FileURL(t, page))
	b.Screenshot(t, "replay-live.png", 1200, false)
	if code, _, _ := run(t, "live", "--bundle", sessions, "--model-url", model.URL, "--model", "m"); code != 2 {
		t.Fatalf("no MCP server: exit %d, want 2", code)
	}
}

// TestLiveThroughTheProxy points replay live's --mcp-command at `engine
// mcp-proxy` in front of the fixture server: the candidate model's tool
// calls are re-executed through the gateway, which judges and records
// them in its own ledger, and the replay's report is the same as without
// it.
func TestLiveThroughTheProxy(t *testing.T) {
	model := readFileModel(t)
	bins := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bins+"/", fx+"/mcpserver", "../engine").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	proxyData, calls := t.TempDir(), filepath.Join(t.TempDir(), "calls")
	proxy := strings.Join([]string{filepath.Join(bins, "engine"), "--data", proxyData, "mcp-proxy", "--manifest", manifest,
		"--name", "filesystem", "--", filepath.Join(bins, "mcpserver"), "-calls", calls}, " ")
	code, out, errs := run(t, "live", "--bundle", sessions+"/mcp-model-swap.ndjson", "--manifest", manifest, "--data", t.TempDir(),
		"--model-url", model.URL, "--model", "always-read", "--mcp-command", proxy, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, `"agreeing_steps": 1`) && !strings.Contains(out, `"agreeing_steps":1`) {
		t.Fatalf("report: %s", out)
	}
	if got, _ := os.ReadFile(calls); !strings.Contains(string(got), "read_file") {
		t.Fatalf("the server received %q", got)
	}
	// The proxy went through the local engine it started on its data
	// directory (as a hook would); stopped, it lets the directory go.
	stopHolder(t, proxyData)
	st, err := store.Open(context.Background(), store.Config{DataDir: proxyData})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	infos, err := st.Sessions(context.Background(), store.Filter{})
	if err != nil || len(infos) != 1 {
		t.Fatalf("the proxy's sessions: %v %+v", err, infos)
	}
	judged := 0
	st.ReadSession(context.Background(), infos[0].Key(), func(m store.Msg) error {
		if strings.Contains(string(m.Data), `"tool_name_native":"mcp__filesystem__read_file"`) && strings.Contains(string(m.Data), `"hook_point":"PreToolUse"`) {
			judged++
		}
		return nil
	})
	if judged == 0 {
		t.Fatal("the replayed calls are not on the proxy's record")
	}
}

// stopHolder stops the process holding a data directory, if any, and
// waits for it to let the directory go.
func stopHolder(t *testing.T, data string) {
	t.Helper()
	if !proctest.StopHolder(data) {
		t.Fatalf("%s is still held", data)
	}
}
