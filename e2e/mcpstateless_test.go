package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGatewayIsTransparentStateless is TestGatewayIsTransparent at the
// stateless revision, 2026-07-28, which the TypeScript SDK does not speak
// yet: the official Go SDK's client runs the same session at 2026-07-28,
// against server-everything directly (which speaks 2025-11-25: the client
// falls back to it) and through the gateway over stdio and Streamable
// HTTP, which serves it statelessly and reaches server-everything at
// 2025-11-25. The
// server's sampling, elicitation and roots requests reach the stateless
// client as multi-round-trip input requests (input_required, then the
// client's retry with the answers), its progress on the call's own stream,
// its resource updates through subscriptions/listen. What a stateless
// client cannot receive at all is left out of the comparison, each for its
// reason (see statelessGaps); the rest must match, every difference on
// record.
func TestGatewayIsTransparentStateless(t *testing.T) {
	everything := host(t, "AGENTLEDGER_E2E_EVERYTHING")
	engine := filepath.Join(buildPrograms(t), "engine")
	direct := runGoClient(t, &mcp.CommandTransport{Command: exec.Command(everything, "stdio")})
	if v := direct.Server["protocol"]; v != "2025-11-25" {
		t.Fatalf("direct: the client speaks %v, want the server's 2025-11-25", v)
	}
	statelessGaps(&direct)
	delete(direct.Server, "protocol")
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			data := t.TempDir()
			var proxied transcript
			if transport == "stdio" {
				proxied = runGoClient(t, &mcp.CommandTransport{Command: exec.Command(engine, "mcp-proxy", "--data", data, "--name", "everything", "--", everything, "stdio")})
			} else {
				gw := startConformanceGateway(t, engine, data, everything)
				proxied = runGoClient(t, &mcp.StreamableClientTransport{Endpoint: "http://" + gw.addr + "/",
					HTTPClient: &http.Client{Transport: withHeaders{"Authorization": "Bearer " + conformanceToken, "X-Agentledger-Session": "conformance"}}})
				gw.stop(t)
			}
			stopEngine(data)
			if v := proxied.Server["protocol"]; v != "2026-07-28" {
				t.Fatalf("through the gateway: the client speaks %v, want 2026-07-28", v)
			}
			statelessGaps(&proxied)
			statelessResults(t, &proxied)
			delete(proxied.Server, "protocol")
			compareTranscripts(t, transport, direct, proxied, judgedOnRecord(t, data))
		})
	}
}

// statelessGaps drops from a transcript what a stateless client cannot
// be sent, whoever serves it:
//   - log messages and roots requests a server sends outside any request
//     of the client (server-everything's roots sync after initialize, and
//     its answer to a subscription): 2026-07-28 has no stream outside a
//     request but subscriptions/listen, which carries list changes and
//     resource updates only;
//   - the roots a client changes later: roots/list_changed is gone from
//     2026-07-28 (SEP-2577).
func statelessGaps(tr *transcript) {
	var kept []map[string]any
	for _, n := range tr.Notifications {
		if n["method"] != "notifications/message" {
			kept = append(kept, n)
		}
	}
	tr.Notifications = kept
	var asked []map[string]any
	for _, a := range tr.Asked {
		if a["method"] != "roots/list" {
			asked = append(asked, a)
		}
	}
	tr.Asked = asked
}

