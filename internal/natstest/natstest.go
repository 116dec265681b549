// Package natstest starts a real nats-server with JetStream inside a test
// process, on loopback, for the tests that need one beside the ledger's
// own embedded server.
package natstest

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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

// Cluster starts three in-process nats-servers with JetStream, clustered
// over loopback routes (cluster "ledger", servers n0 to n2), and returns
// them with a client URL list naming all three. They are shut down when
// the test ends.
func Cluster(t testing.TB) ([]*server.Server, string) {
	t.Helper()
	// A route port picked free may be taken by another process before the
	// server binds it, and a loaded machine may be slow to start three
	// servers: a cluster that does not come up is started again on other
	// ports.
	var why string
	for range 3 {
		servers, urls, err := startCluster(t)
		if err == nil {
			return servers, urls
		}
		why = err.Error()
		for _, s := range servers {
			s.Shutdown()
		}
	}
	t.Fatalf("no JetStream cluster came up in three tries: %s", why)
	return nil, ""
}

// startCluster starts one try of Cluster: the servers it started and
// their client URLs, or why they did not come up.
func startCluster(t testing.TB) ([]*server.Server, string, error) {
	routes := make([]int, 3)
	for i := range routes {
		routes[i] = LoopbackPort(t)
	}
	var urls []string
	for _, p := range routes {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var servers []*server.Server
	var clients []string
	for i := range 3 {
		opts := &server.Options{ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1, JetStream: true,
			StoreDir: t.TempDir(), NoSigs: true,
			Cluster: server.ClusterOpts{Name: "ledger", Host: "127.0.0.1", Port: routes[i]},
			Routes:  server.RoutesFromStr(strings.Join(urls, ","))}
		s, err := server.NewServer(opts)
		if err != nil {
			return servers, "", err
		}
		s.Start()
		t.Cleanup(s.Shutdown)
		servers = append(servers, s)
		if !s.ReadyForConnections(30 * time.Second) {
			return servers, "", fmt.Errorf("server n%d not ready", i)
		}
		clients = append(clients, s.ClientURL())
	}
	// Ready once JetStream's meta group has a leader every server follows.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		leader, current := false, true
		for _, s := range servers {
			leader = leader || s.JetStreamIsLeader()
			current = current && s.JetStreamIsCurrent()
		}
		if leader && current {
			return servers, strings.Join(clients, ","), nil
		}
		if time.Now().After(deadline) {
			return servers, "", fmt.Errorf("the cluster's JetStream has no meta leader")
		}
	}
}

// LoopbackPort returns a free TCP port on loopback.
func LoopbackPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Client connects a plain NATS client to url (a test's server: with no
// permissions it reads and rewrites streams behind the ledger's back), with
// its JetStream context; it is closed when the test ends.
func Client(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}
