// Package store keeps ledger envelopes in a NATS JetStream stream: an
// embedded nats-server with file storage by default, or an external server
// or cluster, where one ledger may also be spread over several streams by
// session hash (see Config.Streams).
//
// Every session is one subject, <prefix>.<tenant>.<escaped session>. An
// append publishes with the expected last sequence of its subject and with
// the envelope hash as Nats-Msg-Id, so concurrent writers, in one process or
// many, always produce one linear chain, and a retried publish is never
// stored twice.
package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentledger/agentledger/ledger"
)

// Sentinel errors callers branch on.
var (
	// ErrUnavailable means the NATS server or its JetStream cannot be
	// reached, or did not answer in time.
	ErrUnavailable = errors.New("store unavailable")
	// ErrConflict means an append lost the race for a session's head more
	// often than it may retry.
	ErrConflict = errors.New("append conflict")
	// ErrSessionMismatch means an import brings envelopes that differ from
	// those the store already holds for the session.
	ErrSessionMismatch = errors.New("session differs from the stored one")
	// ErrLocked means another process owns the data directory.
	ErrLocked = errors.New("data directory in use")
	// ErrNoLedger means a data directory opened with NoCreate holds no
	// ledger.
	ErrNoLedger = errors.New("no ledger here")
)

// SyncPolicy says when the embedded server fsyncs the stream.
type SyncPolicy string

const (
	// SyncAlways fsyncs every write before it is acknowledged: an
	// acknowledged append survives a process crash and a power loss.
	SyncAlways SyncPolicy = "always"
	// SyncInterval writes every message to the OS before acknowledging it
	// and fsyncs on an interval: an acknowledged append survives a process
	// crash; a power loss or kernel crash can lose what was acknowledged
	// since the last fsync.
	SyncInterval SyncPolicy = "interval"
)

// Defaults.
const (
	DefaultStream       = "LEDGER"
	DefaultDataDir      = "ledger-data"
	DefaultSyncInterval = 2 * time.Minute
	// DuplicateWindow is how long the stream remembers Nats-Msg-Id values,
	// and so how late a retry after a lost acknowledgement may come.
	DuplicateWindow = 10 * time.Minute
)

// Config says which stream to use and how to reach it.
type Config struct {
	// URL of an external NATS server or cluster. Empty starts the embedded
	// server on DataDir.
	URL string
	// DataDir holds the embedded server's file store. Default "ledger-data".
	DataDir string
	// Stream is the JetStream stream name. Default "LEDGER"; its subjects
	// are the lowercased name followed by ".>". A ledger of several streams
	// is named by it too: its streams are Stream-0 to Stream-(N-1).
	Stream string
	// Streams is how many streams the ledger is spread over, by session
	// hash (streams.go): 0 takes the ledger's recorded layout, or one
	// stream for a ledger that does not exist yet; 1 is the one stream
	// named Stream; 2 to MaxStreams, on an external server only, are the
	// streams Stream-0 to Stream-(N-1). A number other than the ledger's
	// recorded one is refused (ErrLayout).
	Streams int
	// Replicas of the stream when this process creates it. Default 1.
	Replicas int
	// Sync is the embedded server's fsync policy. Default SyncAlways.
	Sync SyncPolicy
	// SyncEvery is the fsync interval under SyncInterval. Default 2m.
	SyncEvery time.Duration
	// Listen, for the embedded server, is a host:port to accept other
	// processes on. Empty accepts in-process connections only.
	Listen string
	// LocalClients says Listen serves this machine's agentledger programs
	// (a reader's ledger command) and this process stays the writer of its
	// sessions: short runs stay plain publishes (see ShortRun). A write by
	// another program that comes between two of them is a conflict, which
	// the writer finds and records.
	LocalClients bool
	// NoCreate refuses a data directory that holds no ledger yet
	// (ErrNoLedger) instead of creating one: what a command that only
	// reads wants.
	NoCreate bool
	// OnLost, for an external server, is called once when the connection
	// to it drops: an engine recording through another local process that
	// held the data directory stops when that process goes away, for the
	// next hook to start one that holds the directory itself.
	OnLost func()
	// Limits bound every envelope appended or imported.
	Limits ledger.Limits
	// Timeout bounds each request to the server. Default 5s.
	Timeout time.Duration
	// NoAtomicBatch stores several envelopes with one publish each instead
	// of as one atomic batch, always. On a single-node file stream every
	// atomic batch gets its own staging file store (a few ms each); this
	// trades the all-or-nothing guarantee for latency.
	NoAtomicBatch bool
	// AtomicBatch stores every run of several envelopes as an atomic batch,
	// also short runs on the embedded server (see ShortRun).
	AtomicBatch bool
	// Fences creates the stream with a fleet's fence subjects beside the
	// ledger's (see Fence), so that no stream update is needed later.
	Fences bool
	// RetryFor is how long an append keeps retrying while the server is
	// unreachable (a restart, a leader election) before it gives up.
	// Default 30s.
	RetryFor time.Duration
}

