package distribute

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/replay"
)

// Worker replays the tasks of its Decider's task key (TaskKey) until its
// context ends.
type Worker struct {
	JS      jetstream.JetStream
	Decider *decide.Decider
	Options Options
	// Done, when set, is called after each task is reported and
	// acknowledged.
	Done func(run string, index int)
	// Warn, when set, hears of a task that could not be reported or
	// acknowledged now (the server was away): the task is delivered again
	// and the worker goes on.
	Warn func(error)
}

// Run pulls and replays tasks until ctx ends, which is not an error. A
// server that does not answer for a while (a restart, a leader election, a
// consumer being updated) is waited for; one that fails for a minute on
// end is an error.
func (w *Worker) Run(ctx context.Context) error {
	o := w.Options.withDefaults()
	var c jetstream.Consumer
	var failingSince time.Time
	for ctx.Err() == nil {
		err := w.pull(ctx, &c, o)
		switch {
		case err == nil || ctx.Err() != nil:
			failingSince = time.Time{}
			continue
		case failingSince.IsZero():
			failingSince = time.Now()
		case time.Since(failingSince) > time.Minute:
			return err
		}
		w.warn(fmt.Errorf("%w (trying again)", err))
		c = nil // find the consumer again
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}

// pull takes one task from the consumer (found or created in *c first)
// and replays it; no task within a second is no error.
func (w *Worker) pull(ctx context.Context, c *jetstream.Consumer, o Options) error {
	if *c == nil {
		tasks, _, err := streams(ctx, w.JS)
		if err != nil {
			return err
		}
		if *c, err = consumer(ctx, tasks, TaskKey(w.Decider), o); err != nil {
			return err
		}
	}
	batch, err := (*c).Fetch(1, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		return fmt.Errorf("fetch a task: %w", err)
	}
	for msg := range batch.Messages() {
		if err := w.task(ctx, msg, o); err != nil {
			return err
		}
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
		return fmt.Errorf("fetch a task: %w", err)
	}
	return nil
}

// task replays one task and publishes its report, then acknowledges it.
// A task that cannot be read is left to be delivered again (and reported
// by the coordinator once it has been delivered MaxDeliver times).
func (w *Worker) task(ctx context.Context, msg jetstream.Msg, o Options) error {
	run := msg.Headers().Get(hdrRun)
	index, err := indexOf(msg.Headers())
	if err != nil || run == "" {
		return msg.Nak()
	}
	// Tell the server the task is at work while it runs.
	busy, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		t := time.NewTicker(o.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-busy.Done():
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	report, err := w.replay(ctx, msg, o)
	if err != nil || ctx.Err() != nil {
		return msg.Nak() // a cancelled replay is no report
	}
	body, err := json.Marshal(report)
	if err != nil {
		return msg.Nak()
	}
	out := &nats.Msg{Subject: resultsPrefix + run, Data: body, Header: nats.Header{}}
	out.Header.Set(hdrRun, run)
	out.Header.Set(hdrIndex, strconv.Itoa(index))
	out.Header.Set(nats.MsgIdHdr, run+"."+strconv.Itoa(index))
	if _, err := w.JS.PublishMsg(ctx, out); err != nil {
		w.warn(fmt.Errorf("publish the report of %s task %d (it will be delivered again): %w", run, index, err))
		_ = msg.Nak()
		return nil
	}
	if err := msg.DoubleAck(ctx); err != nil {
		// The report is in; a task delivered again is reported once.
		w.warn(fmt.Errorf("acknowledge %s task %d: %w", run, index, err))
		return nil
	}
	if w.Done != nil {
		w.Done(run, index)
	}
	return nil
}

func (w *Worker) warn(err error) {
	if w.Warn != nil {
		w.Warn(err)
	}
}

// replay reads a task's chain, verifying it as a bundle is verified, and
// replays it with the worker's candidate.
func (w *Worker) replay(ctx context.Context, msg jetstream.Msg, o Options) (*replay.SessionReport, error) {
	body := msg.Data()
	if name := msg.Headers().Get(hdrObject); name != "" {
		obs, err := chainStore(ctx, w.JS)
		if err != nil {
			return nil, err
		}
		if body, err = obs.GetBytes(ctx, name); err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
	chains, err := replay.ReadBundle(bytes.NewReader(body), msg.Headers().Get(hdrSource), o.Limits)
	if err != nil {
		return nil, err
	}
	if len(chains) != 1 {
		return nil, fmt.Errorf("a task holds %d sessions, want 1", len(chains))
	}
	return replay.ReplayChain(ctx, chains[0], func(ledger.SessionKey) (*decide.Decider, error) { return w.Decider, nil })
}
