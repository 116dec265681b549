package live

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/policy"
)

// scriptedModel speaks chat completions with one scripted answer per
// request, in order, and keeps the requests it got.
type scriptedModel struct {
	mu       sync.Mutex
	answers  []string
	requests []chatRequest
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.requests) >= len(m.answers) {
		http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusInternalServerError)
		return
	}
	m.requests = append(m.requests, req)
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(m.answers[len(m.requests)-1]))
}

func answer(name, args, finish string) string {
	return `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"",` +
		`"tool_calls":[{"id":"call_x","type":"function","function":{"name":"` + name + `","arguments":` + args + `}}]},` +
		`"finish_reason":"` + finish + `"}],"usage":{"prompt_tokens":120,"completion_tokens":12}}`
}

func TestLiveReplayAgainstScriptedModelAndFixtureMCP(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile("../../fixtures/sessions/coding-agent/mcp-model-swap.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	chains, rep, err := ledger.LoadBundle(bytes.NewReader(raw), ledger.Limits{})
	if err != nil || !rep.OK() || len(chains) != 1 {
		t.Fatalf("fixture: %v %v", err, rep.Err())
	}
	// The candidate agrees on the first step (same call, arguments in
	// another key order and spacing) and diverges on the second.
	model := &scriptedModel{answers: []string{
		answer("mcp__filesystem__read_file", `"{ \"path\" : \"checkout/total.go\" }"`, "tool_calls"),
		answer("mcp__filesystem__list_dir", `"{\"path\":\"checkout\"}"`, "tool_calls"),
	}}
	srv := httptest.NewServer(model)
	defer srv.Close()
	tools, err := ConnectMCP(ctx, fixtureServer(t), "")
	if err != nil {
		t.Fatal(err)
	}
	defer tools.Close()
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mraw, _ := os.ReadFile("../../fixtures/manifests/coding-agent.json")
	m, err := manifest.Parse(mraw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(ctx, "", m)
	if err != nil {
		t.Fatal(err)
	}
	d := decide.NewDecider(p)
	clock := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	eng, err := engine.New(d, st)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: &Model{BaseURL: srv.URL, Name: "candidate-7b"}, Tools: tools, Engine: eng, Decider: d,
		SessionID: "mcp-fix-total~live-1", Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
	r, err := Run(ctx, cfg, chains[0])
	if err != nil {
		t.Fatal(err)
	}
	if r.ModelSteps != 2 || r.AgreeingSteps != 1 || r.AgreementRate != 0.5 || r.FirstDivergent == nil || *r.FirstDivergent != r.Steps[1].Seq {
		t.Fatalf("agreement: %+v", r)
	}
	if !r.Steps[0].Agree || r.Steps[1].Agree || r.Steps[1].CandidateCalls[0].Name != "mcp__filesystem__list_dir" ||
		r.Steps[1].RecordedCalls[0] != (PlannedCall{Name: "mcp__filesystem__run_tests", Arguments: `{"package":"./checkout/..."}`}) {
		t.Fatalf("steps: %+v", r.Steps)
	}
	if len(r.Steps[1].Judged) != 1 || r.Steps[1].Judged[0].Decision == "" {
		t.Fatalf("the candidate's call was not judged: %+v", r.Steps[1])
	}
	// The model saw the recorded conversation and tools.
	if len(model.requests) != 2 || model.requests[0].Model != "candidate-7b" || len(model.requests[0].Messages) != 1 ||
		len(model.requests[1].Messages) != 3 || model.requests[1].Messages[2].Role != "tool" || len(model.requests[0].Tools) != 2 {
		t.Fatalf("requests: %+v", model.requests)
	}
	// read_file and run_tests were allowed on record (a file read from the
	// MCP server narrows only what sends or runs what was read) and ran
	// again with the same results.
	if len(r.ToolResults) != 2 || r.ToolResults[0].Tool != "mcp__filesystem__read_file" || r.ToolResults[1].Tool != "mcp__filesystem__run_tests" ||
		!r.ToolResults[0].Same || !r.ToolResults[1].Same {
		t.Fatalf("tool results: %+v", r.ToolResults)
	}
	// The live run decided every recorded event as recorded (same policy,
	// same events): no verdict change may be reported.
	if len(r.VerdictChanges) != 0 {
		t.Fatalf("verdict changes where there are none: %+v", r.VerdictChanges)
	}
	if r.Candidate.PromptTokens != 240 || r.Recorded.LatencyMs <= 0 {
		t.Fatalf("costs: %+v %+v", r.Candidate, r.Recorded)
	}
	// A stricter manifest live: the recorded read_file (allowed then) is
	// refused now — reported as a verdict change at its recorded seq, and
	// not executed.
	sraw, _ := os.ReadFile("../../fixtures/manifests/strict.json")
	sm, err := manifest.Parse(sraw)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := policy.Load(ctx, "", sm)
	if err != nil {
		t.Fatal(err)
	}
	sd := decide.NewDecider(sp)
	model.mu.Lock()
	model.requests, model.answers = nil, append(model.answers, model.answers...)
	model.mu.Unlock()
	strictEng, err := engine.New(sd, st)
	if err != nil {
		t.Fatal(err)
	}
	strict, err := Run(ctx, Config{Model: cfg.Model, Tools: tools, Engine: strictEng, Decider: sd, SessionID: "mcp-fix-total~live-strict", Now: cfg.Now}, chains[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(strict.VerdictChanges) == 0 || strict.VerdictChanges[0].Seq != r.ToolResults[0].Seq || strict.VerdictChanges[0].Recorded != "allow" || len(strict.ToolResults) != 0 {
		t.Fatalf("stricter live run: changes %+v, tool results %+v", strict.VerdictChanges, strict.ToolResults)
	}
	// The live run is a recorded session of its own that verifies and
	// names the original.
	vr, err := st.Verify(ctx, store.Filter{Session: cfg.SessionID}, ledger.Deep, nil)
	if err != nil || !vr.OK() || vr.Envelopes < 20 {
		t.Fatalf("live session: %v %+v", err, vr)
	}
	var first map[string]any
	st.ReadSession(ctx, ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: cfg.SessionID}, func(msg store.Msg) error {
		if first == nil {
			json.Unmarshal(msg.Data, &first)
		}
		return nil
	})
	link, _ := first["payload"].(map[string]any)["replay_of"].(map[string]any)
	if link["session_id"] != "mcp-fix-total" || link["head_hash"] != chains[0][len(chains[0])-1].Hash() {
		t.Fatalf("the live session does not link to the original: %v", first)
	}
}
