package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/ledger"
)

// A ledger of several streams. One stream holds a deployment's ledger
// unless Config.Streams says otherwise. A replicated stream has one leader,
// whose CPU and disk bound it, so a fleet that outgrows it spreads its
// sessions over N streams by session hash: session k lives in stream
// k.Partition(N), the hash the fleet partitions sessions by.
//
// Stream i of the ledger L is named L-i. Its subjects are
// l.<i>.<tenant>.<session> and, in a fleet, l_fence.<i>.<n> (l the
// lowercased name): a one-stream ledger's (l.<tenant>.<session>,
// l_fence.<n>) with the stream's index after the first token. No two
// streams' subjects overlap, so JetStream takes them; they all fall under
// the one-stream ledger's wildcards (l.>, l_fence.>), so a cluster's
// permissions for a ledger's writer need not change when it is spread —
// and JetStream itself refuses a one-stream ledger and a ledger of several
// streams of one name side by side, whose subjects would overlap.
//
// The layout is recorded in every stream's JetStream metadata
// (MetaLedger = L, MetaStreams = N, MetaIndex = i), so that a reader given
// only L finds every stream: a stream named L is a one-stream ledger (it
// carries no layout: it is the stream it always was); else L-0's metadata
// says how many streams there are. A store opened with another number
// than the recorded one is refused (ErrLayout).
//
// A ledger of several streams is for an external server or cluster only:
// the embedded server is one node on one disk, where one stream is not
// what bounds a ledger, and its group fsync (durable.go) serves one
// stream.

// MaxStreams is the most streams one ledger is spread over.
const MaxStreams = 1024

// Keys of the layout a ledger of several streams records in each stream's
// metadata.
const (
	MetaLedger  = "agentledger.ledger"
	MetaStreams = "agentledger.streams"
	MetaIndex   = "agentledger.stream"
)

// ErrLayout means the store was opened with another layout than the
// ledger's recorded one (another number of streams, or a stream of another
// ledger).
var ErrLayout = errors.New("ledger layout")

// shard is one stream of the ledger.
type shard struct {
	index  int
	name   string
	subj   subjects
	fence  string // the first tokens of its fence subjects, e.g. ledger_fence.2
	stream jetstream.Stream
	group  *grouper
}

// ShardName is the name of stream i of the ledger named ledger when it
// has n streams: the ledger's own name when n is 1, else ledger-i.
func ShardName(ledger string, i, n int) string {
	if n <= 1 {
		return ledger
	}
	return ledger + "-" + strconv.Itoa(i)
}

// Streams are the names of the ledger's streams, in order: one, named
// StreamName, unless the ledger is spread over several.
func (s *Store) Streams() []string {
	out := make([]string, len(s.shards))
	for i, sh := range s.shards {
		out[i] = sh.name
	}
	return out
}

// StreamOf is the name of the stream that holds session k.
func (s *Store) StreamOf(k ledger.SessionKey) string { return s.shardOf(k).name }

// shardOf is the stream that holds session k.
func (s *Store) shardOf(k ledger.SessionKey) *shard {
	return s.shards[k.Partition(len(s.shards))]
}

// shardNamed is the stream named name; "" names the only stream of a
// one-stream ledger.
func (s *Store) shardNamed(name string) (*shard, error) {
	if name == "" && len(s.shards) == 1 {
		return s.shards[0], nil
	}
	for _, sh := range s.shards {
		if sh.name == name {
			return sh, nil
		}
	}
	if name == "" {
		return nil, fmt.Errorf("%w: ledger %s has %d streams (%s to %s): name one", ErrLayout, s.cfg.Stream, len(s.shards), s.shards[0].name, s.shards[len(s.shards)-1].name)
	}
	return nil, fmt.Errorf("%w: %s is not a stream of ledger %s (%s)", ErrLayout, name, s.cfg.Stream, strings.Join(s.Streams(), ", "))
}

// shardOfSubject is the stream whose subjects hold subject (a session's or
// a fence's), or nil.
func (s *Store) shardOfSubject(subject string) *shard {
	if len(s.shards) == 1 {
		return s.shards[0]
	}
	first, rest, _ := strings.Cut(subject, ".")
	index, _, _ := strings.Cut(rest, ".")
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || i >= len(s.shards) || strconv.Itoa(i) != index {
		return nil
	}
	if base := strings.ToLower(s.cfg.Stream); first != base && first != base+fenceSuffix {
		return nil
	}
	return s.shards[i]
}

// where names a stream position for messages: "stream seq N" in a
// one-stream ledger, "stream NAME seq N" in one of several.
func (s *Store) where(sh *shard, seq uint64) string {
	if len(s.shards) == 1 {
		return fmt.Sprintf("stream seq %d", seq)
	}
	return fmt.Sprintf("stream %s seq %d", sh.name, seq)
}

