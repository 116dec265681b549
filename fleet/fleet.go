// Package fleet lets several engine processes on one JetStream cluster
// serve one population of sessions, each session decided by one engine at
// a time.
//
// Sessions hash into a fixed number of partitions. Each partition has one
// owner, by a lease in a JetStream key-value bucket: the key
// lease.<partition>, created by the engine that takes it and renewed by it
// (an update at the revision it holds) well within the bucket's TTL. An
// engine that stops renewing (killed, paused, cut off) loses the lease when
// the bucket's TTL removes it, and a live engine takes it. Which live
// engine takes a partition is decided by rendezvous hashing over the
// members (member.<id> keys, renewed the same way): every engine computes
// the same preferred owner, so partitions spread evenly and move only as
// far as membership changes; a partition its preferred owner leaves
// unclaimed is taken by any engine after two rounds.
//
// A lease is a promise about time, and a paused process cannot keep it. So
// taking a partition also fences it: the new owner stores a fence message
// (store.Fence) naming it and its lease revision, and every decision it
// records asserts, atomically with its chain's place, that this fence is
// still the partition's last. An old owner that wakes up after losing its
// lease cannot record a decision in the partition: the stream refuses it
// (store.ErrFenced), the engine logs it and passes the call to the new
// owner.
//
// Any engine accepts any call. One that does not own the call's partition
// forwards it over NATS request-reply on the partition's subject, to which
// only the partition's owner subscribes; a call that finds no owner (the
// partition is moving) is retried until one answers or the forward bound
// passes. Requests carry an id, and an owner answers a repeated id with
// the answer it gave, so a retried request is never decided twice by one
// owner.
package fleet

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// Defaults.
const (
	DefaultPartitions = 32
	DefaultLeaseTTL   = 6 * time.Second
	DefaultBucket     = "agentledger_fleet"
)

// Config says how an engine joins its fleet.
type Config struct {
	// ID names this engine in the fleet: unique among live members.
	// Default: host name and process id.
	ID string
	// Partitions is how many partitions sessions hash into; every member
	// of a fleet must use the same number. Default 32.
	Partitions int
	// LeaseTTL is how long a lease lives without renewal; owners renew
	// every third of it. Default 6s.
	LeaseTTL time.Duration
	// Bucket is the key-value bucket holding leases and members.
	Bucket string
	// ForwardFor bounds how long a forwarded call keeps looking for its
	// partition's owner. Default 2×LeaseTTL + 5s: a dead owner's lease
	// expires and a live engine takes the partition within it.
	ForwardFor time.Duration
	// Log receives one line per lease move and fence.
	Log func(string)
	// Forwarder joins only to pass calls on: it owns no partition and is
	// not counted as a member (a front end such as the MCP gateway).
	Forwarder bool
	// Key authenticates every message between the fleet's members (see
	// LoadKey): 32 bytes or more, the same for every member.
	Key []byte
}

// Handler answers a request forwarded to this engine. For a partition
// request it returns ErrMoved when this engine no longer owns the
// partition; for a broadcast, ok false means it has nothing to say.
type Handler func(ctx context.Context, data []byte) (reply []byte, err error)

// ErrMoved means the partition's owner changed while a request was on its
// way; the sender tries the new owner.
var ErrMoved = errors.New("fleet: the partition moved")

// ErrSilent is what a broadcast handler returns when it has nothing to
// say (it does not hold what was asked about).
var ErrSilent = errors.New("fleet: nothing to say")

// lease is a partition this engine owns.
type lease struct {
	rev uint64 // the lease key's revision this engine wrote last
	// fences are the partition's fences, one in each stream of the
	// ledger that can hold its sessions (store.FenceSubjects).
	fences  []store.Fence
	renewed time.Time // when the last renewal was sent (monotonic)
	sub     *nats.Subscription
}

