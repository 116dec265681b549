package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentledger/agentledger/internal/natstest"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

const testTTL = 900 * time.Millisecond

var testKey = []byte("0123456789abcdef0123456789abcdef")

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// join starts a member on its own connection to url, answering partition
// requests with its id.
func join(t *testing.T, url, id string, partitions int) (*Member, *store.Store, *logLines) {
	t.Helper()
	return joinWith(t, store.Config{URL: url}, id, partitions)
}

// joinWith is join on a store opened with cfg.
func joinWith(t *testing.T, cfg store.Config, id string, partitions int) (*Member, *store.Store, *logLines) {
	t.Helper()
	st, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := &logLines{}
	m, err := Join(context.Background(), st, Config{ID: id, Partitions: partitions, LeaseTTL: testTTL, Log: log.add, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	m.Handle("who", func(context.Context, []byte) ([]byte, error) { return []byte(id), nil })
	if err := m.Start(func(_ context.Context, data []byte) ([]byte, error) { return []byte(id + ":" + string(data)), nil }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, st, log
}

// owners waits until every partition is owned by exactly one of ms, by
// its preferred (rendezvous) owner among them when settled is set, and
// returns each partition's owner.
func owners(t *testing.T, ms []*Member, partitions int, settled bool) map[int]string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := map[int]string{}
		twice := false
		for _, m := range ms {
			for _, p := range m.Owned() {
				twice = twice || got[p] != ""
				got[p] = m.ID()
			}
		}
		var ids []string
		for _, m := range ms {
			ids = append(ids, m.ID())
		}
		ok := !twice && len(got) == partitions
		for p := 0; ok && settled && p < partitions; p++ {
			ok = got[p] == preferred(p, ids)
		}
		if ok {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("partitions owned as %v (twice: %v), want each by one of %d members", got, twice, len(ms))
		}
	}
}

// TestLeasesSpreadMoveAndFence: three members share twelve partitions,
// each owned by one; a member that leaves hands its partitions over at
// once; a member whose connection dies loses its leases, which live
// members take after the TTL, each with a new fence.
func TestLeasesSpreadMoveAndFence(t *testing.T) {
	url := natstest.JetStream(t)
	const n = 12
	a, st, _ := join(t, url, "a", n)
	b, _, _ := join(t, url, "b", n)
	c, cst, clog := join(t, url, "c", n)
	before := owners(t, []*Member{a, b, c}, n, true)

	// Forwarding reaches the owner, from any member.
	for p := range n {
		k := keyIn(p, n)
		for _, from := range []*Member{a, b, c} {
			got, err := from.Forward(context.Background(), k, fmt.Sprintf("%s-%d", from.ID(), p), []byte("hi"))
			switch {
			case from.ID() == before[p]:
				if !errors.Is(err, ErrLocal) {
					t.Fatalf("partition %d from its owner %s: %q %v, want ErrLocal", p, from.ID(), got, err)
				}
			case err != nil || string(got) != before[p]+":hi":
				t.Fatalf("partition %d from %s: %q %v, want its owner %s", p, from.ID(), got, err, before[p])
			}
		}
	}
	if got, err := a.Ask(context.Background(), "who", nil, time.Second); err != nil || string(got) == "a" {
		t.Fatalf("ask: %q %v", got, err)
	}

	// b leaves: its partitions move at once, to a and c.
	fences := map[int]uint64{}
	for p := range n {
		fences[p], _ = st.LastFence(context.Background(), st.FenceSubject(p))
	}
	b.Close()
	after := owners(t, []*Member{a, c}, n, true)
	for p, o := range before {
		if o != "b" && after[p] != o {
			t.Fatalf("partition %d moved from %s to %s though its owner stayed", p, o, after[p])
		}
		if o == "b" {
			now, _ := st.LastFence(context.Background(), st.FenceSubject(p))
			if now <= fences[p] {
				t.Fatalf("partition %d moved from b to %s without a new fence", p, after[p])
			}
		}
	}

	// c's connection dies: it loses its leases (and says so), a takes
	// them when they expire.
	cOwned := c.Owned()
	cst.Close()
	final := owners(t, []*Member{a}, n, false)
	if len(final) != n {
		t.Fatalf("a owns %d partitions, want %d", len(final), n)
	}
	for deadline := time.Now().Add(10 * time.Second); len(c.Owned()) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("c still believes it owns %v after its connection died", c.Owned())
		}
	}
	if len(cOwned) > 0 && !strings.Contains(clog.String(), "lost partition") {
		t.Fatalf("c's log does not say it lost its partitions:\n%s", clog)
	}
	if _, err := c.Fence(keyIn(cOwned[0], n), 2); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("c's fence after losing: %v", err)
	}
}

// TestPartitionIsStable: the partition of a session is part of every
// fleet's layout; changing the function would move every session.
func TestPartitionIsStable(t *testing.T) {
	got := []int{Partition(ledger.SessionKey{Tenant: "default", Session: "s"}, 32),
		Partition(ledger.SessionKey{Tenant: "acme", Session: "s"}, 32),
		Partition(ledger.SessionKey{Tenant: "default", Session: "s"}, 7)}
	if fmt.Sprint(got) != "[16 28 0]" {
		t.Fatalf("partitions %v changed", got)
	}
}

