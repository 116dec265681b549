package fleet

import (
	"fmt"
	"io"
	"strconv"
)

// WriteMetrics writes the fleet's metrics in the Prometheus text format:
// the partitions this engine owns (one series per partition, so a
// dashboard sees every partition's owner), lease moves, fences that
// stopped a write, and the latency of forwarded calls.
func (m *Member) WriteMetrics(w io.Writer) {
	owned := m.Owned()
	fmt.Fprintln(w, "# HELP agentledger_fleet_partition_owned 1 for each partition this engine owns now.")
	fmt.Fprintln(w, "# TYPE agentledger_fleet_partition_owned gauge")
	for _, p := range owned {
		fmt.Fprintf(w, "agentledger_fleet_partition_owned{engine=%q,partition=\"%d\"} 1\n", m.cfg.ID, p)
	}
	fmt.Fprintln(w, "# HELP agentledger_fleet_partitions_owned Partitions this engine owns now, of agentledger_fleet_partitions.")
	fmt.Fprintln(w, "# TYPE agentledger_fleet_partitions_owned gauge")
	fmt.Fprintf(w, "agentledger_fleet_partitions_owned{engine=%q} %d\n", m.cfg.ID, len(owned))
	fmt.Fprintln(w, "# HELP agentledger_fleet_partitions Partitions the fleet's sessions hash into.")
	fmt.Fprintln(w, "# TYPE agentledger_fleet_partitions gauge")
	fmt.Fprintf(w, "agentledger_fleet_partitions{engine=%q} %d\n", m.cfg.ID, m.cfg.Partitions)
	fmt.Fprintln(w, "# HELP agentledger_fleet_lease_moves_total Leases this engine took, lost (expired, refused, fenced) and handed over.")
	fmt.Fprintln(w, "# TYPE agentledger_fleet_lease_moves_total counter")
	for _, c := range []struct {
		kind string
		n    int64
	}{{"took", m.took.Load()}, {"lost", m.lost.Load()}, {"handed_over", m.released.Load()}} {
		fmt.Fprintf(w, "agentledger_fleet_lease_moves_total{engine=%q,kind=%q} %d\n", m.cfg.ID, c.kind, c.n)
	}
	fmt.Fprintln(w, "# HELP agentledger_fleet_fenced_writes_total Writes the stream refused because another engine had fenced the partition.")
	fmt.Fprintln(w, "# TYPE agentledger_fleet_fenced_writes_total counter")
	fmt.Fprintf(w, "agentledger_fleet_fenced_writes_total{engine=%q} %d\n", m.cfg.ID, m.fenced.Load())
	fmt.Fprintln(w, "# HELP agentledger_fleet_refused_messages_total Fleet messages without a good MAC (another key, or not from an engine of the fleet), dropped.")
	fmt.Fprintln(w, "# TYPE agentledger_fleet_refused_messages_total counter")
	fmt.Fprintf(w, "agentledger_fleet_refused_messages_total{engine=%q} %d\n", m.cfg.ID, m.refused.Load())
	f := &m.forwards
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintln(w, "# HELP agentledger_fleet_forward_seconds Time to get a forwarded call answered by its partition's owner.")
	fmt.Fprintln(w, "# TYPE agentledger_fleet_forward_seconds histogram")
	var cum int64
	for i, b := range forwardBuckets {
		cum += f.buckets[i]
		fmt.Fprintf(w, "agentledger_fleet_forward_seconds_bucket{engine=%q,le=%q} %d\n", m.cfg.ID, strconv.FormatFloat(b.Seconds(), 'g', -1, 64), cum)
	}
	cum += f.buckets[len(forwardBuckets)]
	fmt.Fprintf(w, "agentledger_fleet_forward_seconds_bucket{engine=%q,le=\"+Inf\"} %d\n", m.cfg.ID, cum)
	fmt.Fprintf(w, "agentledger_fleet_forward_seconds_sum{engine=%q} %g\n", m.cfg.ID, f.sum.Seconds())
	fmt.Fprintf(w, "agentledger_fleet_forward_seconds_count{engine=%q} %d\n", m.cfg.ID, f.count)
	fmt.Fprintln(w, "# HELP agentledger_fleet_forward_retried_total Forwarded calls that needed more than one attempt (a partition moving).")
	fmt.Fprintln(w, "# TYPE agentledger_fleet_forward_retried_total counter")
	fmt.Fprintf(w, "agentledger_fleet_forward_retried_total{engine=%q} %d\n", m.cfg.ID, f.retried)
	fmt.Fprintln(w, "# HELP agentledger_fleet_forward_failed_total Forwarded calls no owner answered within the forward bound.")
	fmt.Fprintln(w, "# TYPE agentledger_fleet_forward_failed_total counter")
	fmt.Fprintf(w, "agentledger_fleet_forward_failed_total{engine=%q} %d\n", m.cfg.ID, f.failed.Load())
}
