package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/internal/natstest"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
)

func openStreams(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open %d streams: %v", cfg.Streams, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fillStreams appends n envelopes to each of sessions sessions of tenant
// acme, concurrently, and returns the envelopes by session.
func fillStreams(t testing.TB, s *Store, sessions, n int) map[string][]*ledger.Envelope {
	t.Helper()
	ctx := context.Background()
	out := map[string][]*ledger.Envelope{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("s%02d", i)
			var evs []ledger.Event
			for j := range n {
				evs = append(evs, event("acme", id, j))
			}
			var envs []*ledger.Envelope
			var err error
			if i%2 == 0 {
				envs, err = s.AppendAll(ctx, evs) // atomic batches
			} else {
				for _, ev := range evs {
					var e *ledger.Envelope
					if e, err = s.Append(ctx, ev); err != nil {
						break
					}
					envs = append(envs, e)
				}
			}
			if err != nil {
				errs <- fmt.Errorf("session %s: %w", id, err)
				return
			}
			mu.Lock()
			out[id] = envs
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return out
}

// TestStreamsSpreadSessions: a ledger of four streams takes sessions
// appended concurrently, each in the stream its hash names; every
// whole-ledger read sees every stream as one ledger, in the order a
// one-stream ledger gives; session reads go to the session's stream.
func TestStreamsSpreadSessions(t *testing.T) {
	ctx := context.Background()
	url := natstest.JetStream(t)
	s := openStreams(t, Config{URL: url, Streams: 4})
	if got, want := s.Streams(), []string{"LEDGER-0", "LEDGER-1", "LEDGER-2", "LEDGER-3"}; !slices.Equal(got, want) {
		t.Fatalf("streams: got %v, want %v", got, want)
	}
	const sessions, n = 48, 4
	chains := fillStreams(t, s, sessions, n)

	_, js := natstest.Client(t, url)
	per := map[string]int{}
	for i, name := range s.Streams() {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(">"))
		if err != nil {
			t.Fatal(err)
		}
		md := info.Config.Metadata
		if md[MetaLedger] != "LEDGER" || md[MetaStreams] != "4" || md[MetaIndex] != fmt.Sprint(i) {
			t.Errorf("stream %s records layout %v", name, md)
		}
		if want := []string{"ledger." + fmt.Sprint(i) + ".>"}; !slices.Equal(info.Config.Subjects, want) {
			t.Errorf("stream %s: subjects %v, want %v", name, info.Config.Subjects, want)
		}
		for subj := range info.State.Subjects {
			k, err := s.keyOf(subj)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.StreamOf(k); got != name {
				t.Errorf("%s is in stream %s, its hash names %s", k, name, got)
			}
			per[name]++
		}
	}
	if len(per) < 3 {
		t.Errorf("sessions landed on %d streams (%v), want them spread", len(per), per)
	}

	infos, err := s.Sessions(ctx, Filter{})
	if err != nil || len(infos) != sessions {
		t.Fatalf("sessions: %d, %v; want %d", len(infos), err, sessions)
	}
	for i, in := range infos {
		if want := fmt.Sprintf("s%02d", i); in.Session != want || in.Count != n || in.HeadHash != chains[want][n-1].Hash() || in.Stream != s.StreamOf(in.Key()) {
			t.Errorf("sessions[%d]: got %+v, want session %s at head %s", i, in, want, chains[want][n-1].Hash())
		}
	}
	one, err := s.Sessions(ctx, Filter{Tenant: "acme", Session: "s07"})
	if err != nil || len(one) != 1 || one[0].Subject != s.Subject(ledger.SessionKey{Tenant: "acme", Session: "s07"}) {
		t.Errorf("one session: %+v %v", one, err)
	}
	if tenants, err := s.Tenants(ctx, "s11"); err != nil || !slices.Equal(tenants, []string{"acme"}) {
		t.Errorf("tenants of s11: %v %v", tenants, err)
	}
	r, err := s.Verify(ctx, Filter{}, ledger.Deep, nil)
	if err != nil || !r.OK() || r.Envelopes != sessions*n || len(r.Sessions) != sessions {
		t.Fatalf("verify: %v %v (%d envelopes, %d sessions)", err, r.Err(), r.Envelopes, len(r.Sessions))
	}
	var read int
	if err := s.ReadAll(ctx, Filter{Tenant: "acme"}, func(m Msg) error {
		if m.Stream == "" || !strings.HasPrefix(m.Where(), "stream "+m.Stream+" seq ") {
			t.Errorf("a message of a ledger of several streams names no stream: %q", m.Where())
		}
		read++
		return nil
	}); err != nil || read != sessions*n {
		t.Fatalf("read all: %d messages, %v", read, err)
	}
	k := ledger.SessionKey{Tenant: "acme", Session: "s05"}
	if h, err := s.ChainHead(ctx, k); err != nil || h.Hash != chains["s05"][n-1].Hash() {
		t.Errorf("chain head of %s: %v %v", k, h, err)
	}
	if hash, ok, err := s.HashAt(ctx, k, 2); err != nil || !ok || hash != chains["s05"][2].Hash() {
		t.Errorf("hash at %s seq 2: %s %v %v", k, hash, ok, err)
	}
	// A stream sequence alone names no message here.
	if _, err := s.Get(ctx, 1); !errors.Is(err, ErrLayout) {
		t.Errorf("Get without a stream: %v, want ErrLayout", err)
	}
	if err := s.ReadStream(ctx, 0, func(Msg) error { return nil }); !errors.Is(err, ErrLayout) {
		t.Errorf("ReadStream without a stream: %v, want ErrLayout", err)
	}
	if b, err := s.GetAt(ctx, s.StreamOf(k), 1); err != nil || len(b) == 0 {
		t.Errorf("GetAt: %v", err)
	}
}

// TestStreamsLayoutIsRecorded: a reader given only the ledger's name finds
// its streams; another number of streams, a stream of the ledger named as
// a ledger, and a layout clash are refused; bad numbers and names too.
func TestStreamsLayoutIsRecorded(t *testing.T) {
	ctx := context.Background()
	url := natstest.JetStream(t)
	w := openStreams(t, Config{URL: url, Streams: 3})
	fillStreams(t, w, 6, 2)

	r := openStreams(t, Config{URL: url})
	if got := r.Streams(); len(got) != 3 {
		t.Fatalf("a reader given only the ledger's name opened %v", got)
	}
	if infos, err := r.Sessions(ctx, Filter{}); err != nil || len(infos) != 6 {
		t.Fatalf("the reader's sessions: %d %v", len(infos), err)
	}
	for name, cfg := range map[string]Config{
		"another number":     {URL: url, Streams: 4},
		"one stream":         {URL: url, Streams: 1},
		"a stream as ledger": {URL: url, Stream: "LEDGER-1"},
	} {
		if _, err := Open(ctx, cfg); !errors.Is(err, ErrLayout) {
			t.Errorf("%s: got %v, want ErrLayout", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	// A one-stream ledger is not spread later, nor is a stream of its
	// name taken into a ledger of several.
	openStreams(t, Config{URL: url, Stream: "SOLO"})
	if _, err := Open(ctx, Config{URL: url, Stream: "SOLO", Streams: 2}); !errors.Is(err, ErrLayout) {
		t.Errorf("spreading a one-stream ledger: %v, want ErrLayout", err)
	}
	openStreams(t, Config{URL: url, Stream: "PLAIN-0"})
	if _, err := Open(ctx, Config{URL: url, Stream: "PLAIN", Streams: 2}); !errors.Is(err, ErrLayout) {
		t.Errorf("a ledger of several over a one-stream ledger's stream: %v, want ErrLayout", err)
	}
	for name, cfg := range map[string]Config{
		"negative":    {URL: url, Streams: -1},
		"too many":    {URL: url, Streams: MaxStreams + 1},
		"long name":   {URL: url, Stream: strings.Repeat("L", 62), Streams: 200},
		"embedded":    {DataDir: t.TempDir(), Streams: 2},
		"bad name":    {URL: url, Stream: "a.b", Streams: 2},
		"bad name 2":  {URL: url, Stream: "a b"},
		"long name 2": {URL: url, Stream: strings.Repeat("L", 65)},
	} {
		if s, err := Open(ctx, cfg); err == nil {
			s.Close()
			t.Errorf("%s: opened", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	// A one-stream ledger stays as it was: no layout in its metadata.
	_, js := natstest.Client(t, url)
	st, err := js.Stream(ctx, "SOLO")
	if err != nil {
		t.Fatal(err)
	}
	if md := st.CachedInfo().Config.Metadata; md[MetaLedger] != "" || md[MetaStreams] != "" {
		t.Errorf("a one-stream ledger records a layout: %v", md)
	}
}

// TestStreamsTamperAndRoundTrip: tampering in any one stream is found by
// verification, which names the stream; an export is the same bundle
// whatever the number of streams, and imports into any.
func TestStreamsTamperAndRoundTrip(t *testing.T) {
	ctx := context.Background()
	url := natstest.JetStream(t)
	s := openStreams(t, Config{URL: url, Streams: 4})
	chains := fillStreams(t, s, 16, 3)

	export := func(s *Store) []byte {
		var b bytes.Buffer
		if err := s.Export(ctx, Filter{}, ledger.NewBundleWriter(&b), nil); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	bundle := export(s)
	loaded, rep, err := ledger.LoadBundle(bytes.NewReader(bundle), ledger.Limits{})
	if err != nil || !rep.OK() || len(loaded) != 16 {
		t.Fatalf("the export: %d sessions, %v %v", len(loaded), err, rep.Err())
	}
	for _, into := range []Config{{URL: url, Stream: "ONE"}, {URL: url, Stream: "THREE", Streams: 3}} {
		d := openStreams(t, into)
		res, err := d.Import(ctx, loaded, nil)
		if err != nil || res.Appended != 16*3 {
			t.Fatalf("import into %d streams: %+v %v", into.Streams, res, err)
		}
		if got := export(d); !bytes.Equal(got, bundle) {
			t.Errorf("export of the import into %s (%d streams) differs from the export it came from", into.Stream, len(d.Streams()))
		}
	}

	// Tamper with one session in each stream: a doctored copy of its seq 1
	// stored behind the ledger's back.
	// A JetStream publish returns once the stream has stored the message
	// (a core publish and Flush only reach the server, which stores it
	// asynchronously).
	_, js := natstest.Client(t, url)
	tampered := map[string]string{} // stream -> session
	for id, envs := range chains {
		k := envs[0].Key()
		if _, done := tampered[s.StreamOf(k)]; done {
			continue
		}
		tampered[s.StreamOf(k)] = id
		doctored := bytes.Replace(envs[1].Bytes(), []byte("echo 1"), []byte("echo 9"), 1)
		if _, err := js.Publish(ctx, s.Subject(k), doctored); err != nil {
			t.Fatal(err)
		}
	}
	if len(tampered) != 4 {
		t.Fatalf("sessions in %d streams, want all 4", len(tampered))
	}
	r, err := s.Verify(ctx, Filter{}, ledger.Fast, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, f := range r.Faults {
		if f.Stream == "" || tampered[f.Stream] != f.Session || !strings.Contains(f.Error(), "[stream "+f.Stream+" seq ") {
			t.Errorf("fault %v (stream %q) names no tampered session of its stream", f, f.Stream)
		}
		found[f.Stream] = true
	}
	if len(found) != 4 {
		t.Errorf("faults in %d streams, want every stream's tampering: %v", len(found), r.Faults)
	}
}

// TestStreamsCheckpointEachStream: each stream has a log of its own, and
// a checkpoint of each names its stream; a stream rewritten wholesale is
// caught by its checkpoint while the others still hold.
func TestStreamsCheckpointEachStream(t *testing.T) {
	ctx := context.Background()
	url := natstest.JetStream(t)
	s := openStreams(t, Config{URL: url, Streams: 3})
	fillStreams(t, s, 12, 3)
	logs := s.LogsOf(true)
	var cps []*checkpoint.Checkpoint
	var total int64
	for i, l := range logs {
		if l.Stream != s.Streams()[i] {
			t.Fatalf("log %d is of stream %q", i, l.Stream)
		}
		if err := s.CatchUp(ctx, l); err != nil {
			t.Fatal(err)
		}
		cp, err := l.Checkpoint(s.StreamName())
		if err != nil {
			t.Fatal(err)
		}
		if got := checkpoint.StreamOf(cp.Origin); got != l.Stream {
			t.Errorf("checkpoint of stream %s names %s (%s)", l.Stream, got, cp.Origin)
		}
		for _, h := range cp.Heads {
			if got := s.StreamOf(ledger.SessionKey{Tenant: h.Tenant, Session: h.Session}); got != l.Stream {
				t.Errorf("checkpoint of %s lists %s/%s of stream %s", l.Stream, h.Tenant, h.Session, got)
			}
		}
		if store := LogFor(logs, cp.Origin); store != l {
			t.Errorf("LogFor(%s) is not the log of %s", cp.Origin, l.Stream)
		}
		total += cp.Size
		cps = append(cps, cp)
	}
	if total != 12*3 {
		t.Fatalf("the logs hold %d envelopes, want %d", total, 12*3)
	}
	if f := checkpoint.AllConsistent(cps, []string{"a", "b", "c"}); len(f) != 0 {
		t.Errorf("checkpoints of three streams held to each other: %v", f)
	}
	if _, err := s.LogOf("LEDGER", false); !errors.Is(err, ErrLayout) {
		t.Errorf("the log of a stream the ledger does not have: %v", err)
	}

	// Rewrite stream 1: read it, delete it, store a doctored copy.
	_, js := natstest.Client(t, url)
	victim := s.shards[1]
	var msgs []*nats.Msg
	if err := s.ReadStreamOf(ctx, victim.name, 0, func(m Msg) error {
		data := bytes.Clone(m.Data)
		if len(msgs) == 0 {
			data = bytes.Replace(data, []byte("echo 0"), []byte("echo 8"), 1)
		}
		msgs = append(msgs, &nats.Msg{Subject: m.Subject, Data: data})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cfg := s.streamConfig(victim)
	if err := js.DeleteStream(ctx, victim.name); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	r := openStreams(t, Config{URL: url})
	for i, cp := range cps {
		l, err := r.LogOf(checkpoint.StreamOf(cp.Origin), false)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.CatchUp(ctx, l); err != nil {
			t.Fatal(err)
		}
		f := cp.CheckLog(&l.Log)
		switch {
		case i == 1 && (f == nil || f.Kind != checkpoint.LogRewritten):
			t.Errorf("the rewritten stream %s: %v, want log_rewritten", l.Stream, f)
		case i != 1 && f != nil:
			t.Errorf("stream %s, untouched: %v", l.Stream, f)
		}
	}
}

// TestStreamsFences: every stream carries the fence subjects; a partition
// is fenced in each stream that can hold its sessions, and an append
// asserts the fence in its session's own stream, so a fence moved in one
// stream refuses the old owner there and only there.
func TestStreamsFences(t *testing.T) {
	ctx := context.Background()
	url := natstest.JetStream(t)
	const partitions = 6 // with 4 streams: each partition's sessions are in 2 of them
	old := openStreams(t, Config{URL: url, Streams: 4, Fences: true})
	next := openStreams(t, Config{URL: url})
	for i := range 200 {
		k := ledger.SessionKey{Tenant: "acme", Session: fmt.Sprint("k", i)}
		p := k.Partition(partitions)
		if subjs := old.FenceSubjects(p, partitions); len(subjs) != 2 || !slices.Contains(subjs, old.FenceSubjectFor(k, p)) {
			t.Fatalf("partition %d is fenced on %v; %s's fence subject is %s", p, subjs, k, old.FenceSubjectFor(k, p))
		}
	}
	if got := old.FenceSubjects(1, 8); len(got) != 1 || got[0] != "ledger_fence.1.1" {
		t.Errorf("4 streams, 8 partitions: partition 1 is fenced on %v, want its one stream's", got)
	}
	// Two sessions of partition 0 in its two streams.
	var a, b ledger.SessionKey
	for i := 0; a.Session == "" || b.Session == ""; i++ {
		k := ledger.SessionKey{Tenant: "acme", Session: fmt.Sprint("f", i)}
		switch {
		case k.Partition(partitions) != 0:
		case a.Session == "":
			a = k
		case old.StreamOf(k) != old.StreamOf(a):
			b = k
		}
	}
	fences := map[string]Fence{}
	for _, subj := range old.FenceSubjects(0, partitions) {
		seq, err := old.PublishFence(ctx, subj, []byte(`{"engine":"old"}`))
		if err != nil {
			t.Fatal(err)
		}
		fences[subj] = Fence{Subject: subj, Seq: seq}
	}
	fencer := func(fs map[string]Fence) Fencer {
		return func(k ledger.SessionKey, _ int) (Fence, error) { return fs[old.FenceSubjectFor(k, 0)], nil }
	}
	if err := old.SetFencer(ctx, fencer(fences)); err != nil {
		t.Fatal(err)
	}
	pair := func(s *Store, k ledger.SessionKey) error {
		h, err := s.ChainHead(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		seq := int(h.Seq) + 1
		if h.IsEmpty() {
			seq = 0
		}
		envs, err := sealChain(h, drafts(t, event(k.Tenant, k.Session, seq), event(k.Tenant, k.Session, seq+1)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.AppendSealed(ctx, envs)
		return err
	}
	for _, k := range []ledger.SessionKey{a, b} {
		if err := pair(old, k); err != nil {
			t.Fatalf("the owner's pair in %s: %v", old.StreamOf(k), err)
		}
	}
	// The new owner fences the partition in a's stream only.
	moved, err := next.PublishFence(ctx, next.FenceSubjectFor(a, 0), []byte(`{"engine":"next"}`))
	if err != nil {
		t.Fatal(err)
	}
	err = pair(old, a)
	var fe *FencedError
	if !errors.As(err, &fe) || fe.Subject != old.FenceSubjectFor(a, 0) || fe.Now != moved {
		t.Fatalf("the fenced-out owner's pair in %s: %v, want ErrFenced on %s", old.StreamOf(a), err, old.FenceSubjectFor(a, 0))
	}
	if err := pair(old, b); err != nil {
		t.Errorf("a pair in %s, whose fence did not move: %v", old.StreamOf(b), err)
	}
	fs := map[string]Fence{next.FenceSubjectFor(a, 0): {Subject: next.FenceSubjectFor(a, 0), Seq: moved}}
	if err := next.SetFencer(ctx, func(k ledger.SessionKey, _ int) (Fence, error) { return fs[next.FenceSubjectFor(k, 0)], nil }); err != nil {
		t.Fatal(err)
	}
	if err := pair(next, a); err != nil {
		t.Errorf("the new owner's pair: %v", err)
	}
	// A fence named for another stream than the session's is refused.
	wrong := Fence{Subject: old.FenceSubjectFor(b, 0), Seq: fences[old.FenceSubjectFor(b, 0)].Seq}
	if err := old.SetFencer(ctx, func(ledger.SessionKey, int) (Fence, error) { return wrong, nil }); err != nil {
		t.Fatal(err)
	}
	if err := pair(old, a); err == nil {
		t.Error("a pair asserting another stream's fence was stored")
	}
	// Fences stay outside the ledger.
	recs, err := next.Fences(ctx)
	if err != nil || len(recs) != 3 {
		t.Fatalf("fences: %+v %v", recs, err)
	}
	r, err := next.Verify(ctx, Filter{}, ledger.Deep, nil)
	if err != nil || !r.OK() || r.Envelopes != 8 {
		t.Fatalf("verify: %v %v (%d envelopes)", err, r.Err(), r.Envelopes)
	}
}

// TestStreamsTail follows every stream at once.
func TestStreamsTail(t *testing.T) {
	ctx := context.Background()
	s := openStreams(t, Config{URL: natstest.JetStream(t), Streams: 3})
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got := make(chan Msg, 64)
	done := make(chan error, 1)
	go func() {
		done <- s.Tail(tctx, Filter{Tenant: "acme"}, 0, func(m Msg) error {
			select {
			case got <- Msg{Subject: m.Subject, Stream: m.Stream, StreamSeq: m.StreamSeq}:
			case <-tctx.Done():
			}
			return nil
		})
	}()
	// Tail delivers what comes after its consumers start: sessions are
	// appended until every stream has been seen.
	streams := map[string]int{}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := 0; len(streams) < 3; {
		select {
		case m := <-got:
			if !strings.HasPrefix(m.Subject, "ledger."+strings.TrimPrefix(m.Stream, "LEDGER-")+".") {
				t.Errorf("tail: %s is not a subject of stream %s", m.Subject, m.Stream)
			}
			streams[m.Stream]++
		case <-tick.C:
			if _, err := s.Append(ctx, event("acme", fmt.Sprint("t", i), 0)); err != nil {
				t.Fatal(err)
			}
			i++
		case <-tctx.Done():
			t.Fatalf("tail: %d streams seen (%v) before the timeout", len(streams), streams)
		}
	}
	if err := s.Tail(ctx, Filter{}, 5, func(Msg) error { return nil }); !errors.Is(err, ErrLayout) {
		t.Errorf("tail from a stream seq of no stream: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("tail: %v", err)
	}
}