// fenceFor is the fence an append to session k asserts: the partition's
// fence in k's stream.
func (l *lease) fenceFor(st *store.Store, k ledger.SessionKey, p int) (store.Fence, error) {
	subj := st.FenceSubjectFor(k, p)
	for _, f := range l.fences {
		if f.Subject == subj {
			return f, nil
		}
	}
	return store.Fence{}, fmt.Errorf("%w (partition %d has no fence in %s's stream %s)", store.ErrNotOwner, p, k, st.StreamOf(k))
}

// Member is one engine's place in the fleet. It is safe for concurrent
// use.
type Member struct {
	cfg    Config
	st     *store.Store
	nc     *nats.Conn
	kv     jetstream.KeyValue
	base   string // subjects of this fleet's requests
	value  []byte // what this engine writes into its leases
	layout []byte // the fleet's layout (partitions), kept in the bucket

	mu     sync.Mutex
	owned  map[int]*lease
	absent map[int]int // rounds a partition has had no owner
	// takeErr is, per partition, the failure to take it last logged: a
	// cluster that stays slow is logged once per partition, not each round.
	takeErr map[int]string
	seen    map[string]int
	handler Handler
	bcast   map[string]Handler
	subs    []*nats.Subscription

	replies replyCache

	took, lost, released, fenced atomic.Int64
	// refused counts messages without a good MAC.
	refused  atomic.Int64
	forwards forwardStats

	stop    chan struct{}
	done    chan struct{}
	started atomic.Bool
}

// Join joins the fleet of st's stream: it opens the lease bucket, adds
// the fence subjects to the stream, and starts taking and renewing
// leases. Close leaves it.
func Join(ctx context.Context, st *store.Store, cfg Config) (*Member, error) {
	if cfg.Partitions == 0 {
		cfg.Partitions = DefaultPartitions
	}
	if cfg.Partitions < 1 || cfg.Partitions > 4096 {
		return nil, fmt.Errorf("fleet: %d partitions: want 1 to 4096", cfg.Partitions)
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.LeaseTTL < 500*time.Millisecond {
		return nil, fmt.Errorf("fleet: lease TTL %s: want 500ms or more", cfg.LeaseTTL)
	}
	if cfg.ForwardFor == 0 {
		cfg.ForwardFor = 2*cfg.LeaseTTL + 5*time.Second
	}
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.ID == "" {
		host, _ := os.Hostname()
		cfg.ID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if !validID(cfg.ID) {
		return nil, fmt.Errorf("fleet: member id %q: want letters, digits, '-' and '_' (up to 64)", cfg.ID)
	}
	if cfg.Log == nil {
		cfg.Log = func(string) {}
	}
	if len(cfg.Key) < 32 {
		return nil, errors.New("fleet: a key of 32 bytes or more is required (LoadKey)")
	}
	if err := st.EnableFences(ctx); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	replicas, err := st.Replicas(ctx)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	kv, err := leaseBucket(ctx, st.JetStream(), cfg, replicas)
	if err != nil {
		return nil, err
	}
	layout, _ := json.Marshal(map[string]any{"partitions": cfg.Partitions, "key": keyPrint(cfg.Key)})
	if err := untilServed(ctx, func() error { return checkLayout(ctx, kv, layout, !cfg.Forwarder) }); err != nil {
		return nil, err
	}
	// The nonce tells this process's leases from those of another process
	// given the same id by mistake.
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	value, _ := json.Marshal(map[string]string{"engine": cfg.ID, "nonce": hex.EncodeToString(nonce[:])})
	m := &Member{cfg: cfg, st: st, nc: st.Conn(), kv: kv, layout: layout, base: "agentledger_fleet." + strings.ToLower(st.StreamName()),
		value: value, owned: map[int]*lease{}, absent: map[int]int{}, takeErr: map[int]string{}, seen: map[string]int{}, bcast: map[string]Handler{},
		replies: replyCache{m: map[string]*reply{}, keep: cfg.ForwardFor}, stop: make(chan struct{}), done: make(chan struct{})}
	return m, nil
}

// leaseBucket opens the fleet's bucket, creating it when it does not
// exist (an existing one is never updated: the engines need no right to
// change streams). Its TTL is every lease's: an engine given another one
// is refused.
func leaseBucket(ctx context.Context, js jetstream.JetStream, cfg Config, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: cfg.Bucket,
		Description: "agentledger fleet: partition leases and members", History: 1, TTL: cfg.LeaseTTL,
		Storage: jetstream.FileStorage, Replicas: replicas})
	if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		kv, err = js.KeyValue(ctx, cfg.Bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: lease bucket %s: %w", cfg.Bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("fleet: lease bucket %s: %w", cfg.Bucket, err)
	}
	if st.TTL() != cfg.LeaseTTL && !cfg.Forwarder {
		return nil, fmt.Errorf("fleet: the fleet's leases live %s (bucket %s); this engine was given --lease-ttl %s: every engine of a fleet uses one", st.TTL(), cfg.Bucket, cfg.LeaseTTL)
	}
	return kv, nil
}

