package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// scriptedChat is a stand-in for an OpenAI-compatible Chat Completions API
// (as Cline speaks it: always streamed) that plays a script: a request
// that offers tools gets turn n, n being the assistant messages already in
// it; a sub-agent's request (its task holds a word of agents) gets that
// script. Tool calls are named toolu_<turn>_<index>. It keeps the tool
// results the host sent back.
type scriptedChat struct {
	script []turn
	agents map[string][]turn
	mu     sync.Mutex
	result map[string]string // tool call id → the tool message's content
}

func newScriptedChat(t *testing.T, script []turn, agents map[string][]turn) (*scriptedChat, string) {
	m := &scriptedChat{script: script, agents: agents, result: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	return m, srv.URL
}

func (m *scriptedChat) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == "GET" && strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), "/models"):
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "mock", "object": "model", "created": 1767225600, "owned_by": "scripted"}}})
	case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		m.complete(w, r)
	default:
		openAINotFound(w, r)
	}
}

func (m *scriptedChat) complete(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tools    []json.RawMessage `json:"tools"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	script, tag := m.script, ""
	n := 0
	for _, msg := range req.Messages {
		switch msg.Role {
		case "assistant":
			n++
		case "tool":
			var s string
			if json.Unmarshal(msg.Content, &s) != nil {
				s = string(msg.Content)
			}
			m.mu.Lock()
			m.result[msg.ToolCallID] = s
			m.mu.Unlock()
		case "user", "system":
			for word, s := range m.agents {
				if strings.Contains(string(msg.Content), word) {
					script, tag = s, word+"_"
				}
			}
		}
	}
	var delta map[string]any
	finish := "stop"
	switch {
	case len(req.Tools) == 0:
		delta = map[string]any{"role": "assistant", "content": "ok"}
	case n >= len(script) || script[n].Text != "":
		text := "done."
		if n < len(script) {
			text = script[n].Text
		}
		delta = map[string]any{"role": "assistant", "content": text}
	default:
		if script[n].Before != nil {
			script[n].Before()
		}
		var calls []map[string]any
		for i, c := range script[n].Calls {
			args, _ := json.Marshal(c.Input)
			calls = append(calls, map[string]any{"index": i, "id": fmt.Sprintf("toolu_%s%02d_%d", tag, n, i), "type": "function",
				"function": map[string]any{"name": c.Tool, "arguments": string(args)}})
		}
		delta, finish = map[string]any{"role": "assistant", "content": "", "tool_calls": calls}, "tool_calls"
	}
	chunk := func(choices []any, extra map[string]any) {
		c := map[string]any{"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": "mock", "choices": choices}
		maps.Copy(c, extra)
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	w.Header().Set("content-type", "text/event-stream")
	chunk([]any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}, nil)
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	chunk([]any{}, map[string]any{"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// results are the tool results the host sent back, by call id.
func (m *scriptedChat) results() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.result)
}
