package engine

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingReader yields n zero bytes and counts what was read.
type countingReader struct {
	n, read int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.read)
	clear(p[:k])
	atomic.AddInt64(&r.read, k)
	return int(k), nil
}

// TestSlowClientsAndHugeBodies: fifty slow-loris connections and a 100 MB
// body do no harm to other clients; the slow connections are closed by the
// header timeout, and the big body is refused long before it is read.
func TestSlowClientsAndHugeBodies(t *testing.T) {
	st := openStore(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	h := Handler(ServerConfig{Engine: newEngine(t, decider(t, "coding-agent.json"), st), Store: st,
		Tokens: tokensFor(t, "token-acme", "acme")})
	srv := httptest.NewUnstartedServer(h)
	hs := NewHTTPServer("", h)
	hs.ReadHeaderTimeout = 300 * time.Millisecond // shorter than production, same mechanism
	srv.Config = hs
	srv.Start()
	t.Cleanup(srv.Close)

	var slow []net.Conn
	for i := 0; i < 50; i++ {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("POST /v1/hooks HTTP/1.1\r\nHost: x\r\n")) // and never the rest
		slow = append(slow, c)
	}
	// Other clients are served meanwhile.
	for i := 0; i < 5; i++ {
		if code, _ := call(t, srv, "POST", "/v1/hooks", "token-acme", hookEvent("hardening", i*2)); code != 200 {
			t.Fatalf("a normal client got %d while slow clients held connections", code)
		}
	}
	// The slow connections are closed by the server.
	for _, c := range slow {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("a slow-loris connection was not closed by the server: %v", err)
		}
		c.Close()
	}
	// A 100 MB body is denied, having read little of it.
	body := &countingReader{n: 100 << 20}
	req, _ := http.NewRequest("POST", srv.URL+"/v1/hooks", body)
	req.Header.Set("Authorization", "Bearer token-acme")
	req.ContentLength = body.n
	resp, err := srv.Client().Do(req)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"reason_code":"INPUT_REJECTED"`) || !strings.Contains(string(b), `"decision":"deny"`) {
			t.Fatalf("100 MB body: got %d %s, want a deny", resp.StatusCode, b)
		}
		resp.Body.Close()
	}
	if read := atomic.LoadInt64(&body.read); read >= body.n/2 {
		t.Fatalf("the server read %d of the 100 MB body before refusing it", read)
	}
	if code, b := call(t, srv, "GET", "/healthz", "", nil); code != 200 {
		t.Fatalf("healthz after the abuse: %d %s", code, bytes.TrimSpace(b))
	}
}