// Start starts taking and renewing leases; partition requests go to h.
// Broadcast handlers must be registered (Handle) before.
func (m *Member) Start(h Handler) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("fleet: started already")
	}
	m.mu.Lock()
	m.handler = h
	for kind, bh := range m.bcast {
		sub, err := m.nc.Subscribe(m.base+".all."+kind, m.serveBroadcast(bh))
		if err != nil {
			m.mu.Unlock()
			return fmt.Errorf("fleet: subscribe %s: %w", kind, err)
		}
		m.subs = append(m.subs, sub)
	}
	m.mu.Unlock()
	if m.cfg.Forwarder {
		close(m.done)
		return nil
	}
	go m.run()
	return nil
}

// Handle registers h for broadcasts of kind.
func (m *Member) Handle(kind string, h Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bcast[kind] = h
}

// ID is this engine's member id.
func (m *Member) ID() string { return m.cfg.ID }

// Partitions is how many partitions the fleet has.
func (m *Member) Partitions() int { return m.cfg.Partitions }

// Partition is the partition of session k among n: k.Partition(n), the
// hash a ledger of several streams places sessions by too.
func Partition(k ledger.SessionKey, n int) int { return k.Partition(n) }

// Owner returns the fence of k's partition when this engine owns it.
func (m *Member) Owner(k ledger.SessionKey) (store.Fence, error) {
	p := Partition(k, m.cfg.Partitions)
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.owned[p]
	if l == nil {
		return store.Fence{}, fmt.Errorf("%w (partition %d)", store.ErrNotOwner, p)
	}
	return l.fenceFor(m.st, k, p)
}

// Fence is the store's Fencer: the fence an append of n envelopes to
// session k asserts. A run of two or more carries the fence to the stream,
// which refuses it once another engine fenced the partition; a lone
// envelope cannot carry it, so it is let through only while the lease was
// renewed within two thirds of its TTL (it expires at the earliest after
// the whole TTL).
func (m *Member) Fence(k ledger.SessionKey, n int) (store.Fence, error) {
	p := Partition(k, m.cfg.Partitions)
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.owned[p]
	switch {
	case l == nil:
		return store.Fence{}, fmt.Errorf("%w (partition %d)", store.ErrNotOwner, p)
	case n < 2 && time.Since(l.renewed) > m.cfg.LeaseTTL*2/3:
		return store.Fence{}, fmt.Errorf("%w (partition %d, renewed %s ago)", store.ErrStale, p, time.Since(l.renewed).Round(time.Millisecond))
	}
	return l.fenceFor(m.st, k, p)
}

// Fenced is what the engine calls when the stream refused an append to
// k for its fence: the partition is lost, unless this engine holds it
// again under a newer fence than the one refused.
func (m *Member) Fenced(k ledger.SessionKey, cause error) {
	p := Partition(k, m.cfg.Partitions)
	m.fenced.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	var fe *store.FencedError
	if l := m.owned[p]; l != nil && (!errors.As(cause, &fe) || slices.Contains(l.fences, store.Fence{Subject: fe.Subject, Seq: fe.Was})) {
		m.loseLocked(p, fmt.Sprintf("fenced out: %v", cause))
	}
}

