package live

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentledger/agentledger/ledger"
)

// Model is a client of an OpenAI-compatible chat completions endpoint
// (OpenAI, vLLM, llama.cpp's llama-server, Ollama's /v1, ...).
type Model struct {
	// BaseURL is the server's base, such as http://127.0.0.1:8000; the
	// client posts to BaseURL + "/v1/chat/completions" (a BaseURL that
	// already ends in /v1 is accepted as well).
	BaseURL string
	Name    string // the model name sent in every request
	APIKey  string // sent as a bearer token when set
	HTTP    *http.Client
}

// Message is one chat message.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a function call a model plans.
type ToolCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"` // a JSON-encoded object
	} `json:"function"`
}

// Completion is one answer of the model, with what it cost.
type Completion struct {
	Content      string
	ToolCalls    []ToolCall
	FinishReason string
	PromptTokens int
	OutputTokens int
	Latency      time.Duration
}

type chatRequest struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []any     `json:"tools,omitempty"`
	// Temperature 0 and a fixed seed ask for the most repeatable answer
	// the server can give.
	Temperature float64 `json:"temperature"`
	Seed        int     `json:"seed"`
	Stream      bool    `json:"stream"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content   *string    `json:"content"`
			ToolCalls []ToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Complete sends messages (and the tools the model may call, in the
// API's {"type":"function","function":{...}} form) and returns the answer.
func (m *Model) Complete(ctx context.Context, messages []Message, tools []any) (*Completion, error) {
	body, err := json.Marshal(chatRequest{Model: m.Name, Messages: messages, Tools: tools, Seed: 1})
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(strings.TrimSuffix(m.BaseURL, "/"), "/v1") + "/v1/chat/completions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if m.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.APIKey)
	}
	hc := m.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", m.Name, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	latency := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("model %s: read answer: %w", m.Name, err)
	}
	var cr chatResponse
	jerr := json.Unmarshal(raw, &cr)
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(raw))
		if jerr == nil && cr.Error != nil {
			msg = cr.Error.Message
		}
		return nil, fmt.Errorf("model %s: HTTP %d: %s", m.Name, resp.StatusCode, msg)
	}
	if jerr != nil {
		return nil, fmt.Errorf("model %s: answer is not chat completions JSON: %w", m.Name, jerr)
	}
	if len(cr.Choices) == 0 {
		return nil, fmt.Errorf("model %s: answer has no choices", m.Name)
	}
	ch := cr.Choices[0]
	c := &Completion{ToolCalls: ch.Message.ToolCalls, FinishReason: ch.FinishReason,
		PromptTokens: cr.Usage.PromptTokens, OutputTokens: cr.Usage.CompletionTokens, Latency: latency}
	if ch.Message.Content != nil {
		c.Content = *ch.Message.Content
	}
	return c, nil
}

// PlannedCall is a tool call in comparable form: the tool's name and its
// arguments in RFC 8785 canonical JSON. Ids are not part of it: servers
// number calls differently, so calls are compared by position, name and
// arguments.
type PlannedCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Normalize returns calls in comparable form. Arguments that are not a
// JSON object are kept verbatim (and so compare unequal to any object).
func Normalize(calls []ToolCall) []PlannedCall {
	out := make([]PlannedCall, len(calls))
	for i, c := range calls {
		args := strings.TrimSpace(c.Function.Arguments)
		if args == "" {
			args = "{}"
		}
		if canon, err := ledger.Canonicalize([]byte(args), ledger.Limits{}); err == nil {
			args = string(canon)
		}
		out[i] = PlannedCall{Name: c.Function.Name, Arguments: args}
	}
	return out
}
