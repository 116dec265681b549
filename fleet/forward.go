package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/agentledger/agentledger/ledger"
)

// Headers of fleet requests and answers.
const (
	// RequestIDHeader names a forwarded request: a retry carries the same
	// id, and an owner answers it with the answer it gave.
	RequestIDHeader = "Agentledger-Request-Id"
	movedHeader     = "Agentledger-Moved"
	errorHeader     = "Agentledger-Error"
	senderHeader    = "Agentledger-Engine"
)

// attemptTimeout bounds one forwarded request: a decision takes
// milliseconds, so an owner that does not answer in this time is paused or
// gone, and the request is sent again (to the same id).
const attemptTimeout = 5 * time.Second

// ErrLocal means this engine owns the call's partition: decide it here.
var ErrLocal = errors.New("fleet: this engine owns the partition")

// RemoteError is an error the owner answered a forwarded request with.
type RemoteError struct {
	Engine string
	Msg    string
}

func (e *RemoteError) Error() string { return fmt.Sprintf("engine %s: %s", e.Engine, e.Msg) }

// Forward sends a request about session k to the owner of its partition
// and returns its answer. It returns ErrLocal when this engine owns the
// partition (now, or after it took it over while looking). While the
// partition has no owner, or its owner does not answer, it retries, with
// the same request id, until ctx ends or ForwardFor has passed.
func (m *Member) Forward(ctx context.Context, k ledger.SessionKey, id string, data []byte) ([]byte, error) {
	p := Partition(k, m.cfg.Partitions)
	start := time.Now()
	msg := &nats.Msg{Subject: m.partitionSubject(p), Data: data,
		Header: nats.Header{RequestIDHeader: []string{id}, senderHeader: []string{m.cfg.ID}}}
	var last error
	for attempt := 0; ; attempt++ {
		if _, err := m.Owner(k); err == nil {
			return nil, ErrLocal
		}
		// Sealed again for each attempt: the owner takes only fresh
		// requests, and answers a repeated id from its cache.
		msg.Reply = ""
		m.seal(msg, "")
		reqMAC := msg.Header.Get(macHeader)
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		r, err := m.nc.RequestMsgWithContext(actx, msg)
		cancel()
		if err == nil {
			if err = m.opened(r, "", "", reqMAC); err != nil {
				r = nil
			}
		}
		switch {
		case err == nil && r.Header.Get(movedHeader) == "":
			m.forwards.observe(time.Since(start), attempt)
			if e := r.Header.Get(errorHeader); e != "" {
				return nil, &RemoteError{Engine: r.Header.Get(senderHeader), Msg: e}
			}
			return r.Data, nil
		case err == nil:
			last = fmt.Errorf("partition %d moved away from %s", p, r.Header.Get(senderHeader))
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			last = err
		}
		if time.Since(start) > m.cfg.ForwardFor {
			m.forwards.failed.Add(1)
			return nil, fmt.Errorf("fleet: no owner of partition %d answered within %s: %w", p, m.cfg.ForwardFor, last)
		}
		d := time.Duration(25+rand.IntN(50)) * time.Millisecond << min(attempt, 3)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// servePartition answers requests forwarded to partition p.
func (m *Member) servePartition(p int) nats.MsgHandler {
	return func(msg *nats.Msg) {
		if m.opened(msg, msg.Subject, "", "") != nil {
			return // not from this fleet, or stale: no answer at all
		}
		go func() {
			m.mu.Lock()
			_, owns := m.owned[p]
			h := m.handler
			m.mu.Unlock()
			if !owns || h == nil {
				m.respond(msg, nil, ErrMoved)
				return
			}
			id := msg.Header.Get(RequestIDHeader)
			data, err := m.replies.do(id, func() ([]byte, error) {
				ctx, cancel := context.WithTimeout(context.Background(), m.cfg.ForwardFor)
				defer cancel()
				return h(ctx, msg.Data)
			})
			m.respond(msg, data, err)
		}()
	}
}

func (m *Member) respond(msg *nats.Msg, data []byte, err error) {
	out := &nats.Msg{Data: data, Header: nats.Header{senderHeader: []string{m.cfg.ID}}}
	switch {
	case errors.Is(err, ErrMoved):
		out.Header.Set(movedHeader, "1")
	case err != nil:
		out.Header.Set(errorHeader, err.Error())
	}
	m.seal(out, msg.Header.Get(macHeader))
	_ = msg.RespondMsg(out)
}

// serveBroadcast answers a broadcast with h, or stays silent.
func (m *Member) serveBroadcast(h Handler) nats.MsgHandler {
	return func(msg *nats.Msg) {
		if m.opened(msg, msg.Subject, msg.Reply, "") != nil {
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
			defer cancel()
			data, err := h(ctx, msg.Data)
			if errors.Is(err, ErrSilent) {
				return
			}
			m.respond(msg, data, err)
		}()
	}
}

// Ask sends a broadcast of kind to every member but this one and returns
// the first answer (ErrSilent: none answered within the wait).
func (m *Member) Ask(ctx context.Context, kind string, data []byte, wait time.Duration) ([]byte, error) {
	answers, err := m.gather(ctx, kind, data, wait, 1)
	if err != nil {
		return nil, err
	}
	if len(answers) == 0 {
		return nil, ErrSilent
	}
	return answers[0], nil
}

// Gather sends a broadcast of kind and returns the answers of the other
// members that gave one within wait (it stops early once every live
// member answered).
func (m *Member) Gather(ctx context.Context, kind string, data []byte, wait time.Duration) ([][]byte, error) {
	return m.gather(ctx, kind, data, wait, 0)
}

func (m *Member) gather(ctx context.Context, kind string, data []byte, wait time.Duration, want int) ([][]byte, error) {
	var others int
	if m.cfg.Forwarder {
		others = len(m.members()) - 1 // a forwarder keeps no count of its own
	} else {
		m.mu.Lock()
		others = len(m.seen) - 1
		m.mu.Unlock()
	}
	if want == 0 {
		want = others
	}
	inbox := m.nc.NewRespInbox()
	sub, err := m.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	defer sub.Unsubscribe()
	msg := &nats.Msg{Subject: m.base + ".all." + kind, Reply: inbox, Data: data,
		Header: nats.Header{senderHeader: []string{m.cfg.ID}, RequestIDHeader: []string{nuid.Next()}}}
	m.seal(msg, "")
	reqMAC := msg.Header.Get(macHeader)
	if err := m.nc.PublishMsg(msg); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var out [][]byte
	var remote error
	for want <= 0 || len(out) < want {
		r, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			break
		}
		if r.Header.Get(senderHeader) == m.cfg.ID || m.opened(r, "", "", reqMAC) != nil {
			continue
		}
		if e := r.Header.Get(errorHeader); e != "" {
			remote = &RemoteError{Engine: r.Header.Get(senderHeader), Msg: e}
			continue
		}
		out = append(out, r.Data)
	}
	if len(out) == 0 && remote != nil {
		return nil, remote
	}
	return out, nil
}

// replyCache remembers the answers to recent request ids, so that a
// retried request gets the answer it had instead of a second decision. A
// request in flight is never let go of, nor an answer younger than
// freshFor (a request older than that is refused anyway); an answer is
// kept for keep (as long as its sender may retry), and past
// replyCacheSize answers the oldest past freshFor are let go of first.
type replyCache struct {
	mu    sync.Mutex
	m     map[string]*reply
	order []string // ids, oldest first
	keep  time.Duration
	adds  int
	now   func() time.Time // time.Now unless a test sets it
}

type reply struct {
	done chan struct{}
	at   time.Time // when answered (zero: in flight)
	data []byte
	err  error
}

// replyCacheSize is how many answers are kept past their keep time.
const replyCacheSize = 4096

// do runs fn for id once: a request with an id in flight or answered
// waits for that answer. A request without an id runs.
func (c *replyCache) do(id string, fn func() ([]byte, error)) ([]byte, error) {
	if id == "" {
		return fn()
	}
	c.mu.Lock()
	if r := c.m[id]; r != nil {
		c.mu.Unlock()
		<-r.done
		return r.data, r.err
	}
	r := &reply{done: make(chan struct{})}
	c.m[id] = r
	c.order = append(c.order, id)
	if c.adds++; c.adds%256 == 0 || len(c.m) > replyCacheSize {
		c.sweepLocked(c.clock())
	}
	c.mu.Unlock()
	data, err := fn()
	c.mu.Lock()
	r.data, r.err, r.at = data, err, c.clock()
	if errors.Is(err, ErrMoved) {
		// Not an answer: the next owner gives it.
		delete(c.m, id)
	}
	c.mu.Unlock()
	close(r.done)
	return data, err
}

func (c *replyCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// sweepLocked lets go of answers older than keep, and of the oldest
// answers past replyCacheSize; never of a request in flight.
func (c *replyCache) sweepLocked(now time.Time) {
	over := len(c.m) - replyCacheSize
	c.order = slices.DeleteFunc(c.order, func(id string) bool {
		r := c.m[id]
		switch {
		case r == nil:
			return true
		case r.at.IsZero():
			return false
		case now.Sub(r.at) > c.keep || over > 0 && now.Sub(r.at) > freshFor:
			over--
			delete(c.m, id)
			return true
		}
		return false
	})
}

// forwardStats measures forwarded requests.
type forwardStats struct {
	mu      sync.Mutex
	count   int64
	retried int64
	sum     time.Duration
	buckets [len(forwardBuckets) + 1]int64
	failed  atomic.Int64
}

// forwardBuckets are the upper bounds of the forward latency histogram.
var forwardBuckets = [...]time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second}

func (f *forwardStats) observe(d time.Duration, attempt int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count++
	f.sum += d
	if attempt > 0 {
		f.retried++
	}
	i, _ := slices.BinarySearch(forwardBuckets[:], d)
	f.buckets[i]++
}
