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

// Worker replays the tasks of one candidate (its Decider's policy) until
// its context ends.
type Worker struct {
	JS      jetstream.JetStream
	Decider *decide.Decider
	Options Options
	// Done, when set, is called after each task is reported and
	// acknowledged.
	Done func(run string, index int)
}

// Run pulls and replays tasks until ctx ends, which is not an error.
func (w *Worker) Run(ctx context.Context) error {
	o := w.Options.withDefaults()
	tasks, _, err := streams(ctx, w.JS)
	if err != nil {
		return err
	}
	c, err := consumer(ctx, tasks, w.Decider.Policy.Digest(), o)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		batch, err := c.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("fetch a task: %w", err)
		}
		for msg := range batch.Messages() {
			if err := w.task(ctx, msg, o); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
			return fmt.Errorf("fetch a task: %w", err)
		}
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
	if err != nil {
		return msg.Nak()
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
		return fmt.Errorf("publish the report of %s task %d: %w", run, index, err)
	}
	if err := msg.DoubleAck(ctx); err != nil {
		return fmt.Errorf("acknowledge %s task %d: %w", run, index, err)
	}
	if w.Done != nil {
		w.Done(run, index)
	}
	return nil
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
