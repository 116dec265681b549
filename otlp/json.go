package otlp

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
)

// The OTLP-JSON form of an ExportTraceServiceRequest (the OTLP
// specification's JSON encoding: ids in hex, 64-bit integers and times as
// decimal strings, enums as numbers), as a collector's otlpjson reader and
// its file receiver take it, one request per line.
type (
	jsonRequest struct {
		ResourceSpans []jsonResourceSpans `json:"resourceSpans"`
	}
	jsonResourceSpans struct {
		Resource   jsonResource     `json:"resource"`
		ScopeSpans []jsonScopeSpans `json:"scopeSpans"`
		SchemaURL  string           `json:"schemaUrl"`
	}
	jsonResource struct {
		Attributes []jsonKeyValue `json:"attributes"`
	}
	jsonScopeSpans struct {
		Scope     jsonScope  `json:"scope"`
		Spans     []jsonSpan `json:"spans"`
		SchemaURL string     `json:"schemaUrl"`
	}
	jsonScope struct {
		Name string `json:"name"`
	}
	jsonSpan struct {
		TraceID           string         `json:"traceId"`
		SpanID            string         `json:"spanId"`
		ParentSpanID      string         `json:"parentSpanId,omitempty"`
		Name              string         `json:"name"`
		Kind              int            `json:"kind"`
		StartTimeUnixNano string         `json:"startTimeUnixNano"`
		EndTimeUnixNano   string         `json:"endTimeUnixNano"`
		Attributes        []jsonKeyValue `json:"attributes,omitempty"`
		Events            []jsonEvent    `json:"events,omitempty"`
		Status            jsonStatus     `json:"status"`
	}
	jsonEvent struct {
		TimeUnixNano string         `json:"timeUnixNano"`
		Name         string         `json:"name"`
		Attributes   []jsonKeyValue `json:"attributes,omitempty"`
	}
	jsonStatus struct {
		Code    int    `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
	jsonKeyValue struct {
		Key   string    `json:"key"`
		Value jsonValue `json:"value"`
	}
	jsonValue struct {
		StringValue *string  `json:"stringValue,omitempty"`
		IntValue    *string  `json:"intValue,omitempty"`
		BoolValue   *bool    `json:"boolValue,omitempty"`
		DoubleValue *float64 `json:"doubleValue,omitempty"`
	}
)

// spanKindInternal is OTLP's SPAN_KIND_INTERNAL; statusError its
// STATUS_CODE_ERROR.
const (
	spanKindInternal = 1
	statusError      = 2
)

// WriteJSON writes spans as one line of OTLP-JSON (an
// ExportTraceServiceRequest), with each event's content (the redacted
// hook event) as its attribute agentledger.event. Nothing is written for
// no spans.
func WriteJSON(w io.Writer, spans []Span) error {
	if len(spans) == 0 {
		return nil
	}
	ss := jsonScopeSpans{Scope: jsonScope{Name: ScopeName}, SchemaURL: SchemaURL}
	for _, sp := range spans {
		js := jsonSpan{TraceID: hex.EncodeToString(sp.TraceID[:]), SpanID: hex.EncodeToString(sp.SpanID[:]), Name: sp.Name, Kind: spanKindInternal,
			StartTimeUnixNano: strconv.FormatInt(sp.Start.UnixNano(), 10), EndTimeUnixNano: strconv.FormatInt(sp.End.UnixNano(), 10),
			Attributes: jsonAttrs(sp.Attrs)}
		if sp.Parent != ([8]byte{}) {
			js.ParentSpanID = hex.EncodeToString(sp.Parent[:])
		}
		for _, ev := range sp.Events {
			attrs := jsonAttrs(ev.Attrs)
			if ev.Content != "" {
				attrs = append(attrs, jsonAttrs([]attribute.KeyValue{attribute.String("agentledger.event", ev.Content)})...)
			}
			js.Events = append(js.Events, jsonEvent{TimeUnixNano: strconv.FormatInt(ev.Time.UnixNano(), 10), Name: ev.Name, Attributes: attrs})
		}
		if sp.Error != "" {
			js.Status = jsonStatus{Code: statusError, Message: sp.Error}
		}
		ss.Spans = append(ss.Spans, js)
	}
	req := jsonRequest{ResourceSpans: []jsonResourceSpans{{
		Resource:   jsonResource{Attributes: jsonAttrs([]attribute.KeyValue{attribute.String("service.name", ServiceName)})},
		ScopeSpans: []jsonScopeSpans{ss}, SchemaURL: SchemaURL}}}
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	_, err = w.Write(append(line, '\n'))
	return err
}

func jsonAttrs(kvs []attribute.KeyValue) []jsonKeyValue {
	out := make([]jsonKeyValue, 0, len(kvs))
	for _, kv := range kvs {
		var v jsonValue
		switch kv.Value.Type() {
		case attribute.BOOL:
			b := kv.Value.AsBool()
			v.BoolValue = &b
		case attribute.INT64:
			s := strconv.FormatInt(kv.Value.AsInt64(), 10)
			v.IntValue = &s
		case attribute.FLOAT64:
			f := kv.Value.AsFloat64()
			v.DoubleValue = &f
		default:
			s := kv.Value.Emit()
			v.StringValue = &s
		}
		out = append(out, jsonKeyValue{Key: string(kv.Key), Value: v})
	}
	return out
}
