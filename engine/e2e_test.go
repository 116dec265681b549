package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/receipt"
)

// TestEndToEndHTTP: a real HTTP server on embedded JetStream, 50 sessions
// in parallel plus 8 concurrent requests on one session; every hook event is
// followed by exactly one Verdict; chains verify; every receipt verifies with
// the public key and stops verifying after any edit.
func TestEndToEndHTTP(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	keyPEM, err := receipt.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := receipt.ParsePrivateKey(keyPEM)
	signer := receipt.NewSigner(key)
	pub, _ := receipt.ParsePublicKey(signer.PublicKeyPEM())
	d := decider(t, "coding-agent.json")
	d.Signer = signer
	srv := httptest.NewServer(Handler(ServerConfig{Engine: newEngine(t, d, st), Store: st, Tokens: tokensFor(t, "tok", "acme")}))
	defer srv.Close()

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	post := func(body []byte) {
		code, b := call(t, srv, "POST", "/v1/hooks", "tok", body)
		if code != 200 {
			errs <- fmt.Errorf("status %d: %s", code, b)
		}
	}
	for s := 0; s < 50; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				post(hookEvent(fmt.Sprintf("e2e-%02d", s), i))
			}
		}(s)
	}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 3; i++ {
				post(hookEvent("e2e-busy", g*10+i*2))
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := checkChains(t, st); n != 50*4+8*3 {
		t.Fatalf("got %d recorded events, want %d", n, 50*4+8*3)
	}
	// Every record verifies, with its receipt.
	ring := receipt.Keyring{receipt.KeyID(pub): pub}
	chk := receipt.NewChecker(ring)
	var verdicts []*ledger.Envelope
	err = st.ReadAll(context.Background(), store.Filter{}, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil {
			return err
		}
		if f := chk.Check(e); f != nil {
			return f
		}
		if e.EventType() == ledger.EventVerdict {
			verdicts = append(verdicts, e)
		}
		return nil
	})
	if err != nil || len(verdicts) != 50*4+8*3 {
		t.Fatalf("receipts: %d checked, %v", len(verdicts), err)
	}
	// Any edit, resealed at the same place, breaks the signature: the
	// recorded decision, the receipt's decision, the event it names, the
	// identity.
	v := verdicts[0]
	edits := []struct{ from, to string }{
		{`"decision":"allow"`, `"decision":"deny"`},
		{`"aarts":"allow"`, `"aarts":"deny"`},
		{`"event_seq":`, `"event_seq":1`},
		{`"tenant":"acme"`, `"tenant":"evil"`},
		{`"reason_code":"ALLOW"`, `"reason_code":"FORBIDDEN"`},
	}
	for _, ed := range edits {
		edited := strings.Replace(string(v.Payload()), ed.from, ed.to, 1)
		if edited == string(v.Payload()) {
			t.Fatalf("edit %s did not apply to %s", ed.from, v.Payload())
		}
		forged, err := ledger.Seal(ledger.Head{Seq: v.Seq() - 1, Hash: v.PrevHash()}, ledger.Event{TenantID: v.TenantID(), SessionID: v.SessionID(),
			EventType: ledger.EventVerdict, TsUnixMs: v.TsUnixMs(), Payload: []byte(edited)}, ledger.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if f := receipt.NewChecker(ring).Check(forged); f == nil || f.Kind != ledger.BadSignature {
			t.Errorf("edit %s -> %s: got %v, want bad_signature", ed.from, ed.to, f)
		}
	}
	// Another key does not verify them.
	otherPEM, _ := receipt.GenerateKey()
	other, _ := receipt.ParsePrivateKey(otherPEM)
	otherPub := receipt.NewSigner(other).PublicKey()
	if f := receipt.NewChecker(receipt.Keyring{receipt.KeyID(otherPub): otherPub}).Check(v); f == nil || f.Kind != ledger.BadSignature {
		t.Errorf("another key: got %v", f)
	}
	var rec struct {
		Receipt receipt.Receipt `json:"receipt"`
	}
	json.Unmarshal(v.Payload(), &rec)
	if rec.Receipt.Identity.Tenant != "acme" || len(rec.Receipt.Identity.Flagged) == 0 || rec.Receipt.Action.ParamsSHA256 == "" {
		t.Errorf("receipt content: %+v", rec.Receipt)
	}
}
