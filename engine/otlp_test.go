package engine

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
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
	r.keep(signal, msg)
	r.mu.Lock()
	r.raw = append(r.raw, body...)
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// keep stores one decoded request of signal.
func (r *otlpReceiver) keep(signal string, msg proto.Message) {
	js, _ := protojson.Marshal(msg)
	raw, _ := proto.Marshal(msg)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.received[signal] = append(r.received[signal], string(js))
	r.raw = append(r.raw, raw...)
}

// grpcTraces and grpcMetrics are the OTLP/gRPC collector services of an
// otlpReceiver.
type grpcTraces struct {
	colltrace.UnimplementedTraceServiceServer
	r *otlpReceiver
}

func (g grpcTraces) Export(_ context.Context, req *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	g.r.keep("traces", req)
	return &colltrace.ExportTraceServiceResponse{}, nil
}

type grpcMetrics struct {
	collmetrics.UnimplementedMetricsServiceServer
	r *otlpReceiver
}

func (g grpcMetrics) Export(_ context.Context, req *collmetrics.ExportMetricsServiceRequest) (*collmetrics.ExportMetricsServiceResponse, error) {
	g.r.keep("metrics", req)
	return &collmetrics.ExportMetricsServiceResponse{}, nil
}

// start serves r over protocol and returns its endpoint.
func (r *otlpReceiver) start(t *testing.T, protocol string) string {
	t.Helper()
	if protocol == "http" {
		srv := httptest.NewServer(r)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	colltrace.RegisterTraceServiceServer(gs, grpcTraces{r: r})
	collmetrics.RegisterMetricsServiceServer(gs, grpcMetrics{r: r})
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	return "http://" + ln.Addr().String()
}

func (r *otlpReceiver) all(signal string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.received[signal], "\n")
}

// TestOTLPExport (issue 24): with the OpenTelemetry SDK exporting to an
// OTLP receiver, over HTTP and over gRPC, a decision arrives as an
// execute_tool span carrying the decision, the rule and the record's
// hashes, and as metrics; nothing of the telemetry test's secret table
// arrives, in the decoded requests or in their bytes.
func TestOTLPExport(t *testing.T) {
	for _, protocol := range []string{"http", "grpc"} {
		t.Run(protocol, func(t *testing.T) { testOTLPExport(t, protocol) })
	}
}

func testOTLPExport(t *testing.T, protocol string) {
	rcv := &otlpReceiver{received: map[string][]string{}}
	endpoint := rcv.start(t, protocol)
	ctx := context.Background()
	x, err := otlp.New(ctx, otlp.Config{Endpoint: endpoint, Protocol: protocol, MetricInterval: time.Hour})
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
	// Input the engine rejects: its made-up hook point and the key its
	// error quotes must not reach the collector either.
	hex40 := strings.Repeat("9f8e", 10)
	if _, err := e.Decide(ctx, "acme", []byte(`{"hook_point":"Pre`+hex40+`","session_id":"tel","k`+hex40+`":1,"k`+hex40+`":2}`)); err == nil {
		t.Fatal("bad input was decided")
	}
	secrets = append(secrets, hex40)
	e.FlushTraces() // the call's span ends with its result, or here
	if err := x.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	traces, metrics := rcv.all("traces"), rcv.all("metrics")
	// The call's span is a child of its session's (invoke_agent), under
	// the semantic conventions' schema URL.
	for _, want := range []string{`"name":"invoke_agent"`, `"parentSpanId"`, otlp.SchemaURL} {
		if !strings.Contains(traces, want) {
			t.Errorf("the trace lacks %s:\n%s", want, traces)
		}
	}
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
