package store

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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
// the same configuration, in the same server and the same run.
func benchAppend(b *testing.B, sessions int) {
	for _, sync := range []SyncPolicy{SyncAlways, SyncInterval} {
		b.Run("sync="+string(sync), func(b *testing.B) { benchAppendSync(b, sessions, sync) })
	}
}

func benchAppendSync(b *testing.B, sessions int, sync SyncPolicy) {
	ctx := context.Background()
	s, err := Open(ctx, Config{DataDir: b.TempDir(), Sync: sync})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rawCfg := s.streamConfig()
	rawCfg.Name, rawCfg.Subjects = "RAW", []string{"raw.>"}
	if _, err := s.js.CreateStream(ctx, rawCfg); err != nil {
		b.Fatal(err)
	}
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
		}
		rawTime += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N)/appendTime.Seconds(), "appends/s")
	b.ReportMetric(float64(b.N)/rawTime.Seconds(), "raw_publishes/s")
	b.ReportMetric(rawTime.Seconds()/appendTime.Seconds(), "ratio_vs_raw")
}

func BenchmarkAppendOneSession(b *testing.B) { benchAppend(b, 1) }

func BenchmarkAppendManySessions(b *testing.B) { benchAppend(b, 1000) }
