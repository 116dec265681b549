// Package otlp exports agentledger's decisions as OpenTelemetry traces
// and metrics. Shaper folds decisions into traces — one per session, a span
// per turn, an execute_tool span per tool call from its PreToolUse to its
// PostToolUse, sub-agents as child spans (semantic conventions v1.41.0,
// GenAI: Development status) — which go to a collector over OTLP (HTTP or
// gRPC) with the official OpenTelemetry Go SDK (Exporter) or into a file
// of OTLP-JSON lines a collector reads (WriteJSON), beside the engine's
// metrics: decisions by outcome, decision latency, append errors and live
// sessions. What it is given is already redacted: no event content goes
// over OTLP, only what was decided, by which rule, and the record's
// hashes.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// SemConvVersion is the version of the OpenTelemetry semantic conventions
// whose GenAI tool execution span the spans follow.
const SemConvVersion = "1.41.0"

// SchemaURL names the semantic conventions' version the spans follow.
const SchemaURL = "https://opentelemetry.io/schemas/" + SemConvVersion

// ServiceName and ScopeName name the engine and its instrumentation in
// what it exports.
const (
	ServiceName = "agentledger-engine"
	ScopeName   = "github.com/agentledger/agentledger/otlp"
)

// Config says where to export.
type Config struct {
	// Endpoint is the collector's base URL: for OTLP/HTTP
	// (http://127.0.0.1:4318) traces go to /v1/traces and metrics to
	// /v1/metrics; for OTLP/gRPC (http://127.0.0.1:4317) it is the
	// server (http: without TLS).
	Endpoint string
	// Protocol is "http" (the default) or "grpc".
	Protocol string
	// Headers are sent with every export (an API key, say).
	Headers map[string]string
	// MetricInterval is how often metrics are exported (default 30s).
	MetricInterval time.Duration
}

// Exporter exports decisions. Its methods are safe for concurrent use.
type Exporter struct {
	meter     metric.Meter
	tp        *sdktrace.TracerProvider
	mp        *sdkmetric.MeterProvider
	tracer    trace.Tracer
	decisions metric.Int64Counter
	latency   metric.Float64Histogram
	appendErr metric.Int64Counter
}

// New starts an Exporter to cfg.Endpoint.
func New(ctx context.Context, cfg Config) (*Exporter, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("otlp endpoint %q: want http(s)://HOST:PORT", cfg.Endpoint)
	}
	te, me, err := exporters(ctx, cfg, u)
	if err != nil {
		return nil, err
	}
	res := resource.NewWithAttributes(SchemaURL, attribute.String("service.name", ServiceName))
	every := cfg.MetricInterval
	if every <= 0 {
		every = 30 * time.Second
	}
	x := &Exporter{
		tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(te), sdktrace.WithResource(res), sdktrace.WithIDGenerator(shapedIDs{})),
		mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me, sdkmetric.WithInterval(every))), sdkmetric.WithResource(res)),
	}
	x.tracer = x.tp.Tracer(ScopeName, trace.WithSchemaURL(SchemaURL))
	m := x.mp.Meter("github.com/agentledger/agentledger/otlp")
	x.meter = m
	if x.decisions, err = m.Int64Counter("agentledger.decisions", metric.WithDescription("decisions, by outcome")); err != nil {
		return nil, err
	}
	if x.latency, err = m.Float64Histogram("agentledger.decision.duration", metric.WithUnit("s"), metric.WithDescription("time to decide and record a call")); err != nil {
		return nil, err
	}
	if x.appendErr, err = m.Int64Counter("agentledger.append.errors", metric.WithDescription("decisions that could not be recorded")); err != nil {
		return nil, err
	}
	return x, nil
}

// ObserveSessions reports, at every metrics export, the sessions the
// engine holds (live()).
func (x *Exporter) ObserveSessions(live func() int64) error {
	_, err := x.meter.Int64ObservableGauge("agentledger.sessions.live", metric.WithDescription("sessions the engine holds"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { o.Observe(live()); return nil }))
	return err
}