// statelessResults takes from a 2026-07-28 transcript's results what that
// revision adds to every one: the server's info in _meta (there is no
// initialize to carry it once; it must be the server's own) and
// resultType "complete"; and from its notifications the subscription
// (subscriptions/listen) each came on.
func statelessResults(t *testing.T, tr *transcript) {
	t.Helper()
	for _, n := range tr.Notifications {
		params, _ := n["params"].(map[string]any)
		if meta, ok := params["_meta"].(map[string]any); ok {
			if _, ok := meta[mcp.MetaKeySubscriptionID]; !ok {
				t.Errorf("%s came on no subscription: %v", n["method"], meta)
			}
			delete(meta, mcp.MetaKeySubscriptionID)
			if len(meta) == 0 {
				delete(params, "_meta")
			}
			if len(params) == 0 {
				n["params"] = nil
			}
		}
	}
	want := canonical(tr.Server["info"])
	for _, s := range tr.Steps {
		res, ok := s["result"].(map[string]any)
		if !ok {
			continue
		}
		if res["resultType"] == "complete" {
			delete(res, "resultType")
		}
		meta, ok := res["_meta"].(map[string]any)
		if !ok {
			continue
		}
		if info, ok := meta[mcp.MetaKeyServerInfo]; ok {
			if got := canonical(info); got != want {
				t.Errorf("%s: the server's info in _meta is %s, want the server's own %s", s["step"], got, want)
			}
			delete(meta, mcp.MetaKeyServerInfo)
		}
		if len(meta) == 0 {
			delete(res, "_meta")
		}
	}
}

type withHeaders map[string]string

func (h withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// runGoClient runs testdata/mcpclient.mjs's session with the Go SDK's
// client at 2026-07-28 over t, and returns what it saw in the same form.
func runGoClient(t *testing.T, transport mcp.Transport) transcript {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	tr := transcript{Progress: map[string][]any{}}
	note := func(method string, params any) {
		mu.Lock()
		defer mu.Unlock()
		tr.Notifications = append(tr.Notifications, map[string]any{"method": method, "params": asJSON(params)})
	}
	asked := func(method string, params any) {
		mu.Lock()
		defer mu.Unlock()
		a := map[string]any{"method": method}
		if params != nil {
			a["params"] = asJSON(params)
		}
		tr.Asked = append(tr.Asked, a)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentledger-conformance", Version: "1.0.0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}, Sampling: &mcp.SamplingCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			asked("sampling/createMessage", req.Params)
			return &mcp.CreateMessageResult{Model: "scripted", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked("elicitation/create", req.Params)
			return &mcp.ElicitResult{Action: "accept", Content: elicitAnswers(req.Params)}, nil
		},
		ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) {
			note("notifications/tools/list_changed", req.Params)
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			note("notifications/resources/updated", map[string]any{"uri": req.Params.URI})
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			note("notifications/message", req.Params)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			tr.Progress["trigger-long-running-operation"] = append(tr.Progress["trigger-long-running-operation"], req.Params.Progress)
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///work/conformance", Name: "work"})
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	init := cs.InitializeResult()
	tr.Server = map[string]any{"info": asJSON(init.ServerInfo), "capabilities": asJSON(init.Capabilities),
		"instructions": init.Instructions, "protocol": init.ProtocolVersion}
	time.Sleep(800 * time.Millisecond)
	step := func(name string, f func() (any, error)) {
		res, err := f()
		s := map[string]any{"step": name}
		if err != nil {
			s["error"] = map[string]any{"message": err.Error()}
		} else {
			s["result"] = asJSON(res)
		}
		tr.Steps = append(tr.Steps, s)
	}
	const doc = "demo://resource/static/document/architecture.md"
	step("tools/list", func() (any, error) { return cs.ListTools(ctx, nil) })
	step("prompts/list", func() (any, error) { return cs.ListPrompts(ctx, nil) })
	step("resources/list", func() (any, error) { return cs.ListResources(ctx, nil) })
	step("resources/templates/list", func() (any, error) { return cs.ListResourceTemplates(ctx, nil) })
	step("resources/read", func() (any, error) { return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: doc}) })
	step("prompts/get simple", func() (any, error) { return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "simple-prompt"}) })
	step("prompts/get args", func() (any, error) {
		return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "Lisbon", "state": "LX"}})
	})
	step("completion/complete", func() (any, error) {
		return cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"},
			Argument: mcp.CompleteParamsArgument{Name: "department", Value: "E"}})
	})
	// ping and logging/setLevel are gone from 2026-07-28 (as are
	// initialize and the roots change notification): the session does
	// without them.
	step("resources/subscribe", func() (any, error) { return map[string]any{}, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: doc}) })
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"echo", map[string]any{"message": "hello"}},
		{"get-sum", map[string]any{"a": 2, "b": 3}},
		{"get-annotated-message", map[string]any{"messageType": "success", "includeImage": false}},
		{"get-structured-content", map[string]any{"location": "New York"}},
		{"get-tiny-image", map[string]any{}},
		{"get-resource-links", map[string]any{"count": 2}},
		{"get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 1}},
		{"get-roots-list", map[string]any{}},
		{"trigger-sampling-request", map[string]any{"prompt": "Say hello", "maxTokens": 20}},
		{"trigger-elicitation-request", map[string]any{}},
	} {
		step("tools/call "+c.name, func() (any, error) { return cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args}) })
	}
	step("tools/call trigger-long-running-operation", func() (any, error) {
		params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 3}}
		params.SetProgressToken("progress-1")
		return cs.CallTool(ctx, params)
	})
	step("tools/call toggle-subscriber-updates", func() (any, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-subscriber-updates", Arguments: map[string]any{}})
	})
	time.Sleep(1300 * time.Millisecond)
	step("resources/unsubscribe", func() (any, error) { return map[string]any{}, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: doc}) })
	step("tools/call no-such-tool", func() (any, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "no-such-tool", Arguments: map[string]any{}})
	})
	cs.Close()
	mu.Lock()
	defer mu.Unlock()
	return tr
}