// keyIn returns a session key in partition p of n.
func keyIn(p, n int) ledger.SessionKey {
	for i := 0; ; i++ {
		k := ledger.SessionKey{Tenant: "default", Session: fmt.Sprintf("s%d", i)}
		if Partition(k, n) == p {
			return k
		}
	}
}

// TestReplyCacheAnswersOnce: a request id answered or still in flight is
// answered from the cache, however many other requests came since; only
// answers past their keep time are let go of.
func TestReplyCacheAnswersOnce(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	c := replyCache{m: map[string]*reply{}, keep: time.Hour, now: func() time.Time { return at }}
	release := make(chan struct{})
	runs := 0
	var mu sync.Mutex
	slow := func() ([]byte, error) {
		mu.Lock()
		runs++
		mu.Unlock()
		<-release
		return []byte("once"), nil
	}
	done := make(chan []byte, 2)
	go func() { b, _ := c.do("held", slow); done <- b }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		_, in := c.m["held"]
		c.mu.Unlock()
		if in {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first request never started")
		}
	}
	for i := range 3 * replyCacheSize {
		c.do(fmt.Sprintf("other-%d", i), func() ([]byte, error) { return nil, nil })
	}
	go func() { b, _ := c.do("held", slow); done <- b }()
	close(release)
	if a, b := <-done, <-done; string(a) != "once" || string(b) != "once" || runs != 1 {
		t.Fatalf("answers %q %q after %d runs, want one run", a, b, runs)
	}
	if len(c.m) != 3*replyCacheSize+1 {
		t.Fatalf("%d answers kept, want every one younger than %s", len(c.m), freshFor)
	}
	c.sweepLocked(at.Add(freshFor + time.Second))
	if len(c.m) > replyCacheSize {
		t.Fatalf("%d answers kept past %s, want at most %d", len(c.m), freshFor, replyCacheSize)
	}
	c.keep = 0
	c.sweepLocked(at.Add(time.Second))
	if len(c.m) != 0 {
		t.Fatalf("%d answers kept past their time", len(c.m))
	}
}

