package distribute

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/internal/natstest"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/replay"
)

const fixtures = "../../fixtures"

func connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return natstest.Client(t, url)
}

func candidate(t testing.TB, manifestName string) *decide.Decider {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtures, "manifests", manifestName))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(context.Background(), "", m)
	if err != nil {
		t.Fatal(err)
	}
	return decide.NewDecider(p)
}

// report renders reports as the replay command writes them (JSON).
func report(t testing.TB, rs []*replay.SessionReport, digest string) []byte {
	t.Helper()
	rep := replay.NewReport(rs, digest)
	if err := rep.ApplyGate(replay.FailOnNone, nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := replay.Render(&buf, "json", rep); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDistributedReplayIsTheSameReport: the coding-agent recordings (with a
// faulty one added) replayed with a looser candidate by three workers, one
// of which dies holding a task, give the DiffReport replay exact gives in
// one process, byte for byte; the dead worker's task is delivered again.
// Again with sessions over 2 KiB sent through the object store, which the
// run leaves empty.
func TestDistributedReplayIsTheSameReport(t *testing.T) {
	t.Run("in messages", func(t *testing.T) { sameReport(t, Options{AckWait: 2 * time.Second, MaxDeliver: 5}) })
	t.Run("object store", func(t *testing.T) { sameReport(t, Options{AckWait: 2 * time.Second, MaxDeliver: 5, InlineMax: 2048}) })
}

func sameReport(t *testing.T, o Options) {
	chains, err := replay.ReadBundles([]string{filepath.Join(fixtures, "sessions", "coding-agent")}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// A faulty chain: a session whose middle was cut.
	var cut bytes.Buffer
	for i, e := range chains[0].Envelopes {
		if i != 1 {
			cut.Write(bytes.ReplaceAll(bytes.TrimSpace(e.Bytes()), []byte(chains[0].Key.Session), []byte("cut-"+chains[0].Key.Session)))
			cut.WriteByte('\n')
		}
	}
	faulty, err := replay.ReadBundle(&cut, "cut.ndjson", ledger.Limits{})
	if err != nil || len(faulty) != 1 || faulty[0].Fault == "" {
		t.Fatalf("the cut session should be faulty: %v %+v", err, faulty)
	}
	chains = append(chains, faulty...)
	d := candidate(t, "coding-agent-loose.json")
	local, err := replay.RunExact(context.Background(), replay.Chains(chains), func(ledger.SessionKey) (*decide.Decider, error) { return d, nil }, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := report(t, local, d.Policy.Digest())
	if bytes.Contains(want, []byte(`"changed_sessions": 0`)) || !bytes.Contains(want, []byte(`"faulty_sessions": 1`)) {
		t.Fatalf("the local report shows no change or no faulty session: the test shows nothing\n%.600s", want)
	}

	url := natstest.JetStream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A worker that dies holding a task: it takes one and its connection
	// goes, with no acknowledgement.
	_, js0 := connect(t, url)
	tasks, _, err := streams(ctx, js0)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := consumer(ctx, tasks, TaskKey(d), o)
	if err != nil {
		t.Fatal(err)
	}
	var held atomic.Bool
	dying, jsDying := connect(t, url)
	go func() {
		for !held.Load() && ctx.Err() == nil {
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
			if err != nil {
				continue
			}
			for m := range batch.Messages() {
				// Before it dies it publishes, under the run's subject,
				// a report of another session at its task's index and one
				// of an index no task has: neither counts.
				run, idx := m.Headers().Get(hdrRun), m.Headers().Get(hdrIndex)
				for _, i := range []string{idx, "9999"} {
					forged, _ := json.Marshal(&replay.SessionReport{TenantID: "default", SessionID: "not-this-one", Mode: replay.ModeExact, Identical: true, Diffs: []replay.Diff{}})
					out := &nats.Msg{Subject: resultsPrefix + run, Data: forged, Header: nats.Header{}}
					out.Header.Set(hdrIndex, i)
					if _, err := jsDying.PublishMsg(ctx, out); err != nil {
						t.Error(err)
					}
				}
				held.Store(true)
				dying.Close() // killed mid-task
			}
		}
	}()
	var wg sync.WaitGroup
	var done atomic.Int64
	for range 3 {
		_, js := connect(t, url)
		w := &Worker{JS: js, Decider: candidate(t, "coding-agent-loose.json"), Options: o, Done: func(string, int) { done.Add(1) }}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Let the dying worker take its task first.
			for !held.Load() && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			if err := w.Run(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	_, js := connect(t, url)
	var progress atomic.Int64
	co := &Coordinator{JS: js, Key: TaskKey(d), Options: o, Progress: func(n, _ int) { progress.Store(int64(n)) }}
	got, err := co.Run(ctx, replay.Chains(chains))
	// The last report may be in before its worker's acknowledgement.
	for i := 0; i < 500 && done.Load() < int64(len(chains)-1); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !held.Load() {
		t.Fatal("the dying worker never held a task")
	}
	if progress.Load() != int64(len(chains)) {
		t.Errorf("progress ended at %d of %d", progress.Load(), len(chains))
	}
	if n := done.Load(); n != int64(len(chains)-1) {
		t.Errorf("the workers reported %d tasks, want %d (every session but the faulty one, the dead worker's once)", n, len(chains)-1)
	}
	if distributed := report(t, got, d.Policy.Digest()); !bytes.Equal(distributed, want) {
		t.Fatalf("the distributed report differs from the local one:\n%s\nwant\n%s", distributed, want)
	}
	if o.InlineMax > 0 {
		obs, err := chainStore(context.Background(), js)
		if err != nil {
			t.Fatal(err)
		}
		if left, err := obs.List(context.Background()); !errors.Is(err, jetstream.ErrNoObjectsFound) {
			t.Errorf("the object store holds %d sessions after the run: %v", len(left), err)
		}
		big := 0
		for _, c := range chains {
			if body, _ := taskBody(c); len(body) > o.InlineMax {
				big++
			}
		}
		if big == 0 {
			t.Fatal("no session went through the object store: the test shows nothing")
		}
	}
}

// TestFailingTaskIsReported: a task no worker can finish (every delivery
// refused) is delivered MaxDeliver times, then reported as a faulty
// session, not retried forever.
func TestFailingTaskIsReported(t *testing.T) {
	chains, err := replay.ReadBundles([]string{filepath.Join(fixtures, "sessions", "coding-agent")}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	chains = chains[:2]
	d := candidate(t, "coding-agent.json")
	url := natstest.JetStream(t)
	o := Options{AckWait: time.Second, MaxDeliver: 2}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, js := connect(t, url)
	tasks, _, err := streams(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := consumer(ctx, tasks, TaskKey(d), o)
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int64
	go func() {
		for ctx.Err() == nil {
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
			if err != nil {
				continue
			}
			for m := range batch.Messages() {
				refused.Add(1)
				_ = m.Nak() // a worker that fails on every task
			}
		}
	}()
	co := &Coordinator{JS: js, Key: TaskKey(d), Options: o}
	got, err := co.Run(ctx, replay.Chains(chains))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d reports, want 2", len(got))
	}
	for _, r := range got {
		if !strings.Contains(r.Fault, "delivered 2 times without a report") || r.SessionID == "" {
			t.Errorf("%s/%s: fault %q", r.TenantID, r.SessionID, r.Fault)
		}
	}
	if n := refused.Load(); n != 4 {
		t.Errorf("%d deliveries, want 2 per task", n)
	}
	if info, err := tasks.Info(ctx); err != nil || info.State.Msgs != 0 {
		t.Errorf("failed tasks left on the queue: %v %+v", err, info)
	}
}