// elicitAnswers fills a form as the TypeScript conformance client does.
func elicitAnswers(p *mcp.ElicitParams) map[string]any {
	out := map[string]any{}
	raw, _ := json.Marshal(p.RequestedSchema)
	var schema struct {
		Properties map[string]struct {
			Type    string `json:"type"`
			Format  string `json:"format"`
			Enum    []any  `json:"enum"`
			Minimum *float64
			Default any `json:"default"`
			OneOf   []struct {
				Const any `json:"const"`
			} `json:"oneOf"`
			Items *struct {
				Enum  []any `json:"enum"`
				AnyOf []struct {
					Const any `json:"const"`
				} `json:"anyOf"`
			} `json:"items"`
		} `json:"properties"`
	}
	json.Unmarshal(raw, &schema)
	for name, s := range schema.Properties {
		switch {
		case len(s.Enum) > 0:
			out[name] = s.Enum[0]
		case len(s.OneOf) > 0:
			out[name] = s.OneOf[0].Const
		case s.Type == "array" && s.Items != nil && len(s.Items.Enum) > 0:
			out[name] = []any{s.Items.Enum[0]}
		case s.Type == "array" && s.Items != nil && len(s.Items.AnyOf) > 0:
			out[name] = []any{s.Items.AnyOf[0].Const}
		case s.Type == "array":
			out[name] = []any{}
		case s.Type == "boolean":
			out[name] = true
		case s.Type == "number" || s.Type == "integer":
			out[name] = 1
			if s.Minimum != nil {
				out[name] = *s.Minimum
			}
		case s.Format == "email":
			out[name] = "dev@example.com"
		case s.Format == "uri":
			out[name] = "https://example.com"
		case s.Format == "date":
			out[name] = "2026-01-01"
		case s.Format == "date-time":
			out[name] = "2026-01-01T00:00:00Z"
		case s.Default != nil:
			out[name] = s.Default
		default:
			out[name] = "value"
		}
	}
	return out
}

// asJSON is v as decoded JSON (what a client saw on the wire).
func asJSON(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unmarshalable: %v", err)
	}
	var out any
	json.Unmarshal(raw, &out)
	if s, ok := out.(string); ok {
		return strings.TrimSpace(s)
	}
	return out
}
