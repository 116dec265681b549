package otlp

import (
	"fmt"
	"testing"
	"time"
)

func names(spans []Span) string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return fmt.Sprint(out)
}

// TestShaperEndsSpansWhenTheyEnd: a call refused before it ran ends at
// once; an allowed call waits for its result; a result whose call this
// shaper never saw is a span of its own; Close ends what is open, the
// session last, with the open call marked not reported.
func TestShaperEndsSpansWhenTheyEnd(t *testing.T) {
	s := NewShaper()
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	d := func(hook string, seq uint64, decision string) Decision {
		at = at.Add(time.Second)
		return Decision{Tenant: "t", Session: "s", HookPoint: hook, Tool: "shell", Seq: seq, Decision: decision, Start: at, End: at.Add(time.Millisecond)}
	}
	if got := s.Add(d("PreToolUse", 0, "deny")); names(got) != "[execute_tool shell]" {
		t.Fatalf("a refused call: %s", names(got))
	}
	if got := s.Add(d("PreToolUse", 2, "allow")); len(got) != 0 {
		t.Fatalf("an allowed call ended before its result: %s", names(got))
	}
	orphan := d("PostToolUse", 9, "allow")
	orphan.Completes = 7
	if got := s.Add(orphan); names(got) != "[execute_tool shell]" || got[0].SpanID == spanOf("tool", "t", "s", "2") {
		t.Fatalf("a result of a call not seen: %+v", got)
	}
	got := s.Close(at.Add(time.Minute))
	if names(got) != "[execute_tool shell invoke_agent]" || got[0].Parent != got[1].SpanID || got[1].Parent != ([8]byte{}) {
		t.Fatalf("Close: %+v", got)
	}
	outcome := ""
	for _, a := range got[0].Attrs {
		if a.Key == "agentledger.outcome" {
			outcome = a.Value.AsString()
		}
	}
	if outcome != "not_reported" {
		t.Errorf("the open call's outcome: %q", outcome)
	}
	if len(s.Close(at)) != 0 {
		t.Error("a second Close ended spans again")
	}
}
