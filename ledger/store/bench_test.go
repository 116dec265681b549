package store

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentledger/agentledger/ledger"
)

// benchEvent is a ~650-byte hook payload; sealed, about 800 bytes.
func benchEvent(session string, i int) ledger.Event {
	return ledger.Event{TenantID: "acme", SessionID: session, EventType: "PreToolUse", TsUnixMs: int64(1763830000000 + i),
		Payload: []byte(fmt.Sprintf(`{"hook_event_name":"PreToolUse","cwd":"/home/dev/project","tool_name":"Bash","tool_use_id":"toolu_%08d",`+
			`"tool_input":{"command":"grep -rn \"TODO\" ./src | head -n 50 && go test ./... -run TestLedger -count=1","description":"search todos and run the tests","timeout":120000},`+
			`"transcript_path":"/home/dev/.claude/projects/project/2f6c1e0a-5b1d-4a8e-9f3e-1c2d3e4f5a6b.jsonl","permission_mode":"default",`+
			`"context":{"model":"claude-sonnet-4-5","turn":%d,"labels":["ci","regression","ledger"],"budget":{"steps":24,"tool_calls":12,"wall_ms":120000}}}`, i, i))}
}

// benchAppend measures appends on the embedded server, under each sync
// policy, against raw JetStream publishes of the same bytes to a stream with
// the same configuration, in the same server and the same run, made as
// durable as an append (under sync always, each raw publish is fsynced as
// the store fsyncs its own stream).
func benchAppend(b *testing.B, sessions int) {
	for _, sync := range []SyncPolicy{SyncAlways, SyncInterval} {
		b.Run("sync="+string(sync), func(b *testing.B) { benchAppendSync(b, sessions, sync) })
	}
}

func benchAppendSync(b *testing.B, sessions int, sync SyncPolicy) {
	ctx := context.Background()
	s := benchStore(b, Config{Sync: sync}, "RAW", "EXP")
	expSeq := map[string]uint64{}
	var expTime time.Duration
	name := func(i int) string { return "sess-" + strconv.Itoa(i%sessions) }
	// Appends and raw publishes alternate in chunks, so both see the same
	// disk, the same stream size and the same neighbours.
	const chunk = 100
	var appendTime, rawTime time.Duration
	b.ResetTimer()
	for lo := 0; lo < b.N; lo += chunk {
		hi := min(lo+chunk, b.N)
		envs := make([][]byte, 0, chunk)
		start := time.Now()
		for i := lo; i < hi; i++ {
			e, err := s.Append(ctx, benchEvent(name(i), i))
			if err != nil {
				b.Fatal(err)
			}
			envs = append(envs, e.Bytes())
		}
		appendTime += time.Since(start)
		b.StopTimer()
		start = time.Now()
		for j, data := range envs {
			msg := &nats.Msg{Subject: "raw.acme." + name(lo+j), Data: data, Header: nats.Header{jetstream.MsgIDHeader: []string{strconv.Itoa(lo + j)}}}
			if _, err := s.js.PublishMsg(ctx, msg); err != nil {
				b.Fatal(err)
			}
			// As durable as an append: under sync always the store
			// fsyncs the raw stream as it does its own.
			if err := s.syncStream("RAW"); err != nil {
				b.Fatal(err)
			}
		}
		rawTime += time.Since(start)
		// The same publishes with the expectations every append asserts
		// (stream name, the subject's last sequence), to a third stream:
		// what the server's checks cost, apart from agentledger's own work.
		start = time.Now()
		for j, data := range envs {
			subj := "exp.acme." + name(lo+j)
			msg := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{
				jetstream.MsgIDHeader:               []string{strconv.Itoa(lo + j)},
				jetstream.ExpectedStreamHeader:      []string{"EXP"},
				jetstream.ExpectedLastSubjSeqHeader: []string{strconv.FormatUint(expSeq[subj], 10)},
			}}
			ack, err := s.js.PublishMsg(ctx, msg)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.syncStream("EXP"); err != nil {
				b.Fatal(err)
			}
			expSeq[subj] = ack.Sequence
		}
		expTime += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N)/appendTime.Seconds(), "appends/s")
	b.ReportMetric(expTime.Seconds()/appendTime.Seconds(), "ratio_vs_raw_expect")
	b.ReportMetric(float64(b.N)/rawTime.Seconds(), "raw_publishes/s")
	b.ReportMetric(rawTime.Seconds()/appendTime.Seconds(), "ratio_vs_raw")
}

