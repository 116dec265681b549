package main

import (
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/replay"
	"github.com/agentledger/agentledger/replay/distribute"
)

// queueFlags are the flags of the task queue both sides of a distributed
// replay share.
func queueFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "ack-wait", Value: distribute.DefaultAckWait, Usage: "a task whose worker gives no news for this `DURATION` goes to another worker"},
		&cli.IntFlag{Name: "max-deliver", Value: distribute.DefaultMaxDeliver, Usage: "a task delivered this many `TIMES` without a report is reported as a faulty session"},
	}
}

// queue connects to the NATS server of --nats, where the task queue is.
func queue(c *cli.Context, what string) (jetstream.JetStream, func(), error) {
	url := cmdline.Resolve(c, cmdline.FlagNATS)
	if url == "" {
		return nil, nil, cmdline.Usage(fmt.Errorf("%s needs --nats URL: the JetStream server that holds the task queue", what))
	}
	nc, err := nats.Connect(url, nats.Name("agentledger replay"))
	if err != nil {
		return nil, nil, cmdline.Unavailable(fmt.Errorf("--nats: %w", err))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, cmdline.Unavailable(err)
	}
	return js, nc.Close, nil
}

func queueOptions(c *cli.Context, d *decide.Decider) distribute.Options {
	return distribute.Options{AckWait: c.Duration("ack-wait"), MaxDeliver: c.Int("max-deliver"), Limits: d.Limits}
}

// runDistributed replays src on the workers of the task queue.
func (a *app) runDistributed(c *cli.Context, src replay.Source, d *decide.Decider) ([]*replay.SessionReport, error) {
	js, closeJS, err := queue(c, "--distribute")
	if err != nil {
		return nil, err
	}
	defer closeJS()
	progress := cmdline.NewProgress(a.stderr, "replay")
	progress.Unit = "sessions"
	defer progress.Done()
	var mu sync.Mutex
	co := &distribute.Coordinator{JS: js, Key: distribute.TaskKey(d), Options: queueOptions(c, d), Progress: func(done, total int) {
		mu.Lock()
		progress.Total = uint64(total)
		progress.Update(uint64(done))
		mu.Unlock()
	}}
	return co.Run(c.Context, src)
}

// worker is `replay worker`: it replays the tasks of its candidate until
// interrupted.
func (a *app) worker(c *cli.Context) error {
	if c.NArg() > 0 {
		return cmdline.Usage(errors.New("worker takes no arguments"))
	}
	defer replay.BatchGC()()
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	p, err := cmdline.LoadPolicy(c.Context, c.StringSlice("policy"), c.String("manifest"))
	if err != nil {
		return err
	}
	keys, err := keyStore(c)
	if err != nil {
		return err
	}
	d := decide.NewDecider(p)
	d.Limits, d.Keys = lim, keys
	js, closeJS, err := queue(c, "replay worker")
	if err != nil {
		return err
	}
	defer closeJS()
	done := 0
	w := &distribute.Worker{JS: js, Decider: d, Options: queueOptions(c, d), Done: func(string, int) { done++ },
		Warn: func(err error) { fmt.Fprintf(a.stderr, "replay worker: %v\n", err) }}
	fmt.Fprintf(a.stderr, "replay worker: replaying the tasks of policy %s (manifest %s), task key %s\n", p.Digest()[:12], p.Manifest().Name, distribute.TaskKey(d))
	err = w.Run(c.Context)
	fmt.Fprintf(a.stderr, "replay worker: %d sessions replayed\n", done)
	if err != nil {
		return cmdline.Unavailable(err)
	}
	return nil
}

// workerCommand is `worker`.
func workerCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "worker",
		Usage:     "replay the tasks `replay exact --distribute` puts on the task queue of --nats, until interrupted",
		ArgsUsage: " ",
		Description: "A worker takes only the tasks of a run set up as it is: the same --policy, --manifest and\n" +
			"input limits, and --keys given or not alike. Start as many as there are cores to spare, on any\n" +
			"machine that reaches --nats; one that dies has its task delivered to another after --ack-wait.",
		Flags: append([]cli.Flag{
			cmdline.PolicyFlag(),
			&cli.StringFlag{Name: "manifest", Usage: "capability manifest `FILE` (default: the built-in manifest)"},
			&cli.StringFlag{Name: "keys", Usage: "sealing key store `DIR` that unseals recorded values"},
		}, queueFlags()...),
		Action: a.worker,
	})
}
