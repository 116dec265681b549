package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/ledger"
)

// Filter selects sessions. Empty fields match everything.
type Filter struct {
	Tenant  string
	Session string
}

// Match reports whether f selects session k.
func (f Filter) Match(k ledger.SessionKey) bool {
	return (f.Tenant == "" || f.Tenant == k.Tenant) && (f.Session == "" || f.Session == k.Session)
}

// SessionInfo describes one stored session.
type SessionInfo struct {
	Tenant   string `json:"tenant_id"`
	Session  string `json:"session_id"`
	Count    uint64 `json:"count"`
	HeadSeq  uint64 `json:"head_seq"`
	HeadHash string `json:"head_hash"`
	FirstTs  int64  `json:"first_ts_unix_ms"`
	LastTs   int64  `json:"last_ts_unix_ms"`
	Subject  string `json:"subject"`
	// Stream is the stream that holds the session, in a ledger of
	// several streams.
	Stream string `json:"stream,omitempty"`
}

// Key returns the session's key.
func (i SessionInfo) Key() ledger.SessionKey {
	return ledger.SessionKey{Tenant: i.Tenant, Session: i.Session}
}

// Sessions lists the stored sessions that match f, ordered by tenant and
// session, with their envelope count, head and first and last timestamps:
// of every stream of the ledger.
func (s *Store) Sessions(ctx context.Context, f Filter) ([]SessionInfo, error) {
	var out []SessionInfo
	for _, sh := range s.shardsOf(f) {
		infos, err := s.sessionsIn(ctx, sh, f)
		if err != nil {
			return nil, err
		}
		out = append(out, infos...)
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		if a.Key().Less(b.Key()) {
			return -1
		}
		if b.Key().Less(a.Key()) {
			return 1
		}
		return 0
	})
	return out, nil
}

// shardsOf are the streams that can hold sessions f selects: one when f
// names a session of a tenant, else all.
func (s *Store) shardsOf(f Filter) []*shard {
	if f.Tenant != "" && f.Session != "" {
		return []*shard{s.shardOf(ledger.SessionKey{Tenant: f.Tenant, Session: f.Session})}
	}
	return s.shards
}

// sessionsIn lists the sessions f selects in one stream, unordered.
func (s *Store) sessionsIn(ctx context.Context, sh *shard, f Filter) ([]SessionInfo, error) {
	counts, err := s.subjectCounts(ctx, sh, f)
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, 0, len(counts))
	for subj, n := range counts {
		k, err := sh.subj.key(subj)
		if err != nil || !f.Match(k) {
			continue
		}
		info := SessionInfo{Tenant: k.Tenant, Session: k.Session, Count: n, Subject: subj, Stream: s.msgStream(sh)}
		rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		last, err := sh.stream.GetLastMsgForSubject(rctx, subj)
		if err == nil {
			var first *jetstream.RawStreamMsg
			first, err = sh.stream.GetMsg(rctx, 1, jetstream.WithGetMsgSubject(subj))
			if err == nil {
				// A damaged envelope leaves its fields zero here; verify
				// reports what is wrong with it.
				if e, derr := ledger.Decode(first.Data, s.cfg.Limits); derr == nil {
					info.FirstTs = e.TsUnixMs()
				}
				if e, derr := ledger.Decode(last.Data, s.cfg.Limits); derr == nil {
					info.HeadSeq, info.HeadHash, info.LastTs = e.Seq(), e.Hash(), e.TsUnixMs()
				}
			}
		}
		cancel()
		if err != nil {
			return nil, s.wrap("session "+k.String(), err)
		}
		out = append(out, info)
	}
	return out, nil
}

// subjectCounts returns the message count of every subject of sh matching
// f.
func (s *Store) subjectCounts(ctx context.Context, sh *shard, f Filter) (map[string]uint64, error) {
	filter := sh.subj.all()
	switch {
	case f.Tenant != "" && f.Session != "":
		filter = sh.subj.of(ledger.SessionKey{Tenant: f.Tenant, Session: f.Session})
	case f.Tenant != "":
		filter = sh.subj.tenant(f.Tenant)
	case f.Session != "":
		filter = sh.subj.session(f.Session)
	}
	ctx, cancel := context.WithTimeout(ctx, 4*s.cfg.Timeout)
	defer cancel()
	info, err := sh.stream.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, s.wrap("stream info", err)
	}
	return info.State.Subjects, nil
}

