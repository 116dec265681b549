package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/ledger"
)

func openEmbedded(t testing.TB, listen string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{DataDir: t.TempDir(), Listen: listen, Sync: SyncInterval})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openURL(t testing.TB, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{URL: url})
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func event(tenant, session string, i int) ledger.Event {
	return ledger.Event{TenantID: tenant, SessionID: session, EventType: "PreToolUse", TsUnixMs: int64(1763830000000 + i),
		Payload: []byte(fmt.Sprintf(`{"tool_name":"Bash","tool_input":{"command":"echo %d"}}`, i))}
}

func readAll(t testing.TB, s *Store, k ledger.SessionKey) [][]byte {
	t.Helper()
	var out [][]byte
	if err := s.ReadSession(context.Background(), k, func(m Msg) error {
		out = append(out, bytes.Clone(m.Data))
		return nil
	}); err != nil {
		t.Fatalf("read %s: %v", k, err)
	}
	return out
}

func TestAppendReadVerify(t *testing.T) {
	ctx := context.Background()
	s := openEmbedded(t, "")
	ids := []string{"plain", "a.b.c", "star*", "gt>", "with space", "sl/ash", "ünïcødé-😀", "%41", "A"}
	for _, id := range ids {
		for i := 0; i < 3; i++ {
			e, err := s.Append(ctx, event("acme", id, i))
			if err != nil {
				t.Fatalf("append %q: %v", id, err)
			}
			if e.Seq() != uint64(i) {
				t.Fatalf("append %q: got seq %d, want %d", id, e.Seq(), i)
			}
		}
	}
	infos, err := s.Sessions(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != len(ids) {
		t.Fatalf("got %d sessions, want %d: %+v", len(infos), len(ids), infos)
	}
	for _, in := range infos {
		if in.Count != 3 || in.HeadSeq != 2 || in.FirstTs != 1763830000000 || in.LastTs != 1763830000002 || len(in.HeadHash) != 64 {
			t.Errorf("session %q: got %+v", in.Session, in)
		}
	}
	// "%41" and "A" must not share a subject.
	if got := readAll(t, s, ledger.SessionKey{Tenant: "acme", Session: "%41"}); len(got) != 3 {
		t.Errorf("%%41: got %d envelopes, want 3", len(got))
	}
	r, err := s.Verify(ctx, Filter{}, ledger.Deep, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.Envelopes != 3*len(ids) {
		t.Fatalf("verify: %d envelopes, faults %v", r.Envelopes, r.Err())
	}
	if _, err := s.Append(ctx, event("other", "plain", 0)); err != nil {
		t.Fatal(err)
	}
	byTenant, err := s.Verify(ctx, Filter{Tenant: "acme"}, ledger.Fast, nil)
	if err != nil || !byTenant.OK() || byTenant.Envelopes != 3*len(ids) || len(byTenant.Sessions) != len(ids) {
		t.Fatalf("verify tenant: %d envelopes in %d sessions, %v", byTenant.Envelopes, len(byTenant.Sessions), err)
	}
	others, err := s.Sessions(ctx, Filter{Tenant: "other"})
	if err != nil || len(others) != 1 || others[0].Session != "plain" || others[0].Count != 1 {
		t.Fatalf("sessions of tenant other: %+v %v", others, err)
	}
	one, err := s.Verify(ctx, Filter{Tenant: "acme", Session: "a.b.c"}, ledger.Fast, nil)
	if err != nil || !one.OK() || one.Envelopes != 3 {
		t.Fatalf("verify one: %+v %v", one, err)
	}
}

func TestEscapeTokenRoundTrip(t *testing.T) {
	for _, id := range []string{"a", "a.b", "*", ">", " x ", "a/b\\c", "é😀", "%", "%25", "\x00\n"} {
		tok := EscapeToken(id)
		for _, c := range []byte(tok) {
			if c == '.' || c == '*' || c == '>' || c <= ' ' || c >= 0x7f {
				t.Errorf("EscapeToken(%q) = %q holds %q", id, tok, c)
			}
		}
		back, err := UnescapeToken(tok)
		if err != nil || back != id {
			t.Errorf("UnescapeToken(%q) = %q, %v; want %q", tok, back, err, id)
		}
	}
}

func TestRejectedEventAppendsNothing(t *testing.T) {
	ctx := context.Background()
	s := openEmbedded(t, "")
	_, err := s.Append(ctx, ledger.Event{SessionID: "s", EventType: "PreToolUse", Payload: []byte(`{"a":1,"a":2}`)})
	if !errors.Is(err, ledger.ErrInvalidInput) {
		t.Fatalf("got %v, want ErrInvalidInput", err)
	}
	infos, err := s.Sessions(ctx, Filter{})
	if err != nil || len(infos) != 0 {
		t.Fatalf("got %v %v, want no sessions", infos, err)
	}
}

// TestConcurrentAppendersOneChain runs writers in separate connections (as
// separate processes would be) and goroutines against one server.
func TestConcurrentAppendersOneChain(t *testing.T) {
	ctx := context.Background()
	srv := openEmbedded(t, "127.0.0.1:0")
	const writers, each = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers*2)
	for w := 0; w < writers; w++ {
		c := openURL(t, srv.ClientURL())
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func(w, g int) {
				defer wg.Done()
				for i := 0; i < each; i++ {
					if _, err := c.Append(ctx, event("default", "race", w*1000+g*100+i)); err != nil {
						errs <- err
						return
					}
				}
			}(w, g)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	k := ledger.SessionKey{Tenant: "default", Session: "race"}
	got := readAll(t, srv, k)
	if len(got) != writers*2*each {
		t.Fatalf("got %d envelopes, want %d", len(got), writers*2*each)
	}
	r, err := srv.Verify(ctx, Filter{}, ledger.Deep, nil)
	if err != nil || !r.OK() {
		t.Fatalf("verify: %v %v", err, r.Err())
	}
}

// TestRetryAfterLostAckIsNotStoredTwice replays what a writer does when an
// acknowledgement is lost: the envelope landed, the writer still holds the
// old head and appends the same event again.
func TestRetryAfterLostAckIsNotStoredTwice(t *testing.T) {
	ctx := context.Background()
	s := openEmbedded(t, "")
	k := ledger.SessionKey{Tenant: "default", Session: "s"}
	if _, err := s.Append(ctx, event(k.Tenant, k.Session, 0)); err != nil {
		t.Fatal(err)
	}
	stale, _ := s.head(ctx, k, false)
	e1, err := s.Append(ctx, event(k.Tenant, k.Session, 1))
	if err != nil {
		t.Fatal(err)
	}
	// The server answers a republish on the old expected sequence with
	// wrong-last-sequence, not with a duplicate acknowledgement.
	if _, err := s.publish(ctx, k, e1, stale.streamSeq); !errors.Is(err, ErrConflict) {
		t.Fatalf("republish: got %v, want ErrConflict", err)
	}
	s.setHead(k, stale) // as if the ack for e1 never arrived
	again, err := s.Append(ctx, event(k.Tenant, k.Session, 1))
	if err != nil {
		t.Fatal(err)
	}
	if again.Hash() != e1.Hash() {
		t.Fatalf("retry: got %s seq %d, want the stored e1 %s", again.Hash(), again.Seq(), e1.Hash())
	}
	if got := readAll(t, s, k); len(got) != 2 {
		t.Fatalf("got %d envelopes, want 2 (e1 stored once)", len(got))
	}
	// A writer with a stale head and a different event re-links onto e1.
	s.setHead(k, stale)
	e2, err := s.Append(ctx, event(k.Tenant, k.Session, 2))
	if err != nil || e2.Seq() != 2 || e2.PrevHash() != e1.Hash() {
		t.Fatalf("append on stale head: got %v %v", e2, err)
	}
}

func TestLedgerUserCannotDeleteOrPurge(t *testing.T) {
	ctx := context.Background()
	srv := openEmbedded(t, "127.0.0.1:0")
	if _, err := srv.Append(ctx, event("default", "keep", 0)); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	// The server refuses these with a permissions violation and no reply,
	// so each request ends in an error when its short deadline passes.
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	if err := js.DeleteStream(short(), DefaultStream); err == nil {
		t.Error("DeleteStream succeeded, want it refused")
	}
	st, err := js.Stream(short(), DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(short()); err == nil {
		t.Error("Purge succeeded, want it refused")
	}
	if err := st.DeleteMsg(short(), 1); err == nil {
		t.Error("DeleteMsg succeeded, want it refused")
	}
	cfg := srv.streamConfig(srv.shards[0])
	cfg.MaxAge = time.Second
	if _, err := js.UpdateStream(short(), cfg); err == nil {
		t.Error("UpdateStream succeeded, want it refused")
	}
	if got := readAll(t, srv, ledger.SessionKey{Tenant: "default", Session: "keep"}); len(got) != 1 {
		t.Fatalf("got %d envelopes after the attempts, want 1", len(got))
	}
}

func TestDataDirLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Open(context.Background(), Config{DataDir: dir}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: got %v, want ErrLocked", err)
	}
}

func TestUnreachable(t *testing.T) {
	_, err := Open(context.Background(), Config{URL: "nats://127.0.0.1:1", Timeout: time.Second})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
}

func TestTailFollowsNewEnvelopes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := openEmbedded(t, "")
	if _, err := s.Append(ctx, event("acme", "old", 0)); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	tctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.Tail(tctx, Filter{Tenant: "acme"}, 0, func(m Msg) error {
			e, err := ledger.Decode(m.Data, ledger.Limits{})
			if err != nil {
				return err
			}
			got <- e.SessionID()
			return nil
		})
	}()
	// Tail delivers what is stored after it starts; keep appending until
	// the first new envelope arrives, then one more.
	var first string
	for i := 0; first == ""; i++ {
		if _, err := s.Append(ctx, event("acme", "new", i)); err != nil {
			t.Fatal(err)
		}
		select {
		case first = <-got:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("tail delivered nothing")
		}
	}
	if first != "new" {
		t.Fatalf("tail delivered %q first, want only envelopes stored after it started", first)
	}
	if _, err := s.Append(ctx, event("other", "x", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, event("acme", "last", 0)); err != nil {
		t.Fatal(err)
	}
	for s := range got {
		if s == "x" {
			t.Fatal("tail delivered another tenant's envelope")
		}
		if s == "last" {
			break
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("tail: %v", err)
	}
}

// TestAppendRidesOutServerRestart appends through a client while the server
// it talks to is stopped and started again on the same data directory: the
// append waits, lands once, and the chain stays linear.
func TestAppendRidesOutServerRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", loopbackPort(t))
	srv, err := Open(ctx, Config{DataDir: dir, Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	client, err := Open(ctx, Config{URL: srv.ClientURL(), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	k := ledger.SessionKey{Tenant: "default", Session: "restart"}
	for i := 0; i < 5; i++ {
		if _, err := client.Append(ctx, event(k.Tenant, k.Session, i)); err != nil {
			t.Fatal(err)
		}
	}
	srv.Close()
	done := make(chan error, 1)
	go func() {
		for i := 5; i < 10; i++ {
			if _, err := client.Append(ctx, event(k.Tenant, k.Session, i)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	time.Sleep(1500 * time.Millisecond)
	srv, err = Open(ctx, Config{DataDir: dir, Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := <-done; err != nil {
		t.Fatalf("append across the restart: %v", err)
	}
	if got := readAll(t, srv, k); len(got) != 10 {
		t.Fatalf("got %d envelopes, want 10", len(got))
	}
	if r, err := srv.Verify(ctx, Filter{}, ledger.Deep, nil); err != nil || !r.OK() {
		t.Fatalf("verify: %v %v", err, r.Err())
	}
}

func TestAppendAllBatches(t *testing.T) {
	ctx := context.Background()
	s := openEmbedded(t, "")
	var evs []ledger.Event
	for i := 0; i < 1200; i++ {
		evs = append(evs, event("acme", fmt.Sprintf("s%d", i%3), i))
	}
	envs, err := s.AppendAll(ctx, evs)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range envs {
		if e.SessionID() != evs[i].SessionID || e.Seq() != uint64(i/3) || e.TsUnixMs() != evs[i].TsUnixMs {
			t.Fatalf("envelope %d: got %s seq %d ts %d", i, e.SessionID(), e.Seq(), e.TsUnixMs())
		}
	}
	r, err := s.Verify(ctx, Filter{}, ledger.Deep, nil)
	if err != nil || !r.OK() || r.Envelopes != 1200 {
		t.Fatalf("verify: %v %v", err, r.Err())
	}
	// A batch whose first envelope expects a stale head is refused whole.
	k := ledger.SessionKey{Tenant: "acme", Session: "s0"}
	h, _ := s.head(ctx, k, true)
	stale, _ := sealChain(ledger.Head{Seq: 398, Hash: envs[398*3].PrevHash()}, drafts(t, event("acme", "s0", 1), event("acme", "s0", 2)))
	if _, err := s.publishBatch(ctx, []run{{key: k, envs: stale, expect: h.streamSeq - 3}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale batch: got %v, want ErrConflict", err)
	}
	if got := readAll(t, s, k); len(got) != 400 {
		t.Fatalf("after the refused batch: got %d envelopes, want 400", len(got))
	}
	// One bad event and nothing is stored.
	bad := append([]ledger.Event{event("acme", "new", 0)}, ledger.Event{SessionID: "new", EventType: "PreToolUse", Payload: []byte(`{"a":1,"a":1}`)})
	if _, err := s.AppendAll(ctx, bad); !errors.Is(err, ledger.ErrInvalidInput) {
		t.Fatalf("bad event: got %v", err)
	}
	if got := readAll(t, s, ledger.SessionKey{Tenant: "acme", Session: "new"}); len(got) != 0 {
		t.Fatalf("bad input stored %d envelopes", len(got))
	}
}

func TestConcurrentBatchWritersOneChain(t *testing.T) {
	ctx := context.Background()
	srv := openEmbedded(t, "127.0.0.1:0")
	const writers, each = 3, 700
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		c := openURL(t, srv.ClientURL())
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var evs []ledger.Event
			for i := 0; i < each; i++ {
				evs = append(evs, event("default", "batch-race", w*10000+i))
			}
			if _, err := c.AppendAll(ctx, evs); err != nil {
				errs <- err
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	k := ledger.SessionKey{Tenant: "default", Session: "batch-race"}
	if got := readAll(t, srv, k); len(got) != writers*each {
		t.Fatalf("got %d envelopes, want %d", len(got), writers*each)
	}
	if r, err := srv.Verify(ctx, Filter{}, ledger.Deep, nil); err != nil || !r.OK() {
		t.Fatalf("verify: %v %v", err, r.Err())
	}
}

// TestStreamWithoutAtomicBatches: on a stream created without allow_atomic
// (an older server, or an operator's own stream) AppendAll falls back to one
// publish per event and stores each exactly once.
func TestStreamWithoutAtomicBatches(t *testing.T) {
	ctx := context.Background()
	srv := openEmbedded(t, "127.0.0.1:0")
	cfg := srv.streamConfig(srv.shards[0])
	cfg.Name, cfg.Subjects, cfg.AllowAtomicPublish = "PLAIN", []string{"plain.>"}, false
	if _, err := srv.js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, Config{URL: srv.ClientURL(), Stream: "PLAIN"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var evs []ledger.Event
	for i := 0; i < 10; i++ {
		evs = append(evs, event("default", "p", i))
	}
	if _, err := c.AppendAll(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, c, ledger.SessionKey{Tenant: "default", Session: "p"}); len(got) != 10 {
		t.Fatalf("got %d envelopes, want 10", len(got))
	}
	if r, err := c.Verify(ctx, Filter{}, ledger.Deep, nil); err != nil || !r.OK() {
		t.Fatalf("verify: %v %v", err, r.Err())
	}
}
