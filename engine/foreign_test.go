package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// TestOnlyAgentledgerWrites: the embedded server refuses a client without
// credentials; a message published by someone with the writer's rights at a
// session's head does not make the session unwritable: the next hook event
// is decided and recorded (the chain goes on after the foreign message,
// which the engine puts on record), and verify names the foreign message.
func TestOnlyAgentledgerWrites(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Sync: store.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newEngine(t, decider(t, "coding-agent.json"), st)
	k := ledger.SessionKey{Tenant: ledger.DefaultTenant, Session: "written-into"}
	if r := e.Answer(ctx, Request{Body: hookEvent(k.Session, 0)}); r.EventHash == "" {
		t.Fatalf("first event: %+v", r)
	}

	anon := strings.Replace(st.ClientURL(), store.LedgerUser+":", "nobody:", 1)
	for _, url := range []string{store.RedactURL(st.ClientURL()), "nats://" + st.ClientURL()[strings.LastIndex(st.ClientURL(), "@")+1:], anon} {
		if nc, err := nats.Connect(url); err == nil {
			nc.Close()
			t.Fatalf("a client without the writer's credentials connected (%s)", store.RedactURL(url))
		}
	}

	nc, err := nats.Connect(st.ClientURL()) // an operator with the writer's rights
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	ack, err := js.Publish(st.Subject(k), []byte("garbage"))
	if err != nil {
		t.Fatal(err)
	}

	r := e.Answer(ctx, Request{Body: hookEvent(k.Session, 2)})
	if r.EventHash == "" || r.ReasonCode == ReasonEngineFailure {
		t.Fatalf("the event after the foreign message: %+v, want it decided and recorded", r)
	}
	var kinds []string
	foreignNoted := false
	err = st.ReadSession(ctx, k, func(m store.Msg) error {
		env, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil {
			kinds = append(kinds, "foreign")
			return nil
		}
		kinds = append(kinds, env.EventType())
		if env.EventType() == ledger.EventRejected && strings.Contains(string(env.Payload()), "foreign message at stream seq") {
			var rej Rejection
			json.Unmarshal(env.Payload(), &rej)
			foreignNoted = rej.Length == int64(len("garbage"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PreToolUse", "Verdict", "foreign", "Rejected", "PreToolUse", "Verdict"}
	if strings.Join(kinds, " ") != strings.Join(want, " ") || !foreignNoted {
		t.Fatalf("session holds %v (foreign noted %v), want %v", kinds, foreignNoted, want)
	}
	rep, err := st.Verify(ctx, store.Filter{Tenant: k.Tenant, Session: k.Session}, ledger.Deep, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Faults) != 1 || rep.Faults[0].Kind != ledger.Malformed || rep.Faults[0].StreamSeq != ack.Sequence {
		t.Fatalf("verify: %+v, want one fault naming the foreign message at stream seq %d", rep.Faults, ack.Sequence)
	}
}
