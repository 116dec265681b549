package engine

import (
	"encoding/json"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/otlp"
	"github.com/agentledger/agentledger/seal"
)

// Telemetry writes the engine's traces to a file as OTLP-JSON lines (one
// ExportTraceServiceRequest per line, as an OpenTelemetry Collector's file
// receiver and otlpjson reader take them): spans shaped by otlp.Shaper, a
// line whenever spans end. Every event copied into a span goes through
// Redact first: the ledger keeps the verbatim event as evidence, telemetry
// never holds a secret.
type Telemetry struct {
	mu sync.Mutex
	w  io.Writer
}

// NewTelemetry returns a Telemetry writing to w.
func NewTelemetry(w io.Writer) *Telemetry { return &Telemetry{w: w} }

// write writes ended spans as one line.
func (t *Telemetry) write(spans []otlp.Span) {
	if t == nil || len(spans) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = otlp.WriteJSON(t.w, spans)
}

// redactedEvent is a hook event as telemetry shows it: its JSON with every
// secret taken out (Redact).
func redactedEvent(event []byte) string {
	var ev map[string]any
	_ = json.Unmarshal(event, &ev)
	redacted, _ := json.Marshal(Redact(ev))
	return string(redacted)
}

// secretKey matches member names that hold secrets, in any case.
var secretKey = regexp.MustCompile(`(?i)(pass(word|wd|phrase)?|secret|token|api[-_]?key|apikey|auth(orization)?|credential|private[-_]?key|access[-_]?key|session[-_]?key|cookie|signature|client[-_]?secret|bearer|pwd)`)

// opaqueTokens are what telemetry, leaving the machine, takes out beyond
// the detectors: long hex and base64 runs, which may be credentials no
// detector knows (and, in an event, are rarely anything a reader needs).
var opaqueTokens = []*regexp.Regexp{
	regexp.MustCompile(`\b[0-9a-fA-F]{32,}\b`),
	regexp.MustCompile(`[A-Za-z0-9+/_-]{40,}={0,2}`),
}

// Redact returns a copy of v with secrets removed: values under
// secret-bearing keys (any case, any depth, arrays included) become
// "[REDACTED]", and strings lose what RedactString takes out.
func Redact(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if secretKey.MatchString(k) {
				out[k] = "[REDACTED]"
				continue
			}
			out[k] = Redact(x[k])
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Redact(e)
		}
		return out
	case string:
		return RedactString(x)
	}
	return v
}

// RedactString removes secrets from one string: whatever the detectors
// find (package detect: secrets and personal data, as ‹redacted:kind›),
// then long hex and base64 runs ([TOKEN]).
func RedactString(s string) string {
	s = detect.Redact(s)
	for _, re := range opaqueTokens {
		s = re.ReplaceAllString(s, "[TOKEN]")
	}
	return strings.TrimSpace(s)
}

// recordedForm is what telemetry shows of an event: as recorded (sealed
// values shown as sealed) when it was recorded, else as sent (redacted by
// the span writer either way).
func recordedForm(payload []byte, st *decide.Step) []byte {
	if st == nil || st.Envelope == nil {
		return payload
	}
	return seal.Render(st.Envelope.Payload())
}