// Tenants returns the tenants that hold a session with this id, sorted.
func (s *Store) Tenants(ctx context.Context, session string) ([]string, error) {
	var out []string
	for _, sh := range s.shards {
		counts, err := s.subjectCounts(ctx, sh, Filter{Session: session})
		if err != nil {
			return nil, err
		}
		for subj := range counts {
			if k, err := sh.subj.key(subj); err == nil && k.Session == session {
				out = append(out, k.Tenant)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Msg is one stored message.
type Msg struct {
	Data      []byte // the envelope's stored bytes; valid only during the callback
	Subject   string
	StreamSeq uint64
	// Stream is the stream the message is in, in a ledger of several
	// streams, where a stream sequence alone names no message; empty in a
	// one-stream ledger (StreamName is its stream).
	Stream string
}

// Where names the message's place: "stream seq N", or "stream NAME seq
// N" in a ledger of several streams.
func (m Msg) Where() string {
	if m.Stream == "" {
		return fmt.Sprintf("stream seq %d", m.StreamSeq)
	}
	return fmt.Sprintf("stream %s seq %d", m.Stream, m.StreamSeq)
}

// ReadSession calls fn with each stored message of one session in stream
// order, which is seq order for an intact chain.
func (s *Store) ReadSession(ctx context.Context, k ledger.SessionKey, fn func(Msg) error) error {
	return s.ReadSessionFrom(ctx, k, 0, fn)
}

// ReadSessionFrom is ReadSession from stream sequence from on: a reader
// that has folded a session up to some message catches up with what was
// appended after it, without reading the session again.
//
// from is a sequence of the stream that holds the session (StreamOf).
func (s *Store) ReadSessionFrom(ctx context.Context, k ledger.SessionKey, from uint64, fn func(Msg) error) error {
	sh := s.shardOf(k)
	subj := sh.subj.of(k)
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	last, err := sh.stream.GetLastMsgForSubject(rctx, subj)
	cancel()
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return s.wrap("read "+k.String(), err)
	}
	if last.Sequence < from {
		return nil
	}
	return s.readFrom(ctx, sh, subj, from, last.Sequence, fn)
}

// ReadAll calls fn with every stored message matching f, in stream order,
// up to the stream's last message when ReadAll started. A ledger of
// several streams is read stream after stream, in the order of Streams.
func (s *Store) ReadAll(ctx context.Context, f Filter, fn func(Msg) error) error {
	if f.Session != "" {
		if f.Tenant == "" {
			f.Tenant = ledger.DefaultTenant
		}
		return s.ReadSession(ctx, ledger.SessionKey{Tenant: f.Tenant, Session: f.Session}, fn)
	}
	for _, sh := range s.shards {
		if err := s.readAllIn(ctx, sh, f.Tenant, fn); err != nil {
			return err
		}
	}
	return nil
}

// readAllIn is ReadAll of one stream, of one tenant unless tenant is "".
func (s *Store) readAllIn(ctx context.Context, sh *shard, tenant string, fn func(Msg) error) error {
	subj := sh.subj.all()
	if tenant != "" {
		subj = sh.subj.tenant(tenant)
	}
	ictx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	info, err := sh.stream.Info(ictx)
	cancel()
	if err != nil {
		return s.wrap("stream info", err)
	}
	last, err := s.lastLedgerSeq(ctx, sh, info)
	if err != nil || last == 0 {
		return err
	}
	if tenant != "" {
		lctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		m, err := sh.stream.GetLastMsgForSubject(lctx, subj)
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return s.wrap("read tenant "+tenant, err)
		}
		last = m.Sequence
	}
	return s.readFrom(ctx, sh, subj, 0, last, fn)
}

// ReadStream calls fn with every stored message of a one-stream ledger
// from stream sequence from on (0 or 1: the first), in stream order, up to
// the stream's last message when ReadStream started: the log a checkpoint
// commits to. A ledger of several streams is read with ReadStreamOf.
func (s *Store) ReadStream(ctx context.Context, from uint64, fn func(Msg) error) error {
	return s.ReadStreamOf(ctx, "", from, fn)
}

// ReadStreamOf is ReadStream of the ledger's stream named stream ("": the
// only one).
func (s *Store) ReadStreamOf(ctx context.Context, stream string, from uint64, fn func(Msg) error) error {
	sh, err := s.shardNamed(stream)
	if err != nil {
		return err
	}
	ictx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	info, err := sh.stream.Info(ictx)
	cancel()
	if err != nil {
		return s.wrap("stream info", err)
	}
	last, err := s.lastLedgerSeq(ctx, sh, info)
	if err != nil || last < max(from, 1) {
		return err
	}
	return s.readFrom(ctx, sh, sh.subj.all(), from, last, fn)
}

// readFrom delivers the messages on subj of sh from stream sequence from
// on (0: from the start) up to stream sequence last, through an ordered
// consumer.
func (s *Store) readFrom(ctx context.Context, sh *shard, subj string, from, last uint64, fn func(Msg) error) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	cons, err := s.js.OrderedConsumer(ctx, sh.name, cfg)
	if err != nil {
		return s.wrap("read "+subj, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(512))
	if err != nil {
		return s.wrap("read "+subj, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return s.wrap("read "+subj, err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("read %s: %w", subj, err)
		}
		if err := fn(Msg{Data: m.Data(), Subject: m.Subject(), StreamSeq: meta.Sequence.Stream, Stream: s.msgStream(sh)}); err != nil {
			return err
		}
		if meta.Sequence.Stream >= last {
			return nil
		}
	}
}

// Verify checks every chain matching f in mode m. Each message is checked
// against the session its subject names.
func (s *Store) Verify(ctx context.Context, f Filter, m ledger.Mode, progress func(done uint64)) (*ledger.Report, error) {
	v := ledger.NewVerifier(m, s.cfg.Limits)
	if err := s.Feed(ctx, f, v, progress); err != nil {
		return nil, err
	}
	return v.Report(), nil
}

// Feed reads every envelope of the sessions f selects, in stream order,
// into v (which may carry checks of its own: see ledger.Verifier.With).
func (s *Store) Feed(ctx context.Context, f Filter, v *ledger.Verifier, progress func(done uint64)) error {
	var n uint64
	return s.ReadAll(ctx, f, func(msg Msg) error {
		k, err := s.keyOf(msg.Subject)
		if err != nil {
			return err
		}
		if !f.Match(k) {
			return nil
		}
		v.Add(msg.Data, ledger.Position{StreamSeq: msg.StreamSeq, Stream: msg.Stream, Expect: &k})
		n++
		if progress != nil && n%1024 == 0 {
			progress(n)
		}
		return nil
	})
}

// Export writes every session matching f as a bundle, ordered by tenant,
// session and seq, with each envelope's stored bytes unchanged.
func (s *Store) Export(ctx context.Context, f Filter, w *ledger.BundleWriter, progress func(done uint64)) error {
	infos, err := s.Sessions(ctx, f)
	if err != nil {
		return err
	}
	var n uint64
	for _, info := range infos {
		err := s.ReadSession(ctx, info.Key(), func(m Msg) error {
			n++
			if progress != nil && n%1024 == 0 {
				progress(n)
			}
			return w.WriteRaw(m.Data)
		})
		if err != nil {
			return err
		}
	}
	return w.Flush()
}

// keyOf is the session whose subject subject is.
func (s *Store) keyOf(subject string) (ledger.SessionKey, error) {
	sh := s.shardOfSubject(subject)
	if sh == nil {
		return ledger.SessionKey{}, fmt.Errorf("subject %q is in none of the streams of ledger %s", subject, s.cfg.Stream)
	}
	return sh.subj.key(subject)
}

// Tail calls fn with each message stored after Tail starts (or, with from >
// 0, from that stream sequence on), until ctx ends or fn fails. A ledger of
// several streams is followed in all of them at once, fn called for one
// message at a time, in each stream's order; from > 0 then names no
// message (ErrLayout): see TailOf.
func (s *Store) Tail(ctx context.Context, f Filter, from uint64, fn func(Msg) error) error {
	shards := s.shardsOf(f)
	if len(shards) == 1 {
		return s.tail(ctx, shards[0], f, from, fn)
	}
	if from > 0 {
		return fmt.Errorf("%w: tail from stream seq %d: ledger %s has %d streams: name one (TailOf)", ErrLayout, from, s.cfg.Stream, len(shards))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	errs := make(chan error, len(shards))
	for _, sh := range shards {
		go func() {
			errs <- s.tail(ctx, sh, f, 0, func(m Msg) error {
				mu.Lock()
				defer mu.Unlock()
				if ctx.Err() != nil {
					return nil
				}
				return fn(m)
			})
		}()
	}
	var first error
	for range shards {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// TailOf is Tail of the stream named stream ("": the only one) from its
// stream sequence from on.
func (s *Store) TailOf(ctx context.Context, stream string, f Filter, from uint64, fn func(Msg) error) error {
	sh, err := s.shardNamed(stream)
	if err != nil {
		return err
	}
	return s.tail(ctx, sh, f, from, fn)
}

// tail is Tail of one stream.
func (s *Store) tail(ctx context.Context, sh *shard, f Filter, from uint64, fn func(Msg) error) error {
	subj := sh.subj.all()
	switch {
	case f.Tenant != "" && f.Session != "":
		subj = sh.subj.of(ledger.SessionKey{Tenant: f.Tenant, Session: f.Session})
	case f.Tenant != "":
		subj = sh.subj.tenant(f.Tenant)
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}, DeliverPolicy: jetstream.DeliverNewPolicy}
	if from > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	cons, err := s.js.OrderedConsumer(ctx, sh.name, cfg)
	if err != nil {
		return s.wrap("tail", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return s.wrap("tail", err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return s.wrap("tail", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("tail: %w", err)
		}
		if err := fn(Msg{Data: m.Data(), Subject: m.Subject(), StreamSeq: meta.Sequence.Stream, Stream: s.msgStream(sh)}); err != nil {
			return err
		}
	}
}

// HashAt returns the hash of a session's stored envelope at seq, and
// whether the session holds one. It reads the session from its start.
func (s *Store) HashAt(ctx context.Context, k ledger.SessionKey, seq uint64) (string, bool, error) {
	var hash string
	found := false
	errStop := errors.New("stop")
	err := s.ReadSession(ctx, k, func(m Msg) error {
		e, err := ledger.Decode(m.Data, s.cfg.Limits)
		if err != nil {
			return nil // a malformed envelope is verify's to report
		}
		if e.Seq() == seq && e.Key() == k {
			hash, found = e.Hash(), true
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return "", false, err
	}
	return hash, found, nil
}