// Close stops renewing and releases this engine's leases, so that other
// engines take its partitions at once rather than after the TTL.
func (m *Member) Close() {
	select {
	case <-m.stop:
		return
	default:
	}
	close(m.stop)
	if m.started.Load() {
		<-m.done
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for p, l := range m.owned {
		m.dropLocked(p)
		_ = m.kv.Delete(ctx, leaseKey(p), jetstream.LastRevision(l.rev))
	}
	if !m.cfg.Forwarder {
		_ = m.kv.Delete(ctx, "member."+m.cfg.ID)
	}
	for _, s := range m.subs {
		_ = s.Unsubscribe()
	}
}

func (m *Member) run() {
	defer close(m.done)
	every := m.cfg.LeaseTTL / 3
	for {
		m.round()
		select {
		case <-m.stop:
			return
		case <-time.After(every):
		}
	}
}

// round renews this engine's membership and leases, takes the partitions
// it should own and hands over those another member should. Each request
// has a third of the TTL to answer.
func (m *Member) round() {
	every := m.cfg.LeaseTTL / 3
	ctx, cancel := context.WithTimeout(context.Background(), every)
	if _, err := m.kv.Put(ctx, "member."+m.cfg.ID, m.value); err != nil {
		m.cfg.Log(fmt.Sprintf("fleet: renew membership: %v", err))
	}
	err := checkLayout(ctx, m.kv, m.layout, true)
	cancel()
	if errors.Is(err, errOtherLayout) {
		// Another layout took the bucket (an engine started with other
		// partitions or another key while this one's lapsed): this engine
		// must not decide under a hash the others do not share.
		m.cfg.Log(err.Error() + "; giving up every partition")
		m.mu.Lock()
		for p := range m.owned {
			m.loseLocked(p, "the fleet's layout is not this engine's")
		}
		m.mu.Unlock()
		return
	}
	members := m.members()
	present, err := m.leases()
	if err != nil {
		m.cfg.Log(fmt.Sprintf("fleet: read leases: %v", err))
	}
	// Renewals go out together: one after the other, a slow cluster
	// would let the last lease expire before its turn.
	var wg sync.WaitGroup
	limit := make(chan struct{}, 8)
	for p := range m.cfg.Partitions {
		m.mu.Lock()
		l := m.owned[p]
		m.mu.Unlock()
		switch {
		case l != nil:
			wg.Add(1)
			limit <- struct{}{}
			go func() {
				defer func() { <-limit; wg.Done() }()
				m.keep(p, l, members)
			}()
		case present == nil:
			// Unknown this round: take nothing.
		case !present[p]:
			m.mu.Lock()
			m.absent[p]++
			n := m.absent[p]
			m.mu.Unlock()
			if preferred(p, members) == m.cfg.ID || n > 2 {
				m.take(p)
			}
		default:
			m.mu.Lock()
			delete(m.absent, p)
			m.mu.Unlock()
		}
	}
	wg.Wait()
}

// leases returns the partitions whose lease key exists (nil: unknown).
func (m *Member) leases() (map[int]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.LeaseTTL/3)
	defer cancel()
	lister, err := m.kv.ListKeysFiltered(ctx, "lease.*")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return map[int]bool{}, nil
		}
		return nil, err
	}
	out := map[int]bool{}
	for k := range lister.Keys() {
		if p, err := strconv.Atoi(strings.TrimPrefix(k, "lease.")); err == nil {
			out[p] = true
		}
	}
	return out, nil
}

