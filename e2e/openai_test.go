package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedResponses is a stand-in for the OpenAI Responses API as Codex CLI
// calls it (POST /v1/responses, streamed), playing a script: a request that
// offers tools gets the turn numbered by the assistant turns already in its
// input (a run of function calls is one turn), so a retry gets the same
// turn. Function calls are named toolu_<turn>_<index>. A sub-agent's
// requests (their user input holds a word of agents) play that word's
// script, their calls named toolu_<word>_<turn>_<index>. A call of a tool
// NAMESPACE.NAME (or mcp__SERVER__TOOL: namespace mcp__SERVER) names its
// namespace, as Codex offers its sub-agent and MCP tools. The main
// script's closing text waits (a minute at most) until every sub-agent has
// played its script, as a model waits for the agents it started.
type scriptedResponses struct {
	script []turn
	agents map[string][]turn
	done   map[string]chan struct{} // closed when the word's script has been played
	mu     sync.Mutex
	issued []string
	result map[string]string // call id → the function_call_output the host sent (as JSON)
}

func newScriptedResponses(t *testing.T, script []turn, agents map[string][]turn) (*scriptedResponses, string) {
	m := &scriptedResponses{script: script, agents: agents, result: map[string]string{}, done: map[string]chan struct{}{}}
	for word := range agents {
		m.done[word] = make(chan struct{})
	}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	return m, srv.URL
}

func (m *scriptedResponses) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == "GET" && strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), "/models"):
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "gpt-scripted", "object": "model", "created": 1767225600, "owned_by": "scripted"}}, "models": []any{}})
	case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/responses"):
		m.responses(w, r)
	default:
		openAINotFound(w, r)
	}
}

func (m *scriptedResponses) responses(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Tools  []json.RawMessage `json:"tools"`
		Input  []map[string]any  `json:"input"`
		Text   struct {
			Format struct {
				Type string `json:"type"`
			} `json:"format"`
		} `json:"text"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var items []map[string]any
	switch {
	case len(req.Tools) == 0 || req.Text.Format.Type == "json_schema":
		items = []map[string]any{message("{}", -1)}
	default:
		m.noteOutputs(req.Input)
		script, tag := m.script, ""
		for word, s := range m.agents {
			if inputAsks(req.Input, word) {
				script, tag = s, word+"_"
			}
		}
		n := turnsPlayed(req.Input)
		if n < len(script) && script[n].Before != nil {
			script[n].Before()
		}
		if n >= len(script) || script[n].Text != "" {
			text := "done."
			if n < len(script) {
				text = script[n].Text
			}
			m.played(tag)
			items = []map[string]any{message(text, n)}
			break
		}
		for i, c := range script[n].Calls {
			id := fmt.Sprintf("toolu_%s%02d_%d", tag, n, i)
			m.mu.Lock()
			if !slices.Contains(m.issued, id) {
				m.issued = append(m.issued, id)
			}
			m.mu.Unlock()
			args, _ := json.Marshal(c.Input)
			item := map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": c.Tool, "arguments": string(args), "status": "completed"}
			if server, tool, ok := strings.Cut(strings.TrimPrefix(c.Tool, "mcp__"), "__"); ok && strings.HasPrefix(c.Tool, "mcp__") {
				item["namespace"], item["name"] = "mcp__"+server, tool
			} else if ns, tool, ok := strings.Cut(c.Tool, "."); ok {
				item["namespace"], item["name"] = ns, tool
			}
			items = append(items, item)
		}
	}
	usage := map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": 20,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 120}
	resp := map[string]any{"id": "resp_scripted", "object": "response", "created_at": time.Now().Unix(), "status": "completed",
		"model": req.Model, "output": items, "usage": usage}
	if !req.Stream {
		writeJSON(w, resp)
		return
	}
	w.Header().Set("content-type", "text/event-stream")
	sse := func(event string, data map[string]any) { writeSSE(w, event, data) }
	created := map[string]any{}
	for k, v := range resp {
		created[k] = v
	}
	created["status"], created["output"], created["usage"] = "in_progress", []any{}, nil
	sse("response.created", map[string]any{"response": created})
	for i, it := range items {
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		added["status"] = "in_progress"
		sse("response.output_item.added", map[string]any{"output_index": i, "item": added})
		if it["type"] == "message" {
			text := it["content"].([]map[string]any)[0]["text"]
			sse("response.output_text.delta", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "delta": text})
		}
		sse("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	sse("response.completed", map[string]any{"response": resp})
}

// turnsPlayed counts the assistant turns in a request's input: runs of
// function calls, or assistant messages.
// played notes that the script of tag (a sub-agent's word and _) has
// been played, or, for the main script (""), waits until every
// sub-agent's has.
func (m *scriptedResponses) played(tag string) {
	if tag != "" {
		m.mu.Lock()
		defer m.mu.Unlock()
		if ch := m.done[strings.TrimSuffix(tag, "_")]; ch != nil {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
		return
	}
	deadline := time.After(time.Minute)
	for _, ch := range m.done {
		select {
		case <-ch:
		case <-deadline:
			return
		}
	}
}

// inputAsks reports whether a user message of input holds word.
func inputAsks(input []map[string]any, word string) bool {
	for _, it := range input {
		if it["role"] != "user" {
			continue
		}
		raw, _ := json.Marshal(it["content"])
		if strings.Contains(string(raw), word) {
			return true
		}
	}
	return false
}

func turnsPlayed(input []map[string]any) int {
	n, prev := 0, false
	for _, it := range input {
		kind, _ := it["type"].(string)
		if kind == "" && it["role"] != nil {
			kind = "message"
		}
		call := kind == "function_call" || kind == "custom_tool_call" || kind == "local_shell_call"
		assistant := call || kind == "message" && it["role"] == "assistant"
		if assistant && !prev {
			n++
		}
		prev = call
	}
	return n
}

func message(text string, n int) map[string]any {
	return map[string]any{"type": "message", "id": fmt.Sprintf("msg_scripted_%d", n), "role": "assistant", "status": "completed",
		"content": []map[string]any{{"type": "output_text", "text": text, "annotations": []any{}}}}
}

// noteOutputs keeps the function call outputs a request's input carries.
func (m *scriptedResponses) noteOutputs(input []map[string]any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, it := range input {
		if it["type"] != "function_call_output" && it["type"] != "custom_tool_call_output" {
			continue
		}
		id, _ := it["call_id"].(string)
		out, _ := json.Marshal(it["output"])
		m.result[id] = string(out)
	}
}

// results are the outputs the host sent back, by call id.
func (m *scriptedResponses) results() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.result)
}

func (m *scriptedResponses) calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.issued...)
}

// openAINotFound answers a path the scripted OpenAI-style APIs do not
// serve, in OpenAI's error form.
func openAINotFound(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusNotFound)
	writeJSON(w, map[string]any{"error": map[string]any{"message": "scripted: no " + r.URL.Path, "type": "invalid_request_error"}})
}
