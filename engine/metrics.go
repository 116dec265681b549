package engine

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// latencyBuckets are the upper bounds, in seconds, of the decision latency
// histogram.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5}

// metrics counts decisions for GET /metrics in Prometheus's text format.
type metrics struct {
	mu           sync.Mutex
	byDecision   map[string]uint64
	buckets      []uint64
	count        uint64
	sum          float64
	appendErrors atomic.Uint64
}

func newMetrics() *metrics {
	return &metrics{byDecision: map[string]uint64{"allow": 0, "ask": 0, "deny": 0}, buckets: make([]uint64, len(latencyBuckets))}
}

func (m *metrics) observe(decision string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byDecision[decision]++
	sec := d.Seconds()
	for i, b := range latencyBuckets {
		if sec <= b {
			m.buckets[i]++
		}
	}
	m.count++
	m.sum += sec
}

func (m *metrics) serve(w http.ResponseWriter, _ *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# HELP agentledger_decisions_total Hook events decided and recorded, by AARTS decision.")
	fmt.Fprintln(w, "# TYPE agentledger_decisions_total counter")
	for _, d := range []string{"allow", "ask", "deny"} {
		fmt.Fprintf(w, "agentledger_decisions_total{decision=%q} %d\n", d, m.byDecision[d])
	}
	fmt.Fprintln(w, "# HELP agentledger_decision_seconds Time to decide and record one hook event.")
	fmt.Fprintln(w, "# TYPE agentledger_decision_seconds histogram")
	for i, b := range latencyBuckets {
		fmt.Fprintf(w, "agentledger_decision_seconds_bucket{le=\"%g\"} %d\n", b, m.buckets[i])
	}
	fmt.Fprintf(w, "agentledger_decision_seconds_bucket{le=\"+Inf\"} %d\n", m.count)
	fmt.Fprintf(w, "agentledger_decision_seconds_sum %g\n", m.sum)
	fmt.Fprintf(w, "agentledger_decision_seconds_count %d\n", m.count)
	fmt.Fprintln(w, "# HELP agentledger_append_errors_total Decisions that could not be recorded.")
	fmt.Fprintln(w, "# TYPE agentledger_append_errors_total counter")
	fmt.Fprintf(w, "agentledger_append_errors_total %d\n", m.appendErrors.Load())
}