// members are the live members' ids, counting each only once this engine
// has seen it for three rounds (a starting engine does not pull
// partitions before it is up), and this engine itself.
func (m *Member) members() []string {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.LeaseTTL/3)
	defer cancel()
	lister, err := m.kv.ListKeysFiltered(ctx, "member.*")
	if err != nil {
		return []string{m.cfg.ID}
	}
	var ids []string
	for k := range lister.Keys() {
		ids = append(ids, strings.TrimPrefix(k, "member."))
	}
	if !slices.Contains(ids, m.cfg.ID) {
		ids = append(ids, m.cfg.ID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]int{}
	var settled []string
	for _, id := range ids {
		seen[id] = m.seen[id] + 1
		if seen[id] > 2 || id == m.cfg.ID {
			settled = append(settled, id)
		}
	}
	m.seen = seen
	slices.Sort(settled)
	return settled
}

// keep renews lease l of partition p, or hands it over when another live
// member is its preferred owner. A renewal the bucket refuses (another
// revision: the lease expired and was taken) loses the partition; one
// that gets no answer in time is tried again next round, until the lease
// is as old as its TTL.
func (m *Member) keep(p int, l *lease, members []string) {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.LeaseTTL/3)
	defer cancel()
	if pref := preferred(p, members); pref != m.cfg.ID {
		m.mu.Lock()
		if m.owned[p] == l {
			m.dropLocked(p)
		}
		m.mu.Unlock()
		// Deciding stopped before the lease goes: the preferred owner
		// fences the partition when it takes it.
		if err := m.kv.Delete(ctx, leaseKey(p), jetstream.LastRevision(l.rev)); err != nil {
			m.cfg.Log(fmt.Sprintf("fleet: hand partition %d to %s: %v (it moves when the lease expires)", p, pref, err))
		}
		m.released.Add(1)
		m.cfg.Log(fmt.Sprintf("fleet: handed partition %d to %s", p, pref))
		return
	}
	sent := time.Now()
	rev, err := m.kv.Update(ctx, leaseKey(p), m.value, l.rev)
	var refused *jetstream.APIError
	if errors.As(err, &refused) || errors.Is(err, jetstream.ErrKeyExists) {
		// A renewal whose answer was lost moved the revision on: the
		// lease is still this engine's if the bucket says so.
		if e, gerr := m.kv.Get(ctx, leaseKey(p)); gerr == nil && bytes.Equal(e.Value(), m.value) && e.Revision() > l.rev {
			rev, err = m.kv.Update(ctx, leaseKey(p), m.value, e.Revision())
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.owned[p] != l {
		return
	}
	switch {
	case err == nil:
		l.rev, l.renewed = rev, sent
	case errors.As(err, &refused) || errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound):
		m.loseLocked(p, fmt.Sprintf("renewal refused: %v", err))
	case time.Since(l.renewed) >= m.cfg.LeaseTTL:
		m.loseLocked(p, fmt.Sprintf("not renewed within its TTL: %v", err))
	default:
		m.cfg.Log(fmt.Sprintf("fleet: renew partition %d: %v (trying again)", p, err))
	}
}

