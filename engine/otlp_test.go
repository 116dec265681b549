package engine

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentledger/agentledger/otlp"
)

// otlpReceiver is an OTLP/HTTP collector in the test's process: it decodes
// what it receives (protobuf) and keeps it, as JSON, by signal.
type otlpReceiver struct {
	mu       sync.Mutex
	received map[string][]string // "traces", "metrics" → decoded requests, as JSON
	raw      []byte
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var msg proto.Message
	signal := strings.TrimPrefix(req.URL.Path, "/v1/")
	switch signal {
	case "traces":
		msg = &colltrace.ExportTraceServiceRequest{}
	case "metrics":
		msg = &collmetrics.ExportMetricsServiceRequest{}
	default:
		http.NotFound(w, req)
		return
	}
	if err := proto.Unmarshal(body, msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	js, _ := protojson.Marshal(msg)
	r.mu.Lock()
	r.received[signal] = append(r.received[signal], string(js))
	r.raw = append(r.raw, body...)
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (r *otlpReceiver) all(signal string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.received[signal], "\n")
}

// TestOTLPExport (issue 24): with the OpenTelemetry SDK exporting to an
// OTLP receiver, a decision arrives as an execute_tool span carrying the
// decision, the rule and the record's hashes, and as metrics; nothing of
// the telemetry test's secret table arrives, in the decoded requests or in
// their bytes.
func TestOTLPExport(t *testing.T) {
	rcv := &otlpReceiver{received: map[string][]string{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	ctx := context.Background()
	x, err := otlp.New(ctx, otlp.Config{Endpoint: srv.URL, MetricInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Shutdown(ctx)
	st := openStore(t, t.TempDir())
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st, WithOTLP(x))
	secrets, raw := secretTable()
	step, err := e.Decide(ctx, "acme", raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	traces, metrics := rcv.all("traces"), rcv.all("metrics")
	for _, want := range []string{`"name":"execute_tool shell"`, "gen_ai.operation.name", `"stringValue":"execute_tool"`, "gen_ai.tool.name",
		`"stringValue":"` + step.Record.Verdict.Decision + `"`, "agentledger.matched_rule_id", step.Envelope.Hash(), step.Verdict.Hash(),
		step.Record.SnapshotHash, step.Record.PolicyDigest} {
		if !strings.Contains(traces, want) {
			t.Errorf("the span lacks %s:\n%s", want, traces)
		}
	}
	if step.Record.Verdict.MatchedRuleID != "" && !strings.Contains(traces, step.Record.Verdict.MatchedRuleID) {
		t.Errorf("the span lacks the rule %s", step.Record.Verdict.MatchedRuleID)
	}
	for _, want := range []string{"agentledger.decisions", "agentledger.decision.duration", "agentledger.sessions.live"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("the metrics lack %s:\n%s", want, metrics)
		}
	}
	rcv.mu.Lock()
	all := traces + metrics + string(rcv.raw)
	rcv.mu.Unlock()
	for _, s := range secrets {
		if strings.Contains(all, s) {
			t.Errorf("OTLP export holds secret %q", s)
		}
	}
}
