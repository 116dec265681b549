package distribute

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentledger/agentledger/replay"
)

// Coordinator enqueues the sessions of one replay run and collects their
// reports.
type Coordinator struct {
	JS jetstream.JetStream
	// Key is the run's TaskKey: only workers set up alike take its tasks.
	Key     string
	Options Options
	// Progress, when set, is called as reports come in.
	Progress func(done, total int)
}

// collected is what a run has gathered: each task's report by index.
type collected struct {
	mu      sync.Mutex
	reports map[int]*replay.SessionReport
	tasks   map[uint64]int        // task stream sequence → index
	chains  map[int]replay.Chain  // index → its session, key only
	failed  map[uint64]int        // max-delivery advisories (stream seq → deliveries) not yet matched to a task
	changed chan struct{}         // a report or a failure came in
	bad     error                 // a report that did not read
	each    func(done, total int) // progress
	total   int
	obs     jetstream.ObjectStore // where large sessions go, once one has
	// pending are the reports read that are not yet matched to their task
	// (a report may come before its task's publication is acknowledged);
	// enqueued is set once every task is out.
	pending  map[int][]*replay.SessionReport
	enqueued bool
}

func (c *collected) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Run replays every chain src yields on the workers and returns their
// reports, as replay.RunExact does in one process (NewReport orders them).
// A faulty chain is reported here and not sent.
func (co *Coordinator) Run(ctx context.Context, src replay.Source) ([]*replay.SessionReport, error) {
	o := co.Options.withDefaults()
	tasks, results, err := streams(ctx, co.JS)
	if err != nil {
		return nil, err
	}
	if _, err := consumer(ctx, tasks, co.Key, o); err != nil {
		return nil, err
	}
	run := nuid.Next()
	// Whatever happens, the run's tasks leave the queue with it.
	defer tasks.Purge(context.WithoutCancel(ctx), jetstream.WithPurgeSubject(tasksPrefix+co.Key+"."+run))
	col := &collected{reports: map[int]*replay.SessionReport{}, tasks: map[uint64]int{}, chains: map[int]replay.Chain{},
		failed: map[uint64]int{}, changed: make(chan struct{}, 1), each: co.Progress, pending: map[int][]*replay.SessionReport{}}
	defer results.Purge(context.WithoutCancel(ctx), jetstream.WithPurgeSubject(resultsPrefix+run))
	cons, err := results.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{resultsPrefix + run}})
	if err != nil {
		return nil, fmt.Errorf("read reports: %w", err)
	}
	cc, err := cons.Consume(col.report)
	if err != nil {
		return nil, fmt.Errorf("read reports: %w", err)
	}
	defer cc.Stop()
	adv, err := co.JS.Conn().Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+TasksStream+"."+consumerName(co.Key), col.maxDeliveries)
	if err != nil {
		return nil, fmt.Errorf("watch failing tasks: %w", err)
	}
	defer adv.Unsubscribe()
	objects, err := co.enqueue(ctx, run, src, col, o)
	defer func() {
		for _, name := range objects {
			_ = col.obs.Delete(context.WithoutCancel(ctx), name)
		}
	}()
	if err != nil {
		return nil, err
	}
	return col.wait(ctx, tasks)
}

