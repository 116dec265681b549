package otlp

import (
	"crypto/sha256"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// Span is a finished span as Shaper builds it: its place in its session's
// trace (ids derived from the tenant, session and call, so that every
// engine that sees the same session names the same spans), its times,
// attributes and events.
type Span struct {
	TraceID [16]byte
	SpanID  [8]byte
	// Parent is the enclosing span (zero: a root).
	Parent     [8]byte
	Name       string
	Start, End time.Time
	Attrs      []attribute.KeyValue
	Events     []Event
	// Error, when set, is why the span's decision failed (redacted).
	Error string
}

// Event is something that happened within a span: a decision on a hook
// event that is not a tool call's own span.
type Event struct {
	Name  string
	Time  time.Time
	Attrs []attribute.KeyValue
	// Content is the hook event as a telemetry file may show it
	// (redacted); the OTLP exporter never sends it.
	Content string
}

// MaxOpenSessions bounds the sessions a Shaper holds open spans of; past
// it the least recently used session's spans are ended and handed out.
const MaxOpenSessions = 4096

// Shaper folds decisions into traces: one trace per session (a sub-agent's
// session is a child span in its parent's trace), an "invoke_agent" span
// for the session, a turn span from each user input to the turn's end,
// and one "execute_tool" span per tool call from its PreToolUse to its
// PostToolUse (the verdict and the outcome as attributes and events).
// Other hook events are events of the turn (or of the session, outside a
// turn). A span is handed out when it ends: a tool span at its result (at
// once for a call refused before it ran), a turn at the next input, at
// its output's delivery (PreOutputDeliver) or at the session's end, the
// session span at SessionEnd. Close
// ends what is still open. Its methods are safe for concurrent use.
type Shaper struct {
	mu       sync.Mutex
	sessions map[string]*session
	clock    uint64 // a use counter: which session was used last
}

// NewShaper returns an empty Shaper.
func NewShaper() *Shaper { return &Shaper{sessions: map[string]*session{}} }

type session struct {
	used  uint64
	span  Span
	turn  *Span
	tools map[string]*Span // open calls, by their PreToolUse's seq
	// callIDs are the open calls' turn ids (a host's tool_use_id), by the
	// same key.
	callIDs map[string]string
	last    time.Time
}

func digest(parts ...string) [32]byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func traceOf(tenant, session string) [16]byte {
	d := digest("trace", tenant, session)
	return [16]byte(d[:16])
}

func spanOf(parts ...string) [8]byte {
	d := digest(parts...)
	return [8]byte(d[:8])
}

// Add folds one decision in and returns the spans it ended.
func (s *Shaper) Add(d Decision) []Span {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Span
	key := d.Tenant + "\x00" + d.Session
	ss := s.sessions[key]
	if ss == nil {
		if len(s.sessions) >= MaxOpenSessions {
			out = append(out, s.evict()...)
		}
		ss = s.open(d)
		s.sessions[key] = ss
	}
	s.clock++
	ss.used, ss.last = s.clock, d.End
	attrs := decisionAttrs(d)
	ev := Event{Name: "agentledger." + d.HookPoint, Time: d.Start, Attrs: attrs, Content: d.Content}
	switch d.HookPoint {
	case "PreUserInput":
		out = append(out, ss.endTurn(d.Start)...)
		t := Span{TraceID: ss.span.TraceID, SpanID: spanOf("turn", d.Tenant, d.Session, itoa(d.Seq)), Parent: ss.span.SpanID,
			Name: "agentledger.turn", Start: d.Start, Attrs: []attribute.KeyValue{
				attribute.String("gen_ai.conversation.id", d.Session), attribute.String("agentledger.tenant_id", d.Tenant),
				attribute.Int64("agentledger.turn.seq", int64(d.Seq))}}
		t.Events = append(t.Events, ev)
		ss.turn = &t
	case "PreToolUse":
		parent := ss.parentFor(d)
		call := Span{TraceID: ss.span.TraceID, SpanID: spanOf("tool", d.Tenant, d.Session, itoa(d.Seq)), Parent: parent,
			Name: "execute_tool " + d.Tool, Start: d.Start, End: d.End, Attrs: toolAttrs(d), Events: []Event{ev}}
		if d.Err != "" || d.Decision == "deny" {
			// Refused (or not decided): it does not run, its span ends here.
			call.Attrs = append(call.Attrs, attribute.String("agentledger.outcome", "refused"))
			call.Error = d.Err
			out = append(out, call)
			break
		}
		ss.tools[itoa(d.Seq)] = &call
		ss.callIDs[itoa(d.Seq)] = d.TurnID
	case "PostToolUse", "PostToolUseFailure":
		key := ss.callOf(d)
		call := ss.tools[key]
		if call == nil {
			// A result without its call in view (another engine, a
			// restart): a span of its own.
			c := Span{TraceID: ss.span.TraceID, SpanID: spanOf("tool", d.Tenant, d.Session, "result", itoa(d.Seq)), Parent: ss.parentFor(d),
				Name: "execute_tool " + d.Tool, Start: d.Start, Attrs: toolAttrs(d)}
			call = &c
		}
		delete(ss.tools, key)
		delete(ss.callIDs, key)
		call.End = d.End
		call.Events = append(call.Events, ev)
		call.Attrs = append(call.Attrs, attribute.String("agentledger.outcome", outcomeOf(d)),
			attribute.String("agentledger.result.decision", d.Decision), attribute.String("agentledger.result.reason_code", d.ReasonCode),
			attribute.String("agentledger.result.verdict_hash", d.VerdictHash))
		call.Error = d.Err
		out = append(out, *call)
	case "PreOutputDeliver":
		if ss.turn != nil {
			ss.turn.Events = append(ss.turn.Events, ev)
		} else {
			ss.span.Events = append(ss.span.Events, ev)
		}
		out = append(out, ss.endTurn(d.End)...)
	case "SessionEnd":
		ss.span.Events = append(ss.span.Events, ev)
		out = append(out, ss.end(d.End)...)
		delete(s.sessions, key)
	default:
		if ss.turn != nil {
			ss.turn.Events = append(ss.turn.Events, ev)
		} else {
			ss.span.Events = append(ss.span.Events, ev)
		}
	}
	return out
}

// Close ends every open span (now) and returns them.
func (s *Shaper) Close(now time.Time) []Span {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Span
	for key, ss := range s.sessions {
		out = append(out, ss.end(later(now, ss.last))...)
		delete(s.sessions, key)
	}
	return out
}

// evict ends the least recently used session's spans. s.mu is held.
func (s *Shaper) evict() []Span {
	var oldest string
	var used uint64
	for k, ss := range s.sessions {
		if oldest == "" || ss.used < used {
			oldest, used = k, ss.used
		}
	}
	ss := s.sessions[oldest]
	delete(s.sessions, oldest)
	return ss.end(ss.last)
}

// open starts a session's span: a root in a trace of its own, or, for a
// sub-agent's session, a child of its parent session's span in the
// parent's trace (when the parent is open here, its trace; otherwise the
// trace the parent session names).
func (s *Shaper) open(d Decision) *session {
	ss := &session{tools: map[string]*Span{}, callIDs: map[string]string{}, span: Span{TraceID: traceOf(d.Tenant, d.Session), SpanID: spanOf("session", d.Tenant, d.Session),
		Name: "invoke_agent", Start: d.Start, Attrs: []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.conversation.id", d.Session),
			attribute.String("agentledger.tenant_id", d.Tenant)}}}
	if d.Parent != "" {
		ss.span.Parent = spanOf("session", d.Tenant, d.Parent)
		ss.span.TraceID = traceOf(d.Tenant, d.Parent)
		if p := s.sessions[d.Tenant+"\x00"+d.Parent]; p != nil {
			ss.span.TraceID = p.span.TraceID
		}
		ss.span.Attrs = append(ss.span.Attrs, attribute.String("agentledger.parent_session_id", d.Parent))
	}
	return ss
}

