package live

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixtureServer builds the repository's MCP fixture server.
func fixtureServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcpserver")
	out, err := exec.Command("go", "build", "-o", bin, "../../fixtures/mcpserver").CombinedOutput()
	if err != nil {
		t.Fatalf("build the fixture MCP server: %v\n%s", err, out)
	}
	return bin
}

func TestToolsAgainstFixtureServer(t *testing.T) {
	ctx := context.Background()
	tools, err := ConnectMCP(ctx, fixtureServer(t), "")
	if err != nil {
		t.Fatal(err)
	}
	defer tools.Close()
	names, err := tools.Names(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"read_file", "list_dir", "run_tests", "create_issue"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	r, err := tools.Call(ctx, "read_file", map[string]any{"path": "checkout/total.go"})
	if err != nil || r.IsError || !strings.Contains(r.Text, "func Total") {
		t.Fatalf("read_file: %+v %v", r, err)
	}
	r, err = tools.Call(ctx, "read_file", map[string]any{"path": "nope.go"})
	if err != nil || !r.IsError || !strings.Contains(r.Text, "no such file") {
		t.Fatalf("a missing file is a tool error: %+v %v", r, err)
	}
	r, err = tools.Call(ctx, "run_tests", map[string]any{"package": "./integration/..."})
	if err != nil || !r.IsError || !strings.Contains(r.Text, "FAIL") {
		t.Fatalf("run_tests: %+v %v", r, err)
	}
	if _, err := tools.Call(ctx, "format_disk", map[string]any{}); err == nil {
		t.Fatal("an unknown tool is a protocol error")
	}
	if _, err := ConnectMCP(ctx, "", ""); err == nil {
		t.Fatal("no server named is an error")
	}
}

func TestModelSpeaksChatCompletions(t *testing.T) {
	var got chatRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"bad request line"}}`, http.StatusBadRequest)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if got.Model == "missing" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"message":"model missing not found"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,
			"tool_calls":[{"id":"call_9","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"a.go\", \"limit\": 10}"}}]},
			"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":31,"completion_tokens":7,"total_tokens":38}}`))
	}))
	defer srv.Close()
	m := &Model{BaseURL: srv.URL + "/v1", Name: "candidate", APIKey: "sk-test"}
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "read_file", "parameters": map[string]any{"type": "object"}}}}
	c, err := m.Complete(context.Background(), []Message{{Role: "user", Content: "read a.go"}}, tools)
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "candidate" || len(got.Messages) != 1 || got.Messages[0].Content != "read a.go" || len(got.Tools) != 1 || got.Stream {
		t.Fatalf("request %+v", got)
	}
	if c.FinishReason != "tool_calls" || c.PromptTokens != 31 || c.OutputTokens != 7 || len(c.ToolCalls) != 1 {
		t.Fatalf("completion %+v", c)
	}
	// Ids and key order do not matter; names and argument values do.
	p := Normalize(c.ToolCalls)
	if p[0] != (PlannedCall{Name: "read_file", Arguments: `{"limit":10,"path":"a.go"}`}) {
		t.Fatalf("normalized %+v", p)
	}
	m.Name = "missing"
	if _, err := m.Complete(context.Background(), nil, nil); err == nil || !strings.Contains(err.Error(), "HTTP 404: model missing not found") {
		t.Fatalf("error answer: %v", err)
	}
}

// TestToolsOverStreamableHTTP runs the fixture server on Streamable HTTP
// and connects with --mcp-url's transport.
func TestToolsOverStreamableHTTP(t *testing.T) {
	cmd := exec.Command(fixtureServer(t), "-http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	_, url, ok := strings.Cut(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("no URL in %q", line)
	}
	ctx := context.Background()
	tools, err := ConnectMCP(ctx, "", url)
	if err != nil {
		t.Fatal(err)
	}
	defer tools.Close()
	r, err := tools.Call(ctx, "list_dir", map[string]any{"path": "checkout"})
	if err != nil || r.IsError || r.Text != "checkout/total.go\ncheckout/total_test.go" {
		t.Fatalf("list_dir over HTTP: %+v %v", r, err)
	}
}
