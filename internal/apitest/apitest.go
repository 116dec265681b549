// Package apitest holds helpers for tests of the engine's HTTP API and
// of the records it writes, and the deciders they judge with. It does not import the engine, so that the
// engine's own tests use it too.
package apitest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/receipt"
)

// Call sends a request to srv, with token as its bearer token when not
// empty, and returns the status and body.
func Call(t testing.TB, srv *httptest.Server, method, path, token string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// Records checks every signed record of the store with ring (failing t
// on the first that does not check) and returns the envelopes of one type
// in session k.
func Records(t testing.TB, st *store.Store, ring receipt.Keyring, k ledger.SessionKey, eventType string) []*ledger.Envelope {
	t.Helper()
	chk := receipt.NewChecker(ring)
	var out []*ledger.Envelope
	err := st.ReadAll(context.Background(), store.Filter{}, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil {
			return err
		}
		if f := chk.Check(e); f != nil {
			return f
		}
		if e.Key() == k && e.EventType() == eventType {
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Decider is a decider of the built-in policy with the manifest at path,
// changed by edit (nil: as it is).
func Decider(t testing.TB, path string, edit func(*manifest.Manifest)) *decide.Decider {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	p, err := policy.Load(context.Background(), "", m)
	if err != nil {
		t.Fatal(err)
	}
	return decide.NewDecider(p)
}

// Sign gives d a new signing key, and returns the ring that checks it.
func Sign(t testing.TB, d *decide.Decider) receipt.Keyring {
	t.Helper()
	keyPEM, err := receipt.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := receipt.ParsePrivateKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	d.Signer = receipt.NewSigner(key)
	return receipt.Keyring{d.Signer.KeyID(): d.Signer.PublicKey()}
}
