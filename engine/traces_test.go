package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/agentledger/agentledger/otlp"
)

// tracedEvent is an AARTS event of session s at second sec.
func tracedEvent(s string, sec int, hook, rest string) []byte {
	return []byte(fmt.Sprintf(`{"hook_point":%q,"session_id":%q,"timestamp":"2026-11-22T09:%02d:%02dZ","host_id":"claude-code","aarts_version":"0.1","cwd":"/workspace/shop"%s}`,
		hook, s, sec/60, sec%60, rest))
}

// TestTracesHaveAShape (issue 40): a session of ten tool calls, and a
// sub-agent's session it spawns, written to the telemetry file, read with
// the OpenTelemetry Collector's own OTLP-JSON decoder (pdata): every line
// decodes; the spans form one trace whose invoke_agent root holds the turn,
// which holds the ten execute_tool spans, each from its PreToolUse to its
// PostToolUse with both decisions as events; the sub-agent's session is a
// child of the root; the non-tool events are events, not tool spans; the
// semantic conventions' schema URL is named.
func TestTracesHaveAShape(t *testing.T) {
	var out bytes.Buffer
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st, WithTelemetry(NewTelemetry(&out)))
	ctx := context.Background()
	decideAll := func(evs ...[]byte) {
		for _, ev := range evs {
			if _, err := e.Decide(ctx, "acme", ev); err != nil {
				t.Fatalf("%s: %v", ev, err)
			}
		}
	}
	decideAll(tracedEvent("tr", 0, "SessionStart", `,"environment":{"source":"startup"}`),
		tracedEvent("tr", 1, "PreUserInput", `,"turn_id":"turn-1","raw_input":"run the tests ten times","input_source":"keyboard"`))
	for i := range 10 {
		call := fmt.Sprintf(`,"turn_id":"toolu_%d","tool_name":"shell","tool_name_native":"Bash","artifacts":[],"tool_input":{"command":"go test ./pkg%d/..."}`, i, i)
		decideAll(tracedEvent("tr", 2+3*i, "PreToolUse", call), tracedEvent("tr", 3+3*i, "PostToolUse", call+fmt.Sprintf(`,"tool_result":"ok  \\tshop/pkg%d\\t0.0%ds","exit_code":0`, i, i)))
	}
	decideAll(tracedEvent("tr-sub", 40, "SessionStart", `,"parent_session_id":"tr","environment":{"source":"startup"}`),
		tracedEvent("tr-sub", 41, "SessionEnd", `,"reason":"other"`),
		tracedEvent("tr", 50, "PreOutputDeliver", `,"turn_id":"turn-1","output_text":"all ten passed"`), tracedEvent("tr", 51, "SessionEnd", `,"reason":"prompt_input_exit"`))
	e.FlushTraces()

	type span struct {
		trace, id, parent, name string
		outcome, decision       string
		events                  []string
	}
	var spans []span
	var dec ptrace.JSONUnmarshaler
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		td, err := dec.UnmarshalTraces(sc.Bytes())
		if err != nil {
			t.Fatalf("line %d: the Collector's decoder: %v", n, err)
		}
		if td.SpanCount() == 0 {
			t.Fatalf("line %d decodes to no span: %s", n, sc.Bytes())
		}
		for _, rs := range td.ResourceSpans().All() {
			if rs.SchemaUrl() != otlp.SchemaURL {
				t.Errorf("line %d: schema URL %q", n, rs.SchemaUrl())
			}
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					s := span{trace: sp.TraceID().String(), id: sp.SpanID().String(), parent: sp.ParentSpanID().String(), name: sp.Name()}
					if v, ok := sp.Attributes().Get("agentledger.outcome"); ok {
						s.outcome = v.Str()
					}
					if v, ok := sp.Attributes().Get("agentledger.decision"); ok {
						s.decision = v.Str()
					}
					for _, ev := range sp.Events().All() {
						s.events = append(s.events, ev.Name())
					}
					if sp.EndTimestamp() < sp.StartTimestamp() {
						t.Errorf("%s ends before it starts", s.name)
					}
					spans = append(spans, s)
				}
			}
		}
	}
	byName := map[string][]span{}
	for _, s := range spans {
		byName[s.name] = append(byName[s.name], s)
		if s.trace != spans[0].trace {
			t.Errorf("%s is in trace %s, the session's is %s", s.name, s.trace, spans[0].trace)
		}
	}
	if len(byName["invoke_agent"]) != 2 || len(byName["agentledger.turn"]) != 1 || len(byName["execute_tool shell"]) != 10 || len(spans) != 13 {
		t.Fatalf("spans: %v", byName)
	}
	var root, sub span
	for _, s := range byName["invoke_agent"] {
		if s.parent == "" {
			root = s
		} else {
			sub = s
		}
	}
	if root.id == "" || sub.parent != root.id {
		t.Fatalf("the sessions: root %+v, sub-agent %+v", root, sub)
	}
	turn := byName["agentledger.turn"][0]
	if turn.parent != root.id || fmt.Sprint(turn.events) != "[agentledger.PreUserInput agentledger.PreOutputDeliver]" {
		t.Errorf("the turn: %+v", turn)
	}
	for _, call := range byName["execute_tool shell"] {
		if call.parent != turn.id || fmt.Sprint(call.events) != "[agentledger.PreToolUse agentledger.PostToolUse]" || call.outcome != "ran" || call.decision != "allow" {
			t.Errorf("a call: %+v", call)
		}
	}
	if fmt.Sprint(root.events) != "[agentledger.SessionStart agentledger.SessionEnd]" {
		t.Errorf("the session's events: %v", root.events)
	}
}