// enqueue publishes one task per chain of src, and returns the names of
// the objects it stored sessions too large for a message in.
func (co *Coordinator) enqueue(ctx context.Context, run string, src replay.Source, col *collected, o Options) (objects []string, err error) {
	index := 0
	for c, err := range src {
		if err != nil {
			return objects, err
		}
		i := index
		index++
		col.mu.Lock()
		col.total = index
		col.mu.Unlock()
		if c.Fault != "" {
			r, _ := replay.ReplayChain(ctx, c, nil) // a faulty chain is reported, not replayed
			col.mu.Lock()
			col.add(i, r)
			col.mu.Unlock()
			continue
		}
		body, err := taskBody(c)
		if err != nil {
			return objects, err
		}
		msg := &nats.Msg{Subject: tasksPrefix + co.Key + "." + run, Data: body, Header: nats.Header{}}
		if len(body) > o.InlineMax {
			if col.obs == nil {
				if col.obs, err = chainStore(ctx, co.JS); err != nil {
					return objects, err
				}
			}
			name := run + "." + strconv.Itoa(i)
			if _, err := col.obs.PutBytes(ctx, name, body); err != nil {
				return objects, fmt.Errorf("store %s: %w", c.Key, err)
			}
			objects = append(objects, name)
			msg.Data = nil
			msg.Header.Set(hdrObject, name)
		}
		msg.Header.Set(hdrRun, run)
		msg.Header.Set(hdrIndex, strconv.Itoa(i))
		msg.Header.Set(hdrSource, c.Source)
		msg.Header.Set(nats.MsgIdHdr, run+".task."+strconv.Itoa(i))
		ack, err := co.JS.PublishMsg(ctx, msg)
		if err != nil {
			return objects, fmt.Errorf("enqueue %s: %w", c.Key, err)
		}
		col.mu.Lock()
		col.tasks[ack.Sequence] = i
		col.chains[i] = replay.Chain{Key: c.Key, Source: c.Source}
		col.mu.Unlock()
	}
	col.mu.Lock()
	col.total, col.enqueued = index, true
	col.mu.Unlock()
	col.signal()
	return objects, nil
}

// report takes a worker's report of a task of this run; wait matches it
// to its task.
func (col *collected) report(m jetstream.Msg) {
	i, err := indexOf(m.Headers())
	var r replay.SessionReport
	if err == nil {
		err = json.Unmarshal(m.Data(), &r)
	}
	col.mu.Lock()
	if err != nil {
		col.bad = fmt.Errorf("a report that does not read: %w", err)
	} else {
		col.pending[i] = append(col.pending[i], &r)
	}
	col.mu.Unlock()
	col.signal()
}

// add keeps r as the report of index i, the first one only (col.mu held).
func (col *collected) add(i int, r *replay.SessionReport) {
	if _, dup := col.reports[i]; dup {
		return
	}
	col.reports[i] = r
	if col.each != nil {
		col.each(len(col.reports), col.total)
	}
}

// match takes the pending reports whose task is known: the first one that
// names the task's session and source is the task's report; others (a
// stray report, or one of another session under this run's subject) are
// dropped (col.mu held).
func (col *collected) match() {
	for i, rs := range col.pending {
		c, ok := col.chains[i]
		if !ok {
			if col.enqueued {
				delete(col.pending, i) // no such task
			}
			continue
		}
		delete(col.pending, i)
		for _, r := range rs {
			if r.TenantID == c.Key.Tenant && r.SessionID == c.Key.Session && r.Source == c.Source {
				col.add(i, r)
				break
			}
		}
	}
}

// maxDeliveries notes a task delivered MaxDeliver times.
func (col *collected) maxDeliveries(m *nats.Msg) {
	var a struct {
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries int    `json:"deliveries"`
	}
	if json.Unmarshal(m.Data, &a) != nil {
		return
	}
	col.mu.Lock()
	col.failed[a.StreamSeq] = a.Deliveries
	col.mu.Unlock()
	col.signal()
}

// wait returns every task's report once all are in; a task that failed
// MaxDeliver times is reported as a faulty session (and taken off the
// queue).
func (col *collected) wait(ctx context.Context, tasks jetstream.Stream) ([]*replay.SessionReport, error) {
	for {
		col.mu.Lock()
		col.match()
		for seq, n := range col.failed {
			i, ok := col.tasks[seq]
			if !ok {
				continue
			}
			delete(col.failed, seq)
			if _, done := col.reports[i]; !done {
				c := col.chains[i]
				col.reports[i] = &replay.SessionReport{TenantID: c.Key.Tenant, SessionID: c.Key.Session, Mode: replay.ModeExact, Diffs: []replay.Diff{}, Source: c.Source,
					Fault: fmt.Sprintf("no worker could replay it: delivered %d times without a report", n)}
				_ = tasks.DeleteMsg(ctx, seq)
			}
		}
		done, total, bad := len(col.reports), col.total, col.bad
		col.mu.Unlock()
		if bad != nil {
			return nil, bad
		}
		if done == total {
			break
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-col.changed:
		}
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	out := make([]*replay.SessionReport, 0, len(col.reports))
	for i := range col.total {
		out = append(out, col.reports[i])
	}
	return out, nil
}
