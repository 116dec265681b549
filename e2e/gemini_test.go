package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// scriptedGemini is a stand-in for the Gemini API (generativelanguage
// v1beta) that plays a script as Gemini CLI calls it: turn n goes to the
// main-loop request (one that offers function declarations and asks for no
// JSON) whose contents already hold n model turns, so a retry gets the
// same turn. Function calls are named toolu_<turn>_<index>. A side
// request that wants JSON (the next-speaker check, the router) gets an
// object built from its schema; any other a short text.
type scriptedGemini struct {
	script []turn
	agents map[string][]turn // sub-agents' scripts, by a word a user's text in their requests holds
	mu     sync.Mutex
	result map[string]string // call id → the functionResponse Gemini CLI sent back (JSON)
}

func newScriptedGemini(t *testing.T, script []turn, agents map[string][]turn) (*scriptedGemini, string) {
	m := &scriptedGemini{script: script, agents: agents, result: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	return m, srv.URL
}

func (m *scriptedGemini) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	method := ""
	if i := strings.LastIndexByte(path, ':'); i >= 0 {
		method = path[i+1:]
	}
	switch {
	case r.Method == "GET" && strings.HasSuffix(strings.TrimSuffix(path, "/"), "/models"):
		writeJSON(w, map[string]any{"models": []any{map[string]any{"name": "models/gemini-2.5-pro", "supportedGenerationMethods": []string{"generateContent", "countTokens"}}}})
	case r.Method == "GET" && strings.Contains(path, "/models/"):
		writeJSON(w, map[string]any{"name": "models/" + path[strings.LastIndexByte(path, '/')+1:], "inputTokenLimit": 1048576})
	case method == "countTokens":
		writeJSON(w, map[string]any{"totalTokens": 1000})
	case method == "embedContent" || method == "batchEmbedContents":
		writeJSON(w, map[string]any{"embedding": map[string]any{"values": make([]float64, 8)}})
	case method == "generateContent" || method == "streamGenerateContent":
		m.generate(w, r, method == "streamGenerateContent")
	default:
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]any{"error": map[string]any{"code": 404, "message": "scripted: no " + path, "status": "NOT_FOUND"}})
	}
}

func (m *scriptedGemini) generate(w http.ResponseWriter, r *http.Request, stream bool) {
	var req struct {
		Contents []struct {
			Role  string            `json:"role"`
			Parts []json.RawMessage `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct{ Name string } `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType   string         `json:"responseMimeType"`
			ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
			ResponseSchema     map[string]any `json:"responseSchema"`
		} `json:"generationConfig"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	offers := false
	for _, t := range req.Tools {
		offers = offers || len(t.FunctionDeclarations) > 0
	}
	script, tag := m.script, ""
	for word, s := range m.agents {
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				var part struct{ Text string }
				if c.Role == "user" && json.Unmarshal(p, &part) == nil && strings.Contains(part.Text, word) {
					script, tag = s, word+"_"
				}
			}
		}
	}
	schema := req.GenerationConfig.ResponseJSONSchema
	if schema == nil {
		schema = req.GenerationConfig.ResponseSchema
	}
	wantsJSON := schema != nil || req.GenerationConfig.ResponseMimeType == "application/json"
	var parts []map[string]any
	switch {
	case offers && !wantsJSON:
		n := 0
		for _, c := range req.Contents {
			if c.Role == "model" {
				n++
			}
			for _, p := range c.Parts {
				m.noteResponse(p)
			}
		}
		if n < len(script) && script[n].Before != nil {
			script[n].Before()
		}
		switch {
		case n >= len(script) || script[n].Text != "":
			text := "done."
			if n < len(script) {
				text = script[n].Text
			}
			parts = []map[string]any{{"text": text}}
		default:
			for i, c := range script[n].Calls {
				parts = append(parts, map[string]any{"functionCall": map[string]any{"id": fmt.Sprintf("toolu_%s%02d_%d", tag, n, i), "name": c.Tool, "args": c.Input}})
			}
		}
	case wantsJSON:
		raw, _ := json.Marshal(fromSchema(schema, ""))
		parts = []map[string]any{{"text": string(raw)}}
	default:
		parts = []map[string]any{{"text": "ok"}}
	}
	resp := map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}, "modelVersion": "gemini-2.5-pro"}
	if !stream {
		writeJSON(w, resp)
		return
	}
	raw, _ := json.Marshal(resp)
	w.Header().Set("content-type", "text/event-stream")
	fmt.Fprintf(w, "data: %s\r\n\r\n", raw)
}

// noteResponse keeps a functionResponse part of the request.
func (m *scriptedGemini) noteResponse(part json.RawMessage) {
	var p struct {
		FunctionResponse *struct {
			ID       string          `json:"id"`
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	}
	if json.Unmarshal(part, &p) != nil || p.FunctionResponse == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.result[p.FunctionResponse.ID] = string(p.FunctionResponse.Response)
}

func (m *scriptedGemini) results() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.result))
	for k, v := range m.result {
		out[k] = v
	}
	return out
}

// fromSchema is a minimal value of JSON schema s (key names the member it
// is for): "user" for Gemini CLI's next_speaker, the first of an enum.
func fromSchema(s map[string]any, key string) any {
	if key == "next_speaker" {
		return "user"
	}
	if enum, _ := s["enum"].([]any); len(enum) > 0 {
		return enum[0]
	}
	typ, _ := s["type"].(string)
	props, _ := s["properties"].(map[string]any)
	switch strings.ToLower(typ) {
	case "array":
		return []any{}
	case "integer", "number":
		return 1
	case "boolean":
		return false
	case "object", "":
		if props != nil || typ != "" {
			out := map[string]any{}
			for k, v := range props {
				sub, _ := v.(map[string]any)
				out[k] = fromSchema(sub, k)
			}
			return out
		}
	}
	return "ok"
}

// runGemini runs the real Gemini CLI (gemini -p, approval mode mode) in a
// new project with agentledger's hooks as `engine install gemini
// --project` writes them, against the scripted Gemini API.
func runGemini(t *testing.T, script []turn, mode string, o hostOptions) (*hostRun, *scriptedGemini) {
	t.Helper()
	gemini := host(t, "AGENTLEDGER_E2E_GEMINI")
	home, work, env := project(t)
	o.setUp(t, env, "gemini", home, work)
	settings := map[string]any{"general": map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
		"privacy": map[string]any{"usageStatisticsEnabled": false}, "telemetry": map[string]any{"enabled": false},
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}}}
	raw, _ := json.Marshal(settings)
	writeFiles(t, home, map[string]string{".gemini/settings.json": string(raw)})
	model, url := newScriptedGemini(t, script, o.agents)
	r := &hostRun{work: work, data: filepath.Join(home, ".local", "share", "agentledger"), results: model.results}
	t.Cleanup(func() { stopEngine(r.data) })
	out := r.play(t, append(o.envFor(env), "GOOGLE_GEMINI_BASE_URL="+url, "GEMINI_API_KEY=scripted-not-a-key", "GEMINI_CLI_TRUST_WORKSPACE=true",
		"GEMINI_TELEMETRY_ENABLED=false", "NO_BROWSER=1", "CI=1"), gemini, "-p", "do the task", "--output-format", "json", "--approval-mode", mode)
	_ = json.Unmarshal(out, &r.result)
	return r, model
}