func BenchmarkAppendOneSession(b *testing.B) { benchAppend(b, 1) }

func BenchmarkAppendManySessions(b *testing.B) { benchAppend(b, 1000) }

// BenchmarkAppendMany appends what `ledger append` appends from a file of
// 64 sessions × 1,000 events: NDJSON lines read and prepared on all CPUs,
// sealed and stored in shared atomic batches. ratio_vs_raw_batch compares
// it with atomic batches of 1,000 of the same sealed bytes published raw
// to a stream of the same configuration, in the same run, each fsynced as
// an append is.
func BenchmarkAppendMany(b *testing.B) {
	const sessions, per = 64, 1000
	ctx := context.Background()
	s := benchStore(b, Config{}, "RAW")
	var appendTime, prepareTime, rawTime time.Duration
	events := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var in bytes.Buffer
		for j := 0; j < sessions*per; j++ {
			ev := benchEvent(fmt.Sprintf("many-%d-%d", i, j%sessions), j)
			fmt.Fprintf(&in, `{"tenant_id":%q,"session_id":%q,"event_type":%q,"ts_unix_ms":%d,"payload":%s}`+"\n", ev.TenantID, ev.SessionID, ev.EventType, ev.TsUnixMs, ev.Payload)
		}
		b.StartTimer()
		start := time.Now()
		drafts, bad, err := ReadDrafts(&in, s.cfg.Limits, 0)
		if err != nil || len(bad) > 0 {
			b.Fatal(err, bad)
		}
		prepareTime += time.Since(start)
		envs, _, err := s.AppendDrafts(ctx, drafts)
		if err != nil {
			b.Fatal(err)
		}
		appendTime += time.Since(start)
		events += len(envs)
		b.StopTimer()
		bySession := map[string][][]byte{}
		for _, e := range envs {
			bySession[e.SessionID()] = append(bySession[e.SessionID()], e.Bytes())
		}
		start = time.Now()
		for name, datas := range bySession {
			if err := rawBatch(ctx, s, "raw.acme."+name, datas); err != nil {
				b.Fatal(err)
			}
		}
		rawTime += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(events)/appendTime.Seconds(), "events_per_s")
	b.ReportMetric(float64(events)/rawTime.Seconds(), "raw_batch_events_per_s")
	b.ReportMetric(rawTime.Seconds()/appendTime.Seconds(), "ratio_vs_raw_batch")
	b.ReportMetric(prepareTime.Seconds()/appendTime.Seconds(), "prepare_share")
}

// rawBatch publishes datas to subj as one atomic batch, with nothing of
// agentledger's around it.
func rawBatch(ctx context.Context, s *Store, subj string, datas [][]byte) error {
	id := nuid.Next()
	for i, data := range datas {
		msg := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{batchIDHeader: []string{id}, batchSeqHeader: []string{strconv.Itoa(i + 1)}}}
		if i < len(datas)-1 {
			if err := s.nc.PublishMsg(msg); err != nil {
				return err
			}
			continue
		}
		msg.Header[batchCommitHeader] = []string{"1"}
		if _, err := s.commitBatch(ctx, msg, len(datas)); err != nil {
			return err
		}
		// As durable as an append (under sync always the store fsyncs
		// the raw stream as it does its own).
		return s.syncStream(strings.ToUpper(strings.SplitN(subj, ".", 2)[0]))
	}
	return nil
}

// benchStore opens an embedded store with cfg and, beside its ledger
// stream, raw streams of the same configuration (subjects lower(name).>)
// for baselines. It is closed when the benchmark ends.
func benchStore(b *testing.B, cfg Config, raw ...string) *Store {
	ctx := context.Background()
	cfg.DataDir = b.TempDir()
	s, err := Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for _, name := range raw {
		c := s.streamConfig(s.shards[0])
		c.Name, c.Subjects = name, []string{strings.ToLower(name) + ".>"}
		if _, err := s.js.CreateStream(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	return s
}