// take creates partition p's lease, fences the partition and starts
// answering its requests.
func (m *Member) take(p int) {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.LeaseTTL/3)
	defer cancel()
	sent := time.Now()
	rev, err := m.kv.Create(ctx, leaseKey(p), m.value)
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			// Not another member's: a slow or unreachable cluster.
			// The partition is tried again next round.
			m.mu.Lock()
			logged := m.takeErr[p] == err.Error()
			m.takeErr[p] = err.Error()
			m.mu.Unlock()
			if !logged {
				m.cfg.Log(fmt.Sprintf("fleet: take partition %d: %v (trying again each round)", p, err))
			}
		}
		return
	}
	fence, _ := json.Marshal(map[string]any{"partition": p, "engine": m.cfg.ID, "lease_revision": rev})
	l := &lease{rev: rev, renewed: sent}
	var at []string
	for _, subj := range m.st.FenceSubjects(p, m.cfg.Partitions) {
		seq, err := m.st.PublishFence(ctx, subj, fence)
		if err != nil {
			m.cfg.Log(fmt.Sprintf("fleet: fence partition %d: %v; giving it back", p, err))
			_ = m.kv.Delete(ctx, leaseKey(p), jetstream.LastRevision(rev))
			return
		}
		l.fences = append(l.fences, store.Fence{Subject: subj, Seq: seq})
		if len(m.st.Streams()) == 1 {
			at = append(at, strconv.FormatUint(seq, 10))
		} else {
			at = append(at, fmt.Sprintf("%d on %s", seq, subj))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sub, err := m.nc.Subscribe(m.partitionSubject(p), m.servePartition(p))
	if err != nil {
		m.cfg.Log(fmt.Sprintf("fleet: serve partition %d: %v; giving it back", p, err))
		_ = m.kv.Delete(ctx, leaseKey(p), jetstream.LastRevision(rev))
		return
	}
	l.sub = sub
	m.owned[p] = l
	delete(m.absent, p)
	delete(m.takeErr, p)
	m.took.Add(1)
	m.cfg.Log(fmt.Sprintf("fleet: took partition %d (lease revision %d, fence at stream seq %s)", p, rev, strings.Join(at, ", ")))
}

// loseLocked forgets a partition this engine no longer owns. mu is held.
func (m *Member) loseLocked(p int, why string) {
	m.dropLocked(p)
	m.lost.Add(1)
	m.cfg.Log(fmt.Sprintf("fleet: lost partition %d: %s; its calls go to its new owner", p, why))
}

func (m *Member) dropLocked(p int) {
	if l := m.owned[p]; l != nil && l.sub != nil {
		_ = l.sub.Unsubscribe()
	}
	delete(m.owned, p)
}

func leaseKey(p int) string { return "lease." + strconv.Itoa(p) }

// layoutKey holds the fleet's layout while any member lives.
const layoutKey = "layout"

// untilServed runs fn again while the server answers no one (a bucket
// just created on a cluster has no leader yet), for up to 15 seconds.
func untilServed(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(15 * time.Second)
	for delay := 50 * time.Millisecond; ; delay = min(delay*2, time.Second) {
		err := fn()
		if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
	}
}

// errOtherLayout is a fleet whose layout is not this engine's.
var errOtherLayout = errors.New("fleet: the fleet has another layout")

// checkLayout holds layout (this engine's partitions and key print)
// against the fleet's, and when keep is set writes it if there is none,
// or renews it (at its revision) if it is the same.
func checkLayout(ctx context.Context, kv jetstream.KeyValue, layout []byte, keep bool) error {
	e, err := kv.Get(ctx, layoutKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		if !keep {
			return nil
		}
		if _, err = kv.Create(ctx, layoutKey, layout); err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("fleet: layout: %w", err)
		}
		e, err = kv.Get(ctx, layoutKey) // another engine wrote it first
	}
	if err != nil {
		return fmt.Errorf("fleet: layout: %w", err)
	}
	if !bytes.Equal(e.Value(), layout) {
		return fmt.Errorf("%w: the fleet's is %s, this engine's %s: every engine of a fleet uses the same --partitions and the same fleet key (DATA/%s, copied from the first engine)", errOtherLayout, e.Value(), layout, KeyFile)
	}
	if keep {
		_, _ = kv.Update(ctx, layoutKey, layout, e.Revision())
	}
	return nil
}

func (m *Member) partitionSubject(p int) string { return m.base + ".p." + strconv.Itoa(p) }

// preferred is the member that should own partition p: the highest
// rendezvous score among members.
func preferred(p int, members []string) string {
	best, bestScore := "", uint64(0)
	for _, id := range members {
		h := sha256.Sum256([]byte(strconv.Itoa(p) + "\x00" + id))
		if s := binary.BigEndian.Uint64(h[:8]); best == "" || s > bestScore {
			best, bestScore = id, s
		}
	}
	return best
}

func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Owned lists the partitions this engine owns now, in order.
func (m *Member) Owned() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int
	for p := range m.owned {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