// msgStream is what Msg.Stream says of a message of sh: nothing in a
// one-stream ledger.
func (s *Store) msgStream(sh *shard) string {
	if len(s.shards) == 1 {
		return ""
	}
	return sh.name
}

// layoutOf reads the ledger's layout from the server: how many streams
// the ledger named s.cfg.Stream has, 0 when none exists yet. A stream of
// another ledger of several streams under the name is ErrLayout.
func (s *Store) layoutOf(ctx context.Context, js jetstream.JetStream) (int, error) {
	name := s.cfg.Stream
	info, err := streamInfo(ctx, js, name)
	if err != nil || info != nil {
		if err == nil {
			if of, ok := info.Config.Metadata[MetaLedger]; ok {
				return 0, fmt.Errorf("%w: stream %s is stream %s of the ledger %s, spread over %s streams: name the ledger (--stream %s)",
					ErrLayout, name, info.Config.Metadata[MetaIndex], of, info.Config.Metadata[MetaStreams], of)
			}
			return 1, nil
		}
		return 0, s.wrap("stream "+name, err)
	}
	first := ShardName(name, 0, 2)
	info, err = streamInfo(ctx, js, first)
	if err != nil {
		return 0, s.wrap("stream "+first, err)
	}
	if info == nil || info.Config.Metadata[MetaLedger] != name {
		return 0, nil
	}
	n, err := strconv.Atoi(info.Config.Metadata[MetaStreams])
	if err != nil || n < 2 || n > MaxStreams {
		return 0, fmt.Errorf("%w: stream %s records %s=%q, not a number of streams from 2 to %d", ErrLayout, first, MetaStreams, info.Config.Metadata[MetaStreams], MaxStreams)
	}
	return n, nil
}

// streamInfo is the named stream's info, nil when there is no such
// stream.
func streamInfo(ctx context.Context, js jetstream.JetStream, name string) (*jetstream.StreamInfo, error) {
	st, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return st.CachedInfo(), nil
}

// planLayout decides the ledger's streams: the recorded layout, which an
// explicit Config.Streams must match, or Config.Streams (default one) for
// a ledger that does not exist yet.
func (s *Store) planLayout(ctx context.Context, js jetstream.JetStream) error {
	recorded, err := s.layoutOf(ctx, js)
	if err != nil {
		return err
	}
	n := max(s.cfg.Streams, 1)
	switch {
	case recorded > 0 && s.cfg.Streams > 0 && recorded != s.cfg.Streams:
		return fmt.Errorf("%w: ledger %s is spread over %d stream(s) (recorded in %s); this store was opened with --streams %d: give %d, or leave it out to take the ledger's own",
			ErrLayout, s.cfg.Stream, recorded, ShardName(s.cfg.Stream, 0, recorded), s.cfg.Streams, recorded)
	case recorded > 0:
		n = recorded
	}
	return s.setShards(n)
}

// setShards names the ledger's n streams and their subjects.
func (s *Store) setShards(n int) error {
	if n > 1 && s.srv != nil {
		return fmt.Errorf("%w: a ledger of %d streams needs an external NATS server or cluster (--nats): the embedded server is one node, where one stream is not what bounds the ledger", ErrLayout, n)
	}
	// The last name is the longest.
	if last := ShardName(s.cfg.Stream, n-1, n); !streamName.MatchString(last) {
		return fmt.Errorf("stream name %q (the last of the %d streams of ledger %s): want 1-64 of [A-Za-z0-9_-]", last, n, s.cfg.Stream)
	}
	base := strings.ToLower(s.cfg.Stream)
	shards := make([]*shard, n)
	for i := range n {
		sh := &shard{index: i, name: ShardName(s.cfg.Stream, i, n), subj: subjects{prefix: base}, fence: base + fenceSuffix}
		if n > 1 {
			sh.subj.prefix += "." + strconv.Itoa(i)
			sh.fence += "." + strconv.Itoa(i)
		}
		shards[i] = sh
	}
	s.shards = shards
	return nil
}

// layoutMeta is the metadata stream i of n records (none in a one-stream
// ledger, whose stream is as it always was).
func (s *Store) layoutMeta(sh *shard) map[string]string {
	if len(s.shards) == 1 {
		return nil
	}
	return map[string]string{MetaLedger: s.cfg.Stream, MetaStreams: strconv.Itoa(len(s.shards)), MetaIndex: strconv.Itoa(sh.index)}
}

// checkMeta refuses an existing stream whose recorded layout is not sh's.
func (s *Store) checkMeta(sh *shard, got map[string]string) error {
	want := s.layoutMeta(sh)
	for _, k := range []string{MetaLedger, MetaStreams, MetaIndex} {
		if got[k] != want[k] {
			return fmt.Errorf("%w: stream %s records %s=%q, want %q (stream %d of the %d of ledger %s)", ErrLayout, sh.name, k, got[k], want[k], sh.index, len(s.shards), s.cfg.Stream)
		}
	}
	return nil
}
