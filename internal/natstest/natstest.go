// Package natstest starts a real nats-server with JetStream inside a test
// process, on loopback, for the tests that need one beside the ledger's
// own embedded server.
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// JetStream starts an in-process nats-server with JetStream on loopback,
// storing in a temporary directory and with no permissions at all (any
// client may read, write and delete), and returns its client URL. It is
// shut down when the test ends.
func JetStream(t testing.TB) string {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(srv.Shutdown)
	return srv.ClientURL()
}
