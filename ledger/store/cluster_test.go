package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/internal/natstest"
	"github.com/agentledger/agentledger/ledger"
)

func cluster(t *testing.T) ([]*server.Server, string) { return natstest.Cluster(t) }

func loopbackPort(t *testing.T) int { return natstest.LoopbackPort(t) }

// TestClusterLeaderKilledUnderLoad creates the ledger stream with three
// replicas, appends with several writers (some on one shared session),
// shuts down the stream's leader mid-load, and checks: every acknowledged
// append stored once at its seq, no fork, every chain verifies, and
// appends go on under the new leader.
func TestClusterLeaderKilledUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	servers, url := cluster(t)
	ctx := context.Background()
	var st *Store
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if st, err = Open(ctx, Config{URL: url, Replicas: 3, RetryFor: time.Minute}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster never accepted the stream: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer st.Close()

	run, stop := context.WithCancel(ctx)
	var (
		mu   sync.Mutex
		acks = map[ledger.SessionKey]map[uint64]string{}
		n    int
		wg   sync.WaitGroup
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ws, err := Open(ctx, Config{URL: url, Replicas: 3, RetryFor: time.Minute, Timeout: 2 * time.Second})
			if err != nil {
				t.Error(err)
				return
			}
			defer ws.Close()
			for i := 0; run.Err() == nil; i++ {
				session := fmt.Sprintf("w%d", w)
				if i%2 == 1 {
					session = "shared"
				}
				ev := event("cluster", session, i)
				ev.Payload = []byte(fmt.Sprintf(`{"writer":%d,"i":%d}`, w, i))
				e, err := ws.Append(ctx, ev)
				if err != nil {
					continue
				}
				mu.Lock()
				if acks[e.Key()] == nil {
					acks[e.Key()] = map[uint64]string{}
				}
				if _, dup := acks[e.Key()][e.Seq()]; dup {
					t.Errorf("%s seq %d acknowledged twice", e.Key(), e.Seq())
				}
				acks[e.Key()][e.Seq()] = e.Hash()
				n++
				mu.Unlock()
			}
		}(w)
	}
	time.Sleep(time.Second)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	info, err := js.Stream(ctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	si, err := info.Info(ctx)
	if err != nil || si.Cluster == nil || len(si.Cluster.Replicas) != 2 {
		t.Fatalf("stream is not replicated three ways: %v %+v", err, si)
	}
	leader := si.Cluster.Leader
	nc.Close()
	mu.Lock()
	before := n
	mu.Unlock()
	for _, s := range servers {
		if s.Name() == leader {
			s.Shutdown()
		}
	}
	time.Sleep(3 * time.Second)
	stop()
	wg.Wait()
	if n <= before {
		t.Fatalf("no append was acknowledged after the leader %s went down (%d before)", leader, before)
	}
	rep, err := st.Verify(ctx, Filter{Tenant: "cluster"}, ledger.Deep, nil)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Err())
	}
	stored := map[ledger.SessionKey]map[uint64]string{}
	if err := st.ReadAll(ctx, Filter{Tenant: "cluster"}, func(m Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil {
			return err
		}
		if stored[e.Key()] == nil {
			stored[e.Key()] = map[uint64]string{}
		}
		stored[e.Key()][e.Seq()] = e.Hash()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for k, seqs := range acks {
		for seq, hash := range seqs {
			if stored[k][seq] != hash {
				lost++
			}
		}
	}
	// HashAt (what checkpoints use) reads the same through the new leader.
	sampled := 0
	for k, seqs := range acks {
		for seq, hash := range seqs {
			if sampled++; sampled > 20 {
				break
			}
			if got, ok, err := st.HashAt(ctx, k, seq); err != nil || !ok || got != hash {
				t.Errorf("HashAt %s seq %d: %q %v %v, want %s", k, seq, got, ok, err, hash)
			}
		}
	}
	t.Logf("leader %s shut down: %d appends acknowledged (%d before), %d lost", leader, n, before, lost)
	if lost != 0 {
		t.Fatalf("%d acknowledged appends lost", lost)
	}
}