// TestMessagesNeedTheFleetKey: a member with another key is answered by
// no engine, and an answer forged without the key (a NATS client
// subscribed to a partition's subject) is never taken for the owner's.
func TestMessagesNeedTheFleetKey(t *testing.T) {
	url := natstest.JetStream(t)
	const n = 4
	a, _, _ := join(t, url, "a", n)
	owners(t, []*Member{a}, n, true)
	b, _, _ := join(t, url, "b", n)
	b.Close() // owns nothing; its connection still forwards
	st, err := store.Open(context.Background(), store.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Join refuses another key (TestLayoutIsOne); a client that sends
	// anyway, with a key of its own, is what this member plays.
	other, err := Join(context.Background(), st, Config{ID: "intruder", Partitions: n, Forwarder: true, ForwardFor: time.Second, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	other.cfg.Key = []byte("another key, 32 bytes or longer!")
	if err := other.Start(nil); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got, err := other.Forward(context.Background(), keyIn(0, n), "x", []byte("hi")); err == nil {
		t.Fatalf("a member with another key was answered: %q", got)
	}
	if a.refused.Load() == 0 {
		t.Fatal("the owner counted no refused message")
	}
	if got, err := other.Ask(context.Background(), "who", nil, 500*time.Millisecond); err == nil {
		t.Fatalf("a broadcast with another key was answered: %q", got)
	}

	// A request of this fleet captured and sent again past freshFor is
	// refused; one sent again at once is answered from the cache.
	capture, err := st.Conn().SubscribeSync(a.partitionSubject(1))
	if err == nil {
		err = st.Conn().Flush() // the server holds the subscription before b sends
	}
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Forward(context.Background(), keyIn(1, n), "replayed", []byte("hi")); err != nil || string(got) != "a:hi" {
		t.Fatalf("forward: %q %v", got, err)
	}
	req, err := capture.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	capture.Unsubscribe()
	old := &nats.Msg{Subject: req.Subject, Header: req.Header, Data: req.Data}
	sent, _ := strconv.ParseInt(req.Header.Get(sentHeader), 10, 64)
	if err := a.fresh(&nats.Msg{Header: nats.Header{sentHeader: []string{strconv.FormatInt(sent-freshFor.Milliseconds()-1000, 10)}}}); err == nil {
		t.Fatal("a request older than freshFor was taken")
	}
	if r, err := st.Conn().RequestMsg(old, 2*time.Second); err != nil || string(r.Data) != "a:hi" {
		t.Fatalf("the same request again at once: %v, want the cached answer", err)
	}

	// A forger answers on partition 0's subject before the owner can.
	fwd := b
	sub, err := st.Conn().Subscribe(a.partitionSubject(0), func(m *nats.Msg) { m.Respond([]byte("forged")) })
	if err == nil {
		err = st.Conn().Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	got, err := fwd.Forward(context.Background(), keyIn(0, n), "y", []byte("hi"))
	if string(got) == "forged" || err == nil && string(got) != "a:hi" {
		t.Fatalf("forwarded past a forger: %q %v", got, err)
	}
}

// TestLayoutIsOne: an engine given another number of partitions than the
// fleet's is refused at the start.
func TestLayoutIsOne(t *testing.T) {
	url := natstest.JetStream(t)
	join(t, url, "a", 8)
	st, err := store.Open(context.Background(), store.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = Join(context.Background(), st, Config{ID: "b", Partitions: 16, LeaseTTL: testTTL, Key: testKey})
	if err == nil || !strings.Contains(err.Error(), `"partitions":16`) {
		t.Fatalf("joining with 16 partitions a fleet of 8: %v", err)
	}
	_, err = Join(context.Background(), st, Config{ID: "c", Partitions: 8, LeaseTTL: testTTL, Key: []byte("another key, 32 bytes or longer!")})
	if err == nil || !strings.Contains(err.Error(), "fleet key") {
		t.Fatalf("joining with another key: %v", err)
	}
}

// TestFencesPerStream: on a ledger of three streams a partition is fenced
// in every stream (8 partitions and 3 streams share no factor), the fence
// an append asserts is the one in its session's stream, a partition that
// moves is fenced anew in each, and an owner refused by one stream's fence
// loses the partition.
func TestFencesPerStream(t *testing.T) {
	ctx := context.Background()
	url := natstest.JetStream(t)
	const n = 8
	cfg := store.Config{URL: url, Streams: 3}
	a, st, _ := joinWith(t, cfg, "a", n)
	b, _, _ := joinWith(t, store.Config{URL: url}, "b", n) // the layout is read from the ledger
	before := owners(t, []*Member{a, b}, n, true)
	byStream := func(p int) map[string]ledger.SessionKey {
		out := map[string]ledger.SessionKey{}
		for i := 0; len(out) < 3; i++ {
			k := ledger.SessionKey{Tenant: "default", Session: fmt.Sprintf("p%d-%d", p, i)}
			if Partition(k, n) == p {
				out[st.StreamOf(k)] = k
			}
		}
		return out
	}
	fences := map[string]uint64{}
	for p := range n {
		owner := map[string]*Member{"a": a, "b": b}[before[p]]
		for stream, k := range byStream(p) {
			f, err := owner.Fence(k, 2)
			if err != nil || f.Subject != st.FenceSubjectFor(k, p) || !strings.HasPrefix(f.Subject, "ledger_fence."+strings.TrimPrefix(stream, "LEDGER-")+".") {
				t.Fatalf("partition %d, session %s of %s: fence %+v %v", p, k, stream, f, err)
			}
			if last, err := st.LastFence(ctx, f.Subject); err != nil || last != f.Seq {
				t.Fatalf("fence %s: last %d %v, the owner asserts %d", f.Subject, last, err, f.Seq)
			}
			fences[f.Subject] = f.Seq
		}
	}
	recs, err := st.Fences(ctx)
	subjects := map[string]bool{}
	for _, r := range recs {
		subjects[r.Subject] = true
	}
	if err != nil || len(subjects) != n*3 {
		t.Fatalf("fences on %d subjects (%v), want every partition's in each of the 3 streams", len(subjects), err)
	}
	// b leaves: a fences b's partitions anew, in every stream.
	b.Close()
	owners(t, []*Member{a}, n, true)
	for p, o := range before {
		for _, k := range byStream(p) {
			f, err := a.Fence(k, 2)
			if err != nil {
				t.Fatal(err)
			}
			if moved := f.Seq != fences[f.Subject]; moved != (o == "b") {
				t.Errorf("partition %d (was %s's): fence %s at %d, was %d", p, o, f.Subject, f.Seq, fences[f.Subject])
			}
		}
	}
	// Another writer fences partition 0 in one stream: a's pair there is
	// refused, and a gives the partition up.
	if err := st.SetFencer(ctx, a.Fence); err != nil {
		t.Fatal(err)
	}
	k := byStream(0)["LEDGER-1"]
	if _, err := st.PublishFence(ctx, st.FenceSubjectFor(k, 0), []byte(`{"engine":"z"}`)); err != nil {
		t.Fatal(err)
	}
	e0, err := ledger.Seal(ledger.Head{}, ledger.Event{TenantID: k.Tenant, SessionID: k.Session, EventType: "PreToolUse", TsUnixMs: 1, Payload: []byte(`{}`)}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	e1, err := ledger.Seal(e0.Head(), ledger.Event{TenantID: k.Tenant, SessionID: k.Session, EventType: "Verdict", TsUnixMs: 2, Payload: []byte(`{}`)}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.AppendSealed(ctx, []*ledger.Envelope{e0, e1})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a pair under a moved fence: %v, want ErrFenced", err)
	}
	a.Fenced(k, err)
	if slices.Contains(a.Owned(), 0) {
		t.Errorf("a still owns partition 0 after its fence moved in %s", st.StreamOf(k))
	}
}
