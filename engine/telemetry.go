package engine

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/seal"
)

// Telemetry writes one OpenTelemetry-compatible span per decision as NDJSON.
// Every event copied into a span goes through Redact first: the ledger keeps
// the verbatim event as evidence, telemetry never holds a secret.
type Telemetry struct {
	mu sync.Mutex
	w  io.Writer
}

// NewTelemetry returns a Telemetry writing to w.
func NewTelemetry(w io.Writer) *Telemetry { return &Telemetry{w: w} }

// Span is one decision in the OTLP/JSON span shape (trace and span ids in
// hex, times in Unix nanoseconds, attributes as key/value pairs).
type Span struct {
	TraceID           string      `json:"traceId"`
	SpanID            string      `json:"spanId"`
	Name              string      `json:"name"`
	Kind              int         `json:"kind"` // 2: server
	StartTimeUnixNano int64       `json:"startTimeUnixNano,string"`
	EndTimeUnixNano   int64       `json:"endTimeUnixNano,string"`
	Attributes        []Attribute `json:"attributes"`
	Status            SpanStatus  `json:"status"`
}

// Attribute is a span attribute.
type Attribute struct {
	Key   string    `json:"key"`
	Value AttrValue `json:"value"`
}

// AttrValue holds one attribute value.
type AttrValue struct {
	StringValue *string `json:"stringValue,omitempty"`
	IntValue    *int64  `json:"intValue,omitempty,string"`
}

// SpanStatus is a span's status: 1 ok, 2 error.
type SpanStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message,omitempty"`
}

func strAttr(k, v string) Attribute { return Attribute{Key: k, Value: AttrValue{StringValue: &v}} }

func intAttr(k string, v int64) Attribute { return Attribute{Key: k, Value: AttrValue{IntValue: &v}} }

// traceID ties a session's spans together: the first 16 bytes of the
// SHA-256 of tenant and session.
func traceID(tenant, session string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + session))
	return hex.EncodeToString(sum[:16])
}

func spanID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Decision emits the span of one decision. event is the hook event as the
// host sent it; err, when set, is a decision that failed.
func (t *Telemetry) Decision(tenant string, event []byte, st *decide.Step, start, end time.Time, err error) {
	if t == nil {
		return
	}
	var ev map[string]any
	_ = json.Unmarshal(event, &ev)
	session, _ := ev["session_id"].(string)
	hook, _ := ev["hook_point"].(string)
	redacted, _ := json.Marshal(Redact(ev))
	s := Span{
		TraceID: traceID(tenant, session), SpanID: spanID(), Name: "agentledger.decide", Kind: 2,
		StartTimeUnixNano: start.UnixNano(), EndTimeUnixNano: end.UnixNano(), Status: SpanStatus{Code: 1},
		Attributes: []Attribute{
			strAttr("agentledger.tenant_id", tenant), strAttr("agentledger.session_id", RedactString(session)),
			strAttr("agentledger.hook_point", hook), strAttr("agentledger.event", string(redacted)),
		},
	}
	if st != nil {
		s.Attributes = append(s.Attributes,
			intAttr("agentledger.seq", int64(st.Envelope.Seq())),
			strAttr("agentledger.decision", st.Decision.Decision), strAttr("agentledger.aarm_decision", st.Decision.AARMDecision),
			strAttr("agentledger.reason_code", st.Decision.ReasonCode), strAttr("agentledger.matched_rule_id", st.Decision.MatchedRuleID),
			strAttr("agentledger.snapshot_hash", st.SnapshotHash), strAttr("agentledger.policy_digest", st.Decision.PolicyDigest))
	}
	if err != nil {
		s.Status = SpanStatus{Code: 2, Message: RedactString(err.Error())}
	}
	line, _ := json.Marshal(s)
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = t.w.Write(append(line, '\n'))
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
