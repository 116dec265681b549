package mcpproxy

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/manifest"
)

// TestReadInitialize: the stdio proxy reads what a client declares from
// its initialize (roots only when declared: the SDK's own decoding cannot
// tell), and the client's input reaches the proxy whole, that message
// first (a stateless client's first request declares in its _meta);
// anything else declares nothing and is passed on as it came.
func TestReadInitialize(t *testing.T) {
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true}},"clientInfo":{"name":"c","version":"1"}}}` + "\n"
	const rest = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	for _, c := range []struct {
		name, input                    string
		sampling, elicitURL, roots, ok bool
	}{
		{"all", initialize + rest, true, true, true, true},
		{"no roots", strings.Replace(initialize, `,"roots":{"listChanged":true}`, "", 1) + rest, true, true, false, true},
		{"not initialize", rest + initialize, false, false, false, false},
		{"not JSON", "hello\n" + rest, false, false, false, false},
		{"no newline", strings.TrimSuffix(initialize, "\n"), true, true, true, true},
		{"stateless discover", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"roots":{"listChanged":true}}}}}` + "\n" + rest, true, false, true, true},
		{"oversized", strings.Repeat("x", MaxMessageBytes+10) + "\n" + rest, false, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			caps, r, err := ReadInitialize(strings.NewReader(c.input))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil || string(got) != c.input {
				t.Fatalf("the input passed on differs (%d bytes of %d; %v)", len(got), len(c.input), err)
			}
			if (caps != nil) != c.ok {
				t.Fatalf("capabilities %+v, want read %v", caps, c.ok)
			}
			if caps == nil {
				return
			}
			if (caps.Sampling != nil) != c.sampling || (caps.Elicitation != nil && caps.Elicitation.URL != nil) != c.elicitURL {
				t.Errorf("sampling %v, elicitation %+v", caps.Sampling, caps.Elicitation)
			}
			if (caps.RootsV2 != nil) != c.roots || (c.roots && !caps.RootsV2.ListChanged) {
				t.Errorf("roots %+v, want declared %v", caps.RootsV2, c.roots)
			}
		})
	}
	if _, _, err := ReadInitialize(strings.NewReader("")); err != io.EOF {
		t.Errorf("no input: %v, want EOF", err)
	}
}

// TestTheServersRequestsReachTheClient: through the proxy (stdio and HTTP
// at 2025-11-25, HTTP at 2026-07-28, where the client is stateless and is
// asked through multi-round-trip), a tool whose server samples the
// client's model gets the client's answer, the sampling judged and
// recorded (PreLLMRequest, PostLLMResponse) and the call judged once; a
// tool that reports progress has its three steps reach the client.
func TestTheServersRequestsReachTheClient(t *testing.T) {
	for _, c := range []struct{ face, version string }{{"stdio", "2025-11-25"}, {"http", "2025-11-25"}, {"stdio", "2026-07-28"}, {"http", "2026-07-28"}} {
		t.Run(c.face+"/"+c.version, func(t *testing.T) {
			r := newRigWith(t, nil, []string{"-features"})
			var progress atomic.Int32
			var sampled atomic.Int32
			cs := r.clientWith(t, c.face, c.version, &mcp.ClientOptions{
				CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					sampled.Add(1)
					return &mcp.CreateMessageResult{Model: "scripted", Role: "assistant", Content: &mcp.TextContent{Text: "forty-two"}}, nil
				},
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
			})
			if res, text := call(t, cs, "ask_model", map[string]any{"question": "what is six times seven?"}); res.IsError || !strings.Contains(text, "the model said: forty-two") {
				t.Fatalf("ask_model: %q", text)
			}
			if n := sampled.Load(); n != 1 {
				t.Errorf("the client was asked %d times, want once", n)
			}
			if c.version >= statelessRevision {
				// A retry naming no call of the session is refused.
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_model", Arguments: map[string]any{"question": "?"}, RequestState: "mcp-call-forged"})
				if err != nil || !res.IsError || !strings.Contains(textOf(res), "no call of this session waits") || strings.Contains(textOf(res), "forged") {
					t.Errorf("a forged requestState: %v, %+v", err, res)
				}
				if types, _ := r.recorded(t); !slices.Contains(types, ledger.EventRejected) {
					t.Errorf("the forged retry is not on record: %v", types)
				}
			}
			params := &mcp.CallToolParams{Name: "count_slowly", Arguments: map[string]any{}}
			params.SetProgressToken("count-1")
			if _, err := cs.CallTool(context.Background(), params); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); progress.Load() < 3; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d progress notifications reached the client, want 3", progress.Load())
				}
			}
			types, _ := r.recorded(t)
			joined := strings.Join(types, " ")
			for _, want := range []string{"PreLLMRequest", "PostLLMResponse"} {
				if !strings.Contains(joined, want) {
					t.Errorf("no %s on record: %s", want, joined)
				}
			}
			if n := strings.Count(joined, "PreToolUse"); n != 2 {
				t.Errorf("%d PreToolUse on record, want 2 (each call judged once): %s", n, joined)
			}
		})
	}
}

// TestADeniedSamplingNeverReachesTheClient: the server's sampling request
// judged deny (here: the session's step budget is spent) is the server's
// error; the client's model is never asked, at either revision, and the
// deny is on record.
func TestADeniedSamplingNeverReachesTheClient(t *testing.T) {
	for _, c := range []struct{ face, version string }{{"stdio", "2025-11-25"}, {"http", "2026-07-28"}} {
		t.Run(c.face+"/"+c.version, func(t *testing.T) {
			r := newRigWith(t, func(m *manifest.Manifest) { m.Budgets.MaxSteps = 1 }, []string{"-features"})
			var sampled atomic.Int32
			cs := r.clientWith(t, c.face, c.version, &mcp.ClientOptions{
				CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					sampled.Add(1)
					return &mcp.CreateMessageResult{Model: "scripted", Role: "assistant", Content: &mcp.TextContent{Text: "forty-two"}}, nil
				},
			})
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_model", Arguments: map[string]any{"question": "what is six times seven?"}})
			if err == nil && !res.IsError {
				t.Fatalf("ask_model answered %q after its sampling was denied", textOf(res))
			}
			if n := sampled.Load(); n != 0 {
				t.Errorf("the client's model was asked %d times", n)
			}
			_, envs := r.recorded(t)
			denied := false
			for _, e := range envs {
				var v struct {
					Hook       string `json:"hook_point"`
					Decision   string `json:"aarm_decision"`
					ReasonCode string `json:"reason_code"`
				}
				if e.EventType() == ledger.EventVerdict && json.Unmarshal(e.Payload(), &v) == nil && v.Hook == "PreLLMRequest" && v.Decision == "DENY" && v.ReasonCode == "BUDGET_EXCEEDED" {
					denied = true
				}
			}
			if !denied {
				t.Error("no PreLLMRequest denied BUDGET_EXCEEDED on record")
			}
		})
	}
}