// exporters are the trace and metric exporters of cfg's protocol.
func exporters(ctx context.Context, cfg Config, u *url.URL) (sdktrace.SpanExporter, sdkmetric.Exporter, error) {
	var te sdktrace.SpanExporter
	var me sdkmetric.Exporter
	var err1, err2 error
	switch cfg.Protocol {
	case "", "http":
		te, err1 = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.JoinPath("v1", "traces").String()), otlptracehttp.WithHeaders(cfg.Headers))
		me, err2 = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(u.JoinPath("v1", "metrics").String()), otlpmetrichttp.WithHeaders(cfg.Headers))
	case "grpc":
		te, err1 = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(u.String()), otlptracegrpc.WithHeaders(cfg.Headers))
		me, err2 = otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(u.String()), otlpmetricgrpc.WithHeaders(cfg.Headers))
	default:
		return nil, nil, fmt.Errorf("otlp protocol %q: want http or grpc", cfg.Protocol)
	}
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, fmt.Errorf("otlp exporters: %w", err)
	}
	return te, me, nil
}

// Decision is one decision as exported: what was decided and where it is
// on record, never what the event carried.
type Decision struct {
	Tenant, Session, HookPoint string
	// Tool is the canonical tool name, Native the host's; TurnID the call's
	// id, when the event had them.
	Tool, Native, TurnID       string
	Decision, AARMDecision     string
	ReasonCode, Rule           string
	Enforced                   bool
	Seq                        uint64
	EventHash, VerdictHash     string
	SnapshotHash, PolicyDigest string
	Start, End                 time.Time
	// Err, when set, is why the call could not be decided and recorded
	// (already redacted); Rejected says the input was at fault (not the
	// engine).
	Err      string
	Rejected bool
	// Completes, for a tool's result, is the seq of the PreToolUse whose
	// call it completes (0: not known).
	Completes uint64
	// Parent is the session a sub-agent's session was spawned by (its
	// span is a child of the parent session's).
	Parent string
	// Content is the hook event as a telemetry file shows it (redacted);
	// never exported over OTLP.
	Content string
}

// Record counts one decision in the metrics (its spans go out through
// Export, once Shaper has ended them).
func (x *Exporter) Record(d Decision) {
	if x == nil {
		return
	}
	outcome := d.Decision
	switch {
	case d.Err != "" && d.Rejected:
		outcome = "rejected"
	case d.Err != "":
		outcome = "failure"
		x.appendErr.Add(context.Background(), 1)
	}
	x.decisions.Add(context.Background(), 1, metric.WithAttributes(attribute.String("decision", outcome), attribute.Bool("enforced", d.Enforced)))
	x.latency.Record(context.Background(), d.End.Sub(d.Start).Seconds(), metric.WithAttributes(attribute.String("hook_point", d.HookPoint)))
}

// Export sends finished spans (Shaper's) with the ids Shaper gave them:
// each session one trace, each span under its parent.
func (x *Exporter) Export(spans []Span) {
	if x == nil {
		return
	}
	for _, sp := range spans {
		ctx := context.WithValue(context.Background(), idsKey{}, sp)
		if sp.Parent != ([8]byte{}) {
			ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: sp.TraceID, SpanID: sp.Parent, TraceFlags: trace.FlagsSampled, Remote: true}))
		}
		_, span := x.tracer.Start(ctx, sp.Name, trace.WithTimestamp(sp.Start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(sp.Attrs...))
		for _, ev := range sp.Events {
			span.AddEvent(ev.Name, trace.WithTimestamp(ev.Time), trace.WithAttributes(ev.Attrs...))
		}
		if sp.Error != "" {
			span.SetStatus(codes.Error, sp.Error)
			span.SetAttributes(attribute.String("error.type", "agentledger.not_recorded"))
		}
		span.End(trace.WithTimestamp(sp.End))
	}
}

// idsKey carries, in a span's start context, the span whose ids the
// tracer is to give it (shapedIDs).
type idsKey struct{}

// shapedIDs gives each span the ids Shaper derived for it.
type shapedIDs struct{}

func (shapedIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	sp, _ := ctx.Value(idsKey{}).(Span)
	return sp.TraceID, sp.SpanID
}

func (shapedIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	sp, _ := ctx.Value(idsKey{}).(Span)
	return sp.SpanID
}

// Flush exports what is buffered now.
func (x *Exporter) Flush(ctx context.Context) error {
	return errors.Join(x.tp.ForceFlush(ctx), x.mp.ForceFlush(ctx))
}

// Shutdown flushes and stops the exporter.
func (x *Exporter) Shutdown(ctx context.Context) error {
	return errors.Join(x.tp.Shutdown(ctx), x.mp.Shutdown(ctx))
}