// parentFor is the span a tool call is a child of: the open turn, or the
// session outside a turn.
func (ss *session) parentFor(Decision) [8]byte {
	if ss.turn != nil {
		return ss.turn.SpanID
	}
	return ss.span.SpanID
}

// endTurn ends the open turn and the calls still open in it, at t.
func (ss *session) endTurn(t time.Time) []Span {
	var out []Span
	for k, c := range ss.tools {
		if ss.turn != nil && c.Parent != ss.turn.SpanID {
			continue
		}
		c.End = later(t, c.Start)
		c.Attrs = append(c.Attrs, attribute.String("agentledger.outcome", "not_reported"))
		out = append(out, *c)
		delete(ss.tools, k)
		delete(ss.callIDs, k)
	}
	if ss.turn != nil {
		ss.turn.End = later(t, ss.turn.Start)
		out = append(out, *ss.turn)
		ss.turn = nil
	}
	return out
}

// end ends everything open in the session, and the session's span, at t.
func (ss *session) end(t time.Time) []Span {
	out := ss.endTurn(t)
	for k, c := range ss.tools {
		c.End = later(t, c.Start)
		c.Attrs = append(c.Attrs, attribute.String("agentledger.outcome", "not_reported"))
		out = append(out, *c)
		delete(ss.tools, k)
		delete(ss.callIDs, k)
	}
	ss.span.End = later(t, ss.span.Start)
	return append(out, ss.span)
}

// callOf is the open call a result completes: the PreToolUse its verdict
// names (Completes), else the oldest open call of the same turn id.
func (ss *session) callOf(d Decision) string {
	if d.Completes > 0 {
		return itoa(d.Completes)
	}
	var best string
	var bestSeq uint64
	for k, id := range ss.callIDs {
		seq, _ := strconv.ParseUint(k, 10, 64)
		if id == d.TurnID && (best == "" || seq < bestSeq) {
			best, bestSeq = k, seq
		}
	}
	return best
}

func outcomeOf(d Decision) string {
	switch {
	case d.Err != "":
		return "not_recorded"
	case d.Decision == "allow":
		return "ran"
	}
	return "ran_result_" + d.Decision // the result is withheld or asked about
}

func toolAttrs(d Decision) []attribute.KeyValue {
	out := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.conversation.id", d.Session),
		attribute.String("gen_ai.tool.name", d.Tool), attribute.String("agentledger.tool_native", d.Native)}
	if d.TurnID != "" {
		out = append(out, attribute.String("gen_ai.tool.call.id", d.TurnID))
	}
	return append(out, decisionAttrs(d)...)
}

// decisionAttrs are what was decided and where it is on record.
func decisionAttrs(d Decision) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("agentledger.tenant_id", d.Tenant),
		attribute.String("agentledger.hook_point", d.HookPoint),
		attribute.String("agentledger.decision", d.Decision),
		attribute.String("agentledger.aarm_decision", d.AARMDecision),
		attribute.String("agentledger.reason_code", d.ReasonCode),
		attribute.String("agentledger.matched_rule_id", d.Rule),
		attribute.Bool("agentledger.enforced", d.Enforced),
		attribute.Int64("agentledger.seq", int64(d.Seq)),
		attribute.String("agentledger.event_hash", d.EventHash),
		attribute.String("agentledger.verdict_hash", d.VerdictHash),
		attribute.String("agentledger.snapshot_hash", d.SnapshotHash),
		attribute.String("agentledger.policy_digest", d.PolicyDigest),
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