var streamName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Store is a ledger on one JetStream stream, or spread over several. It is
// safe for concurrent use.
type Store struct {
	cfg Config
	// shards are the ledger's streams, in order: one unless the ledger is
	// spread over several (streams.go).
	shards []*shard
	srv    *server.Server // nil when external
	unlock func()
	// announce writes who holds the data directory into its lock file.
	announce func(Holder)
	nc       *nats.Conn
	js       jetstream.JetStream

	locks   [64]sync.Mutex // serialize appends per session within this process
	mu      sync.Mutex
	heads   map[ledger.SessionKey]cachedHead
	noBatch atomic.Bool // the server refused an atomic batch
	// syncer fsyncs the embedded server's stream for this process and
	// the writers recording through it (group fsync, durable.go); nil
	// when the server syncs every write itself or is not embedded.
	syncer *syncer
	// others fsync other streams writers record on through this server
	// (guarded by mu); storeDir is the server's store directory.
	others   map[string]*syncer
	storeDir string
	// plainShort: short runs go one publish after the other (see ShortRun).
	plainShort bool
	// fencer, when set, fences every append (guarded by mu; fence.go).
	fencer Fencer
	// writerPass is the embedded server's writer password.
	writerPass string
}

type cachedHead struct {
	head      ledger.Head
	streamSeq uint64 // 0: the session is empty
}

