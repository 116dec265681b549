package engine

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/otlp"
)

// WithOTLP exports a span and metrics per decision to x (an OpenTelemetry
// collector over OTLP/HTTP), beside any telemetry file.
func WithOTLP(x *otlp.Exporter) Option {
	return func(e *Engine) error {
		if x == nil {
			return errors.New("otlp: nil exporter")
		}
		e.otlp = x
		if e.shaper == nil {
			e.shaper = otlp.NewShaper()
		}
		return x.ObserveSessions(func() int64 { return int64(e.Sessions().Live) })
	}
}

// report hands one decision to the traces (the telemetry file and the
// OTLP exporter, through the engine's Shaper) and the OTLP metrics: event
// is the hook event as sent (for its session and hook point when the
// decision failed), st the recorded step, err why it failed.
func (e *Engine) report(tenant string, event []byte, st *decide.Step, start, end time.Time, err error) {
	if e.tel == nil && e.otlp == nil {
		return
	}
	d := otlp.Decision{Tenant: tenant, Start: start, End: end, Enforced: true}
	if e.tel != nil {
		d.Content = redactedEvent(recordedForm(event, st))
	}
	if st != nil {
		r := st.Record
		d.Session, d.HookPoint, d.TurnID = RedactString(st.Event.SessionID), st.Event.HookPoint, RedactString(st.Event.TurnID)
		d.Tool, d.Native, d.Parent = RedactString(st.Event.ToolName), RedactString(st.Event.NativeTool()), RedactString(st.Event.ParentSessionID)
		d.Decision, d.AARMDecision, d.ReasonCode, d.Rule = r.Verdict.Decision, r.AARMDecision, r.ReasonCode, r.Verdict.MatchedRuleID
		d.Enforced, d.Seq, d.EventHash, d.VerdictHash = r.IsEnforced(), st.Envelope.Seq(), st.Envelope.Hash(), st.Verdict.Hash()
		d.SnapshotHash, d.PolicyDigest = r.SnapshotHash, r.PolicyDigest
		if r.Completes != nil {
			d.Completes = r.Completes.EventSeq
		}
	} else {
		var ev struct {
			Session string `json:"session_id"`
			Hook    string `json:"hook_point"`
		}
		_ = json.Unmarshal(event, &ev)
		d.Session, d.HookPoint = RedactString(ev.Session), "invalid"
		if aarts.IsHookPoint(ev.Hook) {
			d.HookPoint = ev.Hook // a name from a fixed set, never what the sender made up
		}
	}
	if err != nil {
		d.Err = RedactString(detect.UnescapeJSON(err.Error()))
		d.Rejected = decide.IsInputError(err)
	}
	e.otlp.Record(d)
	e.emit(e.shaper.Add(d))
}

// emit hands ended spans to the telemetry file and the OTLP exporter.
func (e *Engine) emit(spans []otlp.Span) {
	e.tel.write(spans)
	e.otlp.Export(spans)
}

// FlushTraces ends the spans still open (sessions, turns and calls the
// engine has not seen end) and hands them out: for an engine that stops.
func (e *Engine) FlushTraces() {
	e.emit(e.shaper.Close(e.now()))
}
