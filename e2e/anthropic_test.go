package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// turn is one step a scripted model plays: tool calls, or final text.
type turn struct {
	Calls []call
	Text  string
	// Before, when set, runs before the turn is served (an approver acting
	// between two turns); a retried request runs it again, so it must be
	// idempotent (sync.OnceFunc).
	Before func()
}

// call is one tool call of a scripted turn.
type call struct {
	Tool  string
	Input map[string]any
}

// scriptedAnthropic is a stand-in for the Anthropic Messages API that plays
// a script: the n-th main-loop request (one that offers the scripted tools)
// gets turn n, n being the assistant messages already in the request, so a
// retry gets the same turn. Tool calls are named toolu_<turn>_<index>.
// Other requests (titles, probes) get a short text. It records the calls it
// issued and the tool results the host sent back.
type scriptedAnthropic struct {
	script []turn
	// agents are the scripts of sub-agents, by a word their task (a
	// user's text in their requests) holds; their calls are named
	// toolu_<word>_<turn>_<index>.
	agents map[string][]turn
	mu     sync.Mutex
	issued []string          // tool_use ids, in order
	result map[string]string // tool_use id → the tool_result the host sent (as JSON)
}

func newScriptedAnthropic(t *testing.T, script []turn) (*scriptedAnthropic, string) {
	return newScriptedAnthropicWith(t, script, nil)
}

// newScriptedAnthropicWith is newScriptedAnthropic with the sub-agents'
// scripts (set before the server starts: it reads them unlocked).
func newScriptedAnthropicWith(t *testing.T, script []turn, agents map[string][]turn) (*scriptedAnthropic, string) {
	m := &scriptedAnthropic{script: script, agents: agents, result: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	return m, srv.URL
}

func (m *scriptedAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/models"):
		writeJSON(w, map[string]any{"data": []any{map[string]any{"type": "model", "id": "claude-sonnet-4-5", "display_name": "scripted", "created_at": "2026-01-01T00:00:00Z"}}, "has_more": false})
	case r.Method == "POST" && r.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, map[string]any{"input_tokens": 1000})
	case r.Method == "POST" && r.URL.Path == "/v1/messages":
		m.messages(w, r)
	default:
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": "scripted: no " + r.URL.Path}})
	}
}

func (m *scriptedAnthropic) messages(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string                  `json:"model"`
		Stream   bool                    `json:"stream"`
		Tools    []struct{ Name string } `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	offered := map[string]bool{}
	for _, t := range req.Tools {
		offered[t.Name] = true
	}
	// A host that defers tools (Droid: MCP tools) names them on a line of
	// their own in a reminder, to be loaded with its ToolSearch.
	deferred := func(tool string) bool { return bytes.Contains(body, []byte(`\n`+tool+`\n`)) }
	script, tag := m.script, ""
	for word, s := range m.agents {
		if asksFor(req.Messages, word) {
			script, tag = s, word+"_"
		}
	}
	// A host that loads deferred tools (its ToolSearch) may not list an
	// MCP server's until the server has connected: its requests are the
	// main agent's all the same.
	loads := offered["ToolSearch"]
	main := len(offered) > 0
	for _, st := range script {
		for _, c := range st.Calls {
			main = main && (offered[c.Tool] || deferred(c.Tool) || loads)
		}
	}
	n, waits := 0, 0
	for _, msg := range req.Messages {
		switch {
		case msg.Role == "assistant" && bytes.Contains(msg.Content, []byte(`"toolu_wait_`)):
			waits++
		case msg.Role == "assistant":
			n++
		}
		if main && msg.Role == "user" {
			m.noteResults(msg.Content)
		}
	}
	if main && n < len(script) && script[n].Before != nil {
		script[n].Before()
	}
	var blocks []map[string]any
	stop := "end_turn"
	switch {
	case !main:
		blocks = []map[string]any{{"type": "text", "text": "ok"}}
	case loads && n < len(script) && waits < 60 && missing(script[n], offered, deferred) != "":
		// The turn's tool is not there yet: search for it again, as a
		// model would, a little later, in other words each time (the same
		// call three times is a loop agentledger holds); not a turn of the
		// script.
		time.Sleep(500 * time.Millisecond)
		stop = "tool_use"
		query := "select:" + missing(script[n], offered, deferred)
		if waits > 0 {
			query = fmt.Sprintf("%s %d", missing(script[n], offered, deferred), waits)
		}
		blocks = []map[string]any{{"type": "tool_use", "id": fmt.Sprintf("toolu_wait_%d", waits), "name": "ToolSearch", "input": map[string]any{"query": query}}}
	case n >= len(script) || script[n].Text != "":
		text := "done."
		if n < len(script) {
			text = script[n].Text
		}
		blocks = []map[string]any{{"type": "text", "text": text}}
	default:
		stop = "tool_use"
		for i, c := range script[n].Calls {
			id := fmt.Sprintf("toolu_%s%02d_%d", tag, n, i)
			m.mu.Lock()
			if !slices.Contains(m.issued, id) {
				m.issued = append(m.issued, id)
			}
			m.mu.Unlock()
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": c.Tool, "input": c.Input})
		}
	}
	usage := map[string]any{"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	id := fmt.Sprintf("msg_scripted_%d", n)
	if !req.Stream {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("content-type", "text/event-stream")
	sse := func(event string, data map[string]any) { writeSSE(w, event, data) }
	sse("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	for i, b := range blocks {
		if b["type"] == "text" {
			sse("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			sse("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		} else {
			sse("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(b["input"])
			sse("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		sse("content_block_stop", map[string]any{"index": i})
	}
	sse("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 20}})
	sse("message_stop", map[string]any{})
}

// missing is the first tool a turn calls that the request neither offers
// nor lists as deferred ("" when there is none).
func missing(tr turn, offered map[string]bool, deferred func(string) bool) string {
	for _, c := range tr.Calls {
		if !offered[c.Tool] && !deferred(c.Tool) {
			return c.Tool
		}
	}
	return ""
}

// asksFor reports whether a user's text in messages (not a tool's result)
// holds word: the task a sub-agent's requests carry.
func asksFor(messages []struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}, word string) bool {
	for _, msg := range messages {
		if msg.Role != "user" {
			continue
		}
		var text string
		if json.Unmarshal(msg.Content, &text) == nil && strings.Contains(text, word) {
			return true
		}
		var blocks []struct{ Type, Text string }
		_ = json.Unmarshal(msg.Content, &blocks)
		for _, b := range blocks {
			if b.Type == "text" && strings.Contains(b.Text, word) {
				return true
			}
		}
	}
	return false
}

// noteResults keeps the tool results a user message carries.
func (m *scriptedAnthropic) noteResults(content json.RawMessage) {
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range blocks {
		if b.Type == "tool_result" {
			m.result[b.ToolUseID] = string(b.Content)
		}
	}
}

// calls returns the tool_use ids the model issued and the results the host
// sent back.
func (m *scriptedAnthropic) calls() ([]string, map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	res := make(map[string]string, len(m.result))
	for k, v := range m.result {
		res[k] = v
	}
	return append([]string(nil), m.issued...), res
}

// writeSSE writes one server-sent event whose data is data with its type.
func writeSSE(w http.ResponseWriter, event string, data map[string]any) {
	data["type"] = event
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("content-type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