// Open connects to (or starts) the server and makes sure the stream exists.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	if !streamName.MatchString(cfg.Stream) {
		return nil, fmt.Errorf("stream name %q: want 1-64 of [A-Za-z0-9_-]", cfg.Stream)
	}
	if cfg.Streams < 0 || cfg.Streams > MaxStreams {
		return nil, fmt.Errorf("%d streams: want 1 to %d (0: the ledger's own layout)", cfg.Streams, MaxStreams)
	}
	if cfg.Streams > 1 && cfg.URL == "" {
		return nil, fmt.Errorf("%w: a ledger of %d streams needs an external NATS server or cluster (--nats): the embedded server is one node, where one stream is not what bounds the ledger", ErrLayout, cfg.Streams)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Sync == "" {
		cfg.Sync = SyncAlways
	}
	if cfg.Sync != SyncAlways && cfg.Sync != SyncInterval {
		return nil, fmt.Errorf("sync policy %q: want always or interval", cfg.Sync)
	}
	if cfg.SyncEvery <= 0 {
		cfg.SyncEvery = DefaultSyncInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = 30 * time.Second
	}
	s := &Store{cfg: cfg, heads: make(map[ledger.SessionKey]cachedHead)}
	s.noBatch.Store(cfg.NoAtomicBatch)
	var err error
	if cfg.URL == "" {
		err = s.startEmbedded(ctx)
	} else {
		err = s.connectExternal(ctx)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	for _, sh := range s.shards {
		sh.group = newGrouper(s)
	}
	return s, nil
}

// Close disconnects and, for the embedded server, shuts it down.
func (s *Store) Close() error {
	for _, sh := range s.shards {
		if sh.group != nil {
			sh.group.close() // appends after this answer ErrUnavailable
		}
	}
	if s.srv != nil {
		// The server stops taking writes before the last fsync.
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
	}
	if s.syncer != nil {
		s.syncer.close()
		s.mu.Lock()
		for _, y := range s.others {
			y.close()
		}
		s.mu.Unlock()
	}
	if s.nc != nil {
		s.nc.Close()
	}
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
	return nil
}

// ClientURL is the URL other processes use to reach the embedded server
// started with Listen, with the writer's credentials in it; "" otherwise.
// It is a secret: print RedactURL(ClientURL()).
func (s *Store) ClientURL() string {
	if s.srv == nil || s.cfg.Listen == "" {
		return ""
	}
	u := s.srv.ClientURL()
	if scheme, rest, ok := strings.Cut(u, "://"); ok {
		return scheme + "://" + LedgerUser + ":" + s.writerPass + "@" + rest
	}
	return u
}

// WriterSecretFile is where a data directory keeps the embedded server's
// writer password.
const WriterSecretFile = "keys/nats-writer.secret"

// WriterSecret reads the writer password of the embedded server on dir,
// generating it (0600, in a 0700 keys directory) when create is set and it
// does not exist yet.
func WriterSecret(dir string, create bool) (string, error) {
	s, err := SecretFile(filepath.Join(dir, WriterSecretFile), create)
	if err != nil {
		return "", fmt.Errorf("writer secret: %w", err)
	}
	return s, nil
}

// SecretFile reads the secret (64 hex digits) in file p, generating it
// (0600, in a 0700 directory) when create is set and it does not exist.
func SecretFile(p string, create bool) (string, error) {
	raw, err := os.ReadFile(p)
	if err == nil {
		if s := strings.TrimSpace(string(raw)); len(s) >= 32 {
			return s, nil
		}
		return "", fmt.Errorf("%s: not a secret", p)
	}
	if !errors.Is(err, os.ErrNotExist) || !create {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	secret := hex.EncodeToString(b)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	_, err = f.WriteString(secret + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return secret, nil
}

// withoutUser drops the user and password from a URL.
func withoutUser(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if at := strings.LastIndex(rest, "@"); ok && at >= 0 {
		return scheme + "://" + rest[at+1:]
	}
	return u
}

// RedactURL drops any password from a NATS URL, for printing.
func RedactURL(u string) string { return redactURL(u) }

// Announce says, in the data directory's lock file, which program holds it
// and what it serves (an engine's socket), so that another process that
// finds the directory taken can say how to reach it. The embedded server's
// client URL is filled in. A no-op for an external server.
func (s *Store) Announce(program, socket string) {
	if s.announce == nil {
		return
	}
	s.announce(Holder{PID: os.Getpid(), Program: program, NATSURL: withoutUser(s.ClientURL()), Socket: socket})
}

// StreamName returns the ledger's name: its stream's, or, spread over
// several streams, the name they are named after (see Streams).
func (s *Store) StreamName() string { return s.cfg.Stream }

// Subject returns the subject that holds a session's envelopes.
func (s *Store) Subject(k ledger.SessionKey) string { return s.shardOf(k).subj.of(k) }

// denied is what the ledger's own user may never do to a stream: delete or
// purge it or its messages, or loosen its configuration (an update could
// add a MaxAge that expires the history).
var denied = []string{
	"$JS.API.STREAM.DELETE.>",
	"$JS.API.STREAM.PURGE.>",
	"$JS.API.STREAM.MSG.DELETE.>",
	"$JS.API.STREAM.UPDATE.>",
	"$JS.API.STREAM.RESTORE.>",
	"$JS.API.ACCOUNT.PURGE.>",
}

// LedgerUser and AdminUser are the embedded server's users; it accepts no
// connection without credentials. LedgerUser is agentledger's writer: it may
// append, but not delete, purge or reconfigure the stream; its password is
// generated into DATA/keys/nats-writer.secret (0600) on first use, where
// local clients read it (WriterSecret), and remote ones are given it. AdminUser
// has a random password that lives only in the process that started the
// server, which uses it once to create the stream.
const (
	LedgerUser = "ledger"
	AdminUser  = "admin"
)

// groupSync reports whether the embedded server leaves SyncAlways to the
// store (durable.go): only when it serves no client but this process and
// this machine's agentledger programs, which ask for the fsync.
func (s *Store) groupSync() bool {
	return s.cfg.Sync == SyncAlways && (s.cfg.Listen == "" || s.cfg.LocalClients)
}

func (s *Store) startEmbedded(ctx context.Context) error {
	dir, err := filepath.Abs(s.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if s.cfg.NoCreate {
		if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
			return fmt.Errorf("%w: %s holds no ledger (nothing has been recorded there; --data or LEDGER_DATA names another)", ErrNoLedger, dir)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	unlock, announce, err := lockDir(dir)
	if err != nil {
		return err
	}
	s.unlock, s.announce = unlock, announce
	pw := make([]byte, 24)
	if _, err := rand.Read(pw); err != nil {
		return fmt.Errorf("admin password: %w", err)
	}
	adminPass := hex.EncodeToString(pw)
	writerPass, err := WriterSecret(dir, true)
	if err != nil {
		return err
	}
	s.writerPass = writerPass
	opts := &server.Options{
		ServerName: embeddedServerName,
		JetStream:  true,
		StoreDir:   dir,
		// Under SyncAlways the store fsyncs the stream itself, in groups,
		// unless the server serves other clients (durable.go).
		SyncAlways:   s.cfg.Sync == SyncAlways && !s.groupSync(),
		SyncInterval: s.cfg.SyncEvery,
		NoLog:        true,
		NoSigs:       true,
		MaxPayload:   int32(2*maxBytes(s.cfg.Limits) + 4096),
		Users: []*server.User{
			{Username: AdminUser, Password: adminPass},
			{Username: LedgerUser, Password: writerPass, Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: denied},
			}},
		},
	}
	if s.cfg.Listen == "" {
		opts.DontListen = true
	} else {
		host, port, err := net.SplitHostPort(s.cfg.Listen)
		if err != nil {
			return fmt.Errorf("listen %q: %w", s.cfg.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return fmt.Errorf("listen %q: bad port", s.cfg.Listen)
		}
		if p == 0 {
			p = server.RANDOM_PORT
		}
		opts.Host, opts.Port = host, p
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("embedded server: %w", err)
	}
	s.srv = srv
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		return fmt.Errorf("embedded server did not start: %w", ErrUnavailable)
	}
	admin, err := nats.Connect("", nats.InProcessServer(srv), nats.UserInfo(AdminUser, adminPass))
	if err != nil {
		return fmt.Errorf("connect embedded server: %w: %w", ErrUnavailable, err)
	}
	ajs, err := jetstream.New(admin)
	if err == nil {
		err = s.ensureLayout(ctx, ajs)
	}
	admin.Close()
	if err != nil {
		return err
	}
	nc, err := nats.Connect("", nats.InProcessServer(srv), nats.Name("agentledger"), nats.UserInfo(LedgerUser, writerPass))
	if err != nil {
		return fmt.Errorf("connect embedded server: %w: %w", ErrUnavailable, err)
	}
	if err := s.attach(ctx, nc); err != nil {
		return err
	}
	if s.groupSync() {
		s.storeDir, s.others = dir, map[string]*syncer{}
		if s.syncer, err = newSyncer(dir, s.cfg.Stream); err != nil {
			return err
		}
	}
	if err := s.serveSync(); err != nil {
		return fmt.Errorf("group fsync: %w", err)
	}
	s.Announce(programName(), "")
	return nil
}

// programName names this process for a lock file: its program and
// command, e.g. "ledger append".
func programName() string {
	name := filepath.Base(os.Args[0])
	for _, a := range os.Args[1:] {
		if !strings.HasPrefix(a, "-") {
			return name + " " + a
		}
	}
	return name
}

func maxBytes(l ledger.Limits) int {
	if l.MaxBytes <= 0 {
		return ledger.DefaultMaxBytes
	}
	return l.MaxBytes
}

func (s *Store) connectExternal(ctx context.Context) error {
	opts := []nats.Option{}
	if !strings.Contains(s.cfg.URL, "@") {
		// A local agentledger server: its writer secret is in the data
		// directory it runs on, which local clients name with --data.
		if secret, err := WriterSecret(s.cfg.DataDir, false); err == nil {
			opts = append(opts, nats.UserInfo(LedgerUser, secret))
		}
	}
	if lost := s.cfg.OnLost; lost != nil {
		var once sync.Once
		opts = append(opts, nats.DisconnectErrHandler(func(*nats.Conn, error) { once.Do(lost) }))
	}
	nc, err := nats.Connect(s.cfg.URL, append(opts,
		nats.Name("agentledger"),
		nats.Timeout(s.cfg.Timeout),
		nats.RetryOnFailedConnect(false),
		nats.MaxReconnects(-1),
		// No buffering while reconnecting: a publish the caller was told
		// failed must not land later, when the caller may have acted on
		// the failure.
		nats.ReconnectBufSize(-1),
	)...)
	if err != nil {
		return fmt.Errorf("connect %s: %w: %w", redactURL(s.cfg.URL), ErrUnavailable, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("jetstream: %w", err)
	}
	// A cluster that is starting has no JetStream leader yet: wait for
	// one as an append waits out an election (RetryFor).
	start := time.Now()
	err = s.ensureLayout(ctx, js)
	for wait := 0; err != nil && errors.Is(err, ErrUnavailable) && time.Since(start) < s.cfg.RetryFor; wait++ {
		if !sleep(ctx, min(100*time.Millisecond<<min(wait, 4), time.Second)) {
			break
		}
		err = s.ensureLayout(ctx, js)
	}
	if err == nil && len(s.shards) > 1 && nc.ConnectedServerName() == embeddedServerName {
		err = fmt.Errorf("%w: a ledger of %d streams needs a NATS server or cluster of its own: %s is agentledger's embedded server (ledger serve), which holds one stream", ErrLayout, len(s.shards), redactURL(s.cfg.URL))
	}
	if err != nil {
		nc.Close()
		return err
	}
	return s.attach(ctx, nc)
}

// redactURL drops any password from a NATS URL before it is printed.
func redactURL(u string) string {
	if at := strings.LastIndex(u, "@"); at >= 0 {
		if scheme := strings.Index(u, "://"); scheme >= 0 && scheme < at {
			return u[:scheme+3] + "***@" + u[at+1:]
		}
		return "***@" + u[at+1:]
	}
	return u
}

func (s *Store) attach(ctx context.Context, nc *nats.Conn) error {
	s.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	s.js = js
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	for _, sh := range s.shards {
		if sh.stream, err = js.Stream(ctx, sh.name); err != nil {
			return s.wrap(fmt.Sprintf("stream %s", sh.name), err)
		}
	}
	if info := s.shards[0].stream.CachedInfo(); info != nil {
		staged := info.Config.Replicas <= 1 && info.Config.Storage == jetstream.FileStorage
		soleWriter := s.srv != nil && (s.cfg.Listen == "" || s.cfg.LocalClients)
		s.plainShort = staged && soleWriter && !s.cfg.AtomicBatch
	}
	return nil
}

// streamConfig is the configuration of a ledger stream.
func (s *Store) streamConfig(sh *shard) jetstream.StreamConfig {
	desc := "agentledger: hash-chained envelopes, append-only"
	if len(s.shards) > 1 {
		desc = fmt.Sprintf("agentledger: hash-chained envelopes, append-only; stream %d of the %d of ledger %s", sh.index, len(s.shards), s.cfg.Stream)
	}
	return jetstream.StreamConfig{
		Name:               sh.name,
		Description:        desc,
		Subjects:           s.subjectsToCreate(sh),
		Retention:          jetstream.LimitsPolicy,
		MaxMsgs:            -1,
		MaxBytes:           -1,
		MaxAge:             0,
		MaxMsgSize:         int32(maxBytes(s.cfg.Limits)),
		Discard:            jetstream.DiscardNew,
		Storage:            jetstream.FileStorage,
		Replicas:           s.cfg.Replicas,
		Duplicates:         DuplicateWindow,
		DenyDelete:         true,
		DenyPurge:          true,
		AllowRollup:        false,
		AllowDirect:        false, // reads of a session head go to the leader
		AllowAtomicPublish: true,
		Metadata:           s.layoutMeta(sh),
	}
}

func (s *Store) subjectsToCreate(sh *shard) []string {
	if s.cfg.Fences {
		return []string{sh.subj.all(), sh.fenceAll()}
	}
	return []string{sh.subj.all()}
}

// ensureLayout decides the ledger's streams (planLayout) and makes sure
// each exists and is fit to hold its part of the ledger.
func (s *Store) ensureLayout(ctx context.Context, js jetstream.JetStream) error {
	lctx, cancel := context.WithTimeout(ctx, 2*s.cfg.Timeout)
	err := s.planLayout(lctx, js)
	cancel()
	if err != nil {
		return err
	}
	for _, sh := range s.shards {
		if err := s.ensureStream(ctx, js, sh); err != nil {
			return err
		}
	}
	return nil
}

// ensureStream creates a stream of the ledger when it does not exist and
// checks that an existing one is fit to hold a ledger, and is the stream
// of the layout sh belongs to. It never loosens an existing stream.
func (s *Store) ensureStream(ctx context.Context, js jetstream.JetStream, sh *shard) error {
	ctx, cancel := context.WithTimeout(ctx, 2*s.cfg.Timeout)
	defer cancel()
	st, err := js.Stream(ctx, sh.name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		st, err = js.CreateStream(ctx, s.streamConfig(sh))
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			st, err = js.Stream(ctx, sh.name)
		}
	}
	if err != nil {
		return s.wrap("stream "+sh.name, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return s.wrap("stream info", err)
	}
	c := info.Config
	if err := s.checkMeta(sh, c.Metadata); err != nil {
		return err
	}
	switch {
	case len(c.Subjects) == 0 || c.Subjects[0] != sh.subj.all() || len(c.Subjects) > 2 || len(c.Subjects) == 2 && c.Subjects[1] != sh.fenceAll():
		return fmt.Errorf("stream %s holds subjects %v, want [%s] (and, in a fleet, %s)", c.Name, c.Subjects, sh.subj.all(), sh.fenceAll())
	case !c.DenyDelete || !c.DenyPurge:
		return fmt.Errorf("stream %s allows deletes or purges; a ledger stream must set deny_delete and deny_purge", c.Name)
	case c.AllowRollup || c.MaxAge != 0 || c.MaxMsgs > 0 || c.MaxBytes > 0 && c.Discard == jetstream.DiscardOld:
		return fmt.Errorf("stream %s has limits or rollups that can remove envelopes", c.Name)
	}
	return nil
}

// wrap maps a NATS failure to ErrUnavailable where it is one.
func (s *Store) wrap(what string, err error) error {
	if isUnavailable(err) {
		return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func isUnavailable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrNoServers) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) ||
		errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrReconnectBufExceeded)
}
