// Package distribute shares an exact replay among worker processes through
// NATS JetStream: a coordinator puts one task per session on a work-queue
// stream, workers pull tasks, replay them and publish each session's
// report, and the coordinator folds the reports into the DiffReport one
// process would have written.
//
// Tasks are messages on REPLAY_TASKS (work-queue retention), on the
// subject agentledger.replay.tasks.<key>.<run>: <key> (TaskKey) names the
// candidate and what else makes a report — its policy digest, the input
// limits, whether recorded values are unsealed — so a worker set up
// otherwise never takes the task, and every worker set up alike pulls from
// one durable consumer, replay-<key>. A task that
// is not acknowledged within the ack wait (its worker died or hangs) is
// delivered again; one delivered MaxDeliver times without a report is
// reported by the coordinator as a faulty session, not retried forever.
// Reports are messages on REPLAY_RESULTS, on agentledger.replay.results.
// <run>, each with the message id <run>.<index>: a task run twice (its
// first worker died after publishing) is stored once, and the coordinator
// keeps the first report of each index.
package distribute

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// Stream and subject names.
const (
	TasksStream   = "REPLAY_TASKS"
	ResultsStream = "REPLAY_RESULTS"
	tasksPrefix   = "agentledger.replay.tasks."
	resultsPrefix = "agentledger.replay.results."
	// Headers of a task and of its report.
	hdrRun    = "Agentledger-Replay-Run"
	hdrIndex  = "Agentledger-Replay-Index"
	hdrSource = "Agentledger-Replay-Source"
	// hdrObject names the object of a task whose session is in the object
	// store.
	hdrObject = "Agentledger-Replay-Object"
	// ChainsBucket holds the sessions too large for a task message.
	ChainsBucket = "REPLAY_CHAINS"
)

// Options tune the task queue.
type Options struct {
	// AckWait is how long a worker may hold a task without news before it
	// is delivered to another (a worker replaying a long session says it is
	// still at work every AckWait/3). Default DefaultAckWait.
	AckWait time.Duration
	// MaxDeliver is how many times a task is delivered before the
	// coordinator reports it as failed. Default DefaultMaxDeliver.
	MaxDeliver int
	// Limits bound the envelopes a worker reads.
	Limits ledger.Limits
	// InlineMax is the largest session sent in its task message; a larger
	// one goes to the object store REPLAY_CHAINS and its task names it.
	// Default DefaultInlineMax, below the server's default largest
	// message (1 MiB).
	InlineMax int
}

// Defaults of Options.
const (
	DefaultAckWait    = 30 * time.Second
	DefaultMaxDeliver = 5
	DefaultInlineMax  = 512 << 10
)

func (o Options) withDefaults() Options {
	if o.AckWait <= 0 {
		o.AckWait = DefaultAckWait
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = DefaultMaxDeliver
	}
	if o.InlineMax <= 0 {
		o.InlineMax = DefaultInlineMax
	}
	return o
}

// TaskKey names the tasks a worker replaying with d may take: 16 hex
// digits of a digest of everything besides the session that makes its
// report (the policy and manifest, the input limits, and whether sealed
// values are unsealed or replayed as recorded). A coordinator and its
// workers must be set up alike to meet.
func TaskKey(d *decide.Decider) string {
	unseal := d.Keys != nil || d.Sealer != nil
	sum := sha256.Sum256([]byte(fmt.Sprintf("policy %s\nmax-bytes %d\nmax-depth %d\nunseal %t\n", d.Policy.Digest(), d.Limits.Bytes(), d.Limits.Depth(), unseal)))
	return hex.EncodeToString(sum[:8])
}

func consumerName(key string) string { return "replay-" + key }

// streams creates (or finds) the task and result streams.
func streams(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, jetstream.Stream, error) {
	tasks, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: TasksStream, Subjects: []string{tasksPrefix + ">"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute, MaxAge: 7 * 24 * time.Hour,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("task stream: %w", err)
	}
	results, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: ResultsStream, Subjects: []string{resultsPrefix + ">"}, Retention: jetstream.LimitsPolicy,
		Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute, MaxAge: 7 * 24 * time.Hour,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("result stream: %w", err)
	}
	return tasks, results, nil
}

// consumer creates (or finds) the durable consumer the workers of one
// task key share.
func consumer(ctx context.Context, tasks jetstream.Stream, key string, o Options) (jetstream.Consumer, error) {
	c, err := tasks.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: consumerName(key), FilterSubject: tasksPrefix + key + ".>",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: o.AckWait, MaxDeliver: o.MaxDeliver, MaxAckPending: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("task consumer: %w", err)
	}
	return c, nil
}

// chainStore creates (or finds) the object store of large sessions.
func chainStore(ctx context.Context, js jetstream.JetStream) (jetstream.ObjectStore, error) {
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: ChainsBucket, Storage: jetstream.FileStorage, TTL: 7 * 24 * time.Hour})
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", ChainsBucket, err)
	}
	return obs, nil
}

// taskBody is the NDJSON bundle of one chain, as a worker reads it back.
func taskBody(c replay.Chain) ([]byte, error) {
	var buf bytes.Buffer
	for _, e := range c.Envelopes {
		buf.Write(bytes.TrimSpace(e.Bytes()))
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// indexOf reads a message's task index header.
func indexOf(h nats.Header) (int, error) {
	i, err := strconv.Atoi(h.Get(hdrIndex))
	if err != nil || i < 0 {
		return 0, errors.New("no task index")
	}
	return i, nil
}
