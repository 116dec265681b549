package mcpproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// badInput is what a careless or hostile client may put on the wire, and
// the JSON-RPC error code the proxy must answer it with (0: no answer,
// a notification).
var badInput = []struct {
	name, msg string
	code      int
}{
	{"not JSON", `{"jsonrpc":"2.0","id":1,"method":"tools/list"`, codeParseError},
	{"a batch", `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, codeInvalidRequest},
	{"not JSON-RPC 2.0", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, codeInvalidRequest},
	{"a null id", `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, codeInvalidRequest},
	{"neither request nor response", `{"jsonrpc":"2.0","id":4}`, codeInvalidRequest},
	{"a call before initialize", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"README.md"}}}`, codeInvalidRequest},
	{"an unknown method", `{"jsonrpc":"2.0","id":6,"method":"admin/exec","params":{}}`, codeMethodNotFound},
	{"an unknown notification", `{"jsonrpc":"2.0","method":"notifications/evil"}`, 0},
	{"a member named in another case", `{"jsonrpc":"2.0","id":8,"method":"tools/list","Method":"admin/exec"}`, codeInvalidRequest},
	{"a member named twice", `{"jsonrpc":"2.0","id":9,"method":"ping","method":"tools/list"}`, codeInvalidRequest},
	{"a fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, codeInvalidRequest},
	{"oversized", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"` + strings.Repeat("a", MaxMessageBytes) + `"}}}`, codeInvalidRequest},
}

// rpcError is a JSON-RPC error response.
type rpcError struct {
	ID    json.RawMessage `json:"id"`
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestBadInputOnStdio: each bad message gets its JSON-RPC error (none for
// a notification), is recorded as Rejected in the proxy's session with
// what was wrong, and reaches nothing; the connection carries on, and a
// client that then initializes is served.
func TestBadInputOnStdio(t *testing.T) {
	r := newRig(t, nil)
	io := r.stdio(t).(*mcp.IOTransport)
	answers := bufio.NewReader(io.Reader)
	for _, c := range badInput {
		if _, err := io.Writer.Write([]byte(c.msg + "\n")); err != nil {
			t.Fatal(err)
		}
		if c.code == 0 {
			continue
		}
		line, err := answers.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got rpcError
		if err := json.Unmarshal(line, &got); err != nil || got.Error.Code != c.code {
			t.Fatalf("%s: answered %s, want code %d", c.name, line, c.code)
		}
	}
	// The connection is whole: a client that begins properly is served.
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"README.md"}}}`,
	} {
		io.Writer.Write([]byte(m + "\n"))
	}
	io.Writer.Write([]byte(`{"jsonrpc":"2.0","id":12,"method":"tools/list"}` + "\n"))
	listed, called := false, false
	for !listed || !called {
		line, err := answers.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(line), `"id":12`) {
			// A list the proxy answers is the session's own, with the
			// cacheScope the protocol requires (never empty).
			if !strings.Contains(string(line), `"cacheScope":"private"`) || !strings.Contains(string(line), `"read_file"`) {
				t.Fatalf("tools/list: %s", line)
			}
			listed = true
		}
		if strings.Contains(string(line), `"id":11`) {
			if !strings.Contains(string(line), "A small web shop") {
				t.Fatalf("the call after initialize: %s", line)
			}
			called = true
		}
	}
	checkRejected(t, r, "default", r.proxy(t).Session())
	if got := r.called(t); len(got) != 1 {
		t.Fatalf("the server received %v, want the one call after initialize", got)
	}
}

// TestBadInputOverHTTP: the same messages POSTed to the gateway with a
// host's token: each gets its JSON-RPC error (HTTP 400, 200 for a request
// of an unknown method), is recorded as Rejected in the session it would
// have joined, and reaches nothing.
func TestBadInputOverHTTP(t *testing.T) {
	r := newRig(t, nil)
	r.http(t, "2025-11-25")
	for _, c := range badInput {
		req, _ := http.NewRequest("POST", r.url, strings.NewReader(c.msg))
		req.Header.Set("Authorization", "Bearer host-token")
		req.Header.Set(HeaderSession, "bad-input")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got rpcError
		if err := json.Unmarshal(body, &got); err != nil || (c.code != 0 && got.Error.Code != c.code) || (resp.StatusCode != 400 && resp.StatusCode != 200) {
			t.Fatalf("%s: answered %d %s, want code %d", c.name, resp.StatusCode, body, c.code)
		}
	}
	infos, err := r.st.Sessions(context.Background(), store.Filter{Tenant: "default"})
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions: %v %+v", err, infos)
	}
	checkRejected(t, r, "default", infos[0].Session)
	if got := r.called(t); len(got) != 0 {
		t.Fatalf("the server received %v", got)
	}
}

// checkRejected: the session holds one Rejected record per bad message,
// each saying what was wrong and that it was refused, signed.
func checkRejected(t *testing.T, r *rig, tenant, session string) {
	t.Helper()
	var rejected []engine.Rejection
	err := r.st.ReadSession(context.Background(), ledger.SessionKey{Tenant: tenant, Session: session}, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil {
			return err
		}
		if e.EventType() != ledger.EventRejected {
			return nil
		}
		var rej engine.Rejection
		if err := json.Unmarshal(e.Payload(), &rej); err != nil {
			return err
		}
		if !strings.Contains(string(e.Payload()), `"sig":`) {
			t.Errorf("an unsigned rejection: %s", e.Payload())
		}
		rejected = append(rejected, rej)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rejected) != len(badInput) {
		t.Fatalf("%d rejections recorded, want %d: %+v", len(rejected), len(badInput), rejected)
	}
	for i, rej := range rejected {
		if rej.Host != Via || rej.Answered != "deny" || rej.Defect == "" || rej.SHA256 == "" {
			t.Errorf("%s: recorded %+v", badInput[i].name, rej)
		}
	}
	// A method no client may send is recorded as "jsonrpc" (a made-up
	// name could hold anything); the excerpt keeps it, redacted.
	if rejected[0].HookPoint != "jsonrpc" || rejected[5].HookPoint != "tools/call" || rejected[6].HookPoint != "jsonrpc" || !strings.Contains(rejected[6].Excerpt, "admin/exec") {
		t.Errorf("where: %+v", rejected)
	}
	if last := rejected[len(rejected)-1]; !last.Truncated || last.Length != MaxMessageBytes || !strings.Contains(last.Defect, "the limit is") {
		t.Errorf("the oversized message is recorded as %+v", last)
	}
}
