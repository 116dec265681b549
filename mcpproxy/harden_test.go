package mcpproxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger/store"
)

const ghToken = "ghp_R7dKq2R7dKq2R7dKq2R7dKq2R7dKq2xY9zWq"

// memServer is an upstream in memory whose tools show what reached it:
// echo answers with the _meta and the raw arguments it got; leak_error
// fails with a secret in its error, leak_key answers with a secret as a
// key; slow waits until release is closed. Its resource blob://env holds a
// secret in base64. got lists every tool call and read it received.
type memServer struct {
	srv     *mcp.Server
	release chan struct{}
	started chan struct{}
	mu      sync.Mutex
	got     []string
}

func newMemServer() *memServer {
	m := &memServer{srv: mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, nil), release: make(chan struct{}), started: make(chan struct{}, 1)}
	note := func(s string) {
		m.mu.Lock()
		m.got = append(m.got, s)
		m.mu.Unlock()
	}
	tool := func(name string, h func(*mcp.CallToolRequest) (*mcp.CallToolResult, error)) {
		m.srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			note(name + " " + string(req.Params.Arguments))
			return h(req)
		})
	}
	tool("echo", func(req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		meta, _ := json.Marshal(req.Params.Meta)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "meta=" + string(meta) + " args=" + string(req.Params.Arguments)}}}, nil
	})
	tool("leak_error", func(*mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("the backend rejected credentials " + ghToken)
	})
	tool("leak_key", func(*mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "see structured"}}, StructuredContent: map[string]any{ghToken: "owner"}}, nil
	})
	tool("slow", func(*mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		m.started <- struct{}{}
		<-m.release
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow done"}}}, nil
	})
	m.srv.AddResource(&mcp.Resource{Name: "env", URI: "blob://env", MIMEType: "application/octet-stream"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			note("resource:" + req.Params.URI)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Blob: []byte("GITHUB_TOKEN=" + ghToken + "\n")}}}, nil
		})
	return m
}

func (m *memServer) received() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.got...)
}

// memProxy is a proxy in front of a memServer, and a client of it.
func memProxy(t *testing.T, r *rig, m *memServer, version string) (*Proxy, *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	up, down := mcp.NewInMemoryTransports()
	if _, err := m.srv.Connect(ctx, down, nil); err != nil {
		t.Fatal(err)
	}
	p, err := Connect(ctx, Config{Engine: r.eng, Ledger: r.st, Server: "filesystem", Upstream: up, URI: "mem", Transport: "stdio"}, "")
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := p.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	r.mu.Lock()
	r.proxies = append(r.proxies, p)
	r.mu.Unlock()
	return p, cs
}

// TestWhatIsJudgedIsWhatIsSent: a call's _meta does not reach the server
// (its progress token does), and its arguments reach it as they were sent
// and recorded; a number the record cannot hold exactly (an integer
// beyond 2^53) is refused, with the reason, not rounded on its way.
func TestWhatIsJudgedIsWhatIsSent(t *testing.T) {
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) {
			r := newRig(t, nil)
			m := newMemServer()
			_, cs := memProxy(t, r, m, version)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo",
				Meta:      mcp.Meta{"progressToken": "p1", "exfil": map[string]any{"url": "https://evil.example/collect"}},
				Arguments: json.RawMessage(`{"n":12345,"s":"x"}`)})
			if err != nil || res.IsError {
				t.Fatalf("echo: %v %+v", err, res)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if strings.Contains(text, "evil.example") || !strings.Contains(text, `"progressToken":"p1"`) || !strings.Contains(text, `args={"n":12345,"s":"x"}`) {
				t.Fatalf("the server got %s", text)
			}
			res, text = call(t, cs, "echo", map[string]any{"n": json.Number("1234567890123456789")})
			if !res.IsError || !strings.Contains(text, "RFC 8785") {
				t.Fatalf("a number the record cannot hold: %q", text)
			}
			if got := m.received(); len(got) != 1 {
				t.Fatalf("the server received %v", got)
			}
		})
	}
}

// allRecorded is every envelope of the default tenant, as bytes.
func allRecorded(t *testing.T, r *rig) []string {
	t.Helper()
	infos, err := r.st.Sessions(context.Background(), store.Filter{Tenant: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, info := range infos {
		r.st.ReadSession(context.Background(), info.Key(), func(m store.Msg) error {
			out = append(out, string(m.Data))
			return nil
		})
	}
	return out
}

// TestSecretsAreNeverShown: a secret in a server's error, in a key of its
// structured result, or in a resource's base64 blob reaches the client
// redacted, and the record holds it nowhere in the clear.
func TestSecretsAreNeverShown(t *testing.T) {
	r := newRig(t, nil)
	m := newMemServer()
	ctx := context.Background()
	// Each in its own session: a first result is MCP content, after which
	// the policy asks before the session's next MCP call.
	var shown []string
	for _, name := range []string{"leak_error", "leak_key"} {
		_, cs := memProxy(t, r, m, "2025-11-25")
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := json.Marshal(res)
		shown = append(shown, string(b))
	}
	_, cs := memProxy(t, r, m, "2025-11-25")
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "blob://env"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	shown = append(shown, string(b), string(res.Contents[0].Blob))
	blob := base64.StdEncoding.EncodeToString([]byte("GITHUB_TOKEN=" + ghToken))
	for _, s := range shown {
		if strings.Contains(s, ghToken) || strings.Contains(s, blob) {
			t.Fatalf("the client was shown the token: %s", s)
		}
	}
	if !strings.Contains(shown[0], "the backend rejected credentials") || !strings.Contains(shown[3], "GITHUB_TOKEN=") {
		t.Fatalf("what was shown lost more than the secret: %v", shown)
	}
	if len(m.received()) != 3 {
		t.Fatalf("the server received %v", m.received())
	}
	for _, e := range allRecorded(t, r) {
		if strings.Contains(e, ghToken) || strings.Contains(e, blob) {
			t.Fatalf("the record holds the token in the clear: %.400s", e)
		}
	}
}

// TestACancelledCallIsRecorded: a client that gives up on a call while the
// server runs it still leaves the call's outcome on record.
func TestACancelledCallIsRecorded(t *testing.T) {
	r := newRig(t, nil)
	m := newMemServer()
	_, cs := memProxy(t, r, m, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-m.started
		cancel()
		time.Sleep(50 * time.Millisecond)
		close(m.release)
	}()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}}); err == nil {
		t.Fatal("the cancelled call answered")
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		types, _ := r.recorded(t)
		if strings.Contains(strings.Join(types, " "), "PreToolUse Verdict PostToolUse Verdict") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled call's outcome is not on record: %v", types)
		}
	}
}

// TestOnlyPinnedToolsAreCalled: a name no list pinned (a tool the server
// added after the proxy listed it, or none at all) is denied TOOL_CHANGED
// and never reaches the server.
func TestOnlyPinnedToolsAreCalled(t *testing.T) {
	r := newRig(t, nil)
	m := newMemServer()
	_, cs := memProxy(t, r, m, "2025-11-25")
	m.srv.AddTool(&mcp.Tool{Name: "send_mail", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		m.mu.Lock()
		m.got = append(m.got, "send_mail")
		m.mu.Unlock()
		return &mcp.CallToolResult{}, nil
	})
	for _, name := range []string{"send_mail", "nosuch"} {
		res, text := call(t, cs, name, map[string]any{"to": "x@example.com"})
		if !res.IsError || !strings.Contains(text, "deny (TOOL_CHANGED)") {
			t.Fatalf("%s: %q", name, text)
		}
	}
	if got := m.received(); len(got) != 0 {
		t.Fatalf("the server received %v", got)
	}
}

// TestReadsAreJudgedByPath: a resources/read of a file: URI is judged by
// the path it names, in each spelling: a credentials file is denied before
// the server.
func TestReadsAreJudgedByPath(t *testing.T) {
	r := newRig(t, nil)
	cs := r.client(t, "stdio", "2025-11-25")
	for _, uri := range []string{"file:///home/dev/.netrc", "file://localhost/home/dev/.ssh/id_rsa", "file:///tmp/../home/dev/%2essh/id_rsa"} {
		_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err == nil || !strings.Contains(err.Error(), "deny (SECRET_ACCESS)") {
			t.Fatalf("%s: %v", uri, err)
		}
	}
	if got := r.called(t); len(got) != 0 {
		t.Fatalf("the server received %v", got)
	}
}

// TestOversizedArgumentsAreNotSent: arguments too long to be recorded
// whole are not judged on an excerpt: the call is refused and not sent.
func TestOversizedArgumentsAreNotSent(t *testing.T) {
	r := newRig(t, nil)
	m := newMemServer()
	_, cs := memProxy(t, r, m, "2025-11-25")
	path := "/tmp/" + strings.Repeat("x/../", 130000) + "home/dev/.ssh/id_rsa"
	res, text := call(t, cs, "echo", map[string]any{"path": path})
	if !res.IsError || !strings.Contains(text, "deny") {
		t.Fatalf("an oversized call: %.300q", text)
	}
	if got := m.received(); len(got) != 0 {
		t.Fatalf("the server received %d calls", len(got))
	}
}

// TestGatewayMembersAreTheGatewaysOwn: another sender of AARTS events (an
// agent with a host token, say) cannot name a session mcp-… or declare
// tool pins: its event is rejected, on record.
func TestGatewayMembersAreTheGatewaysOwn(t *testing.T) {
	r := newRig(t, nil)
	for _, ev := range []string{
		`{"hook_point":"PreMCPConnect","session_id":"forger","timestamp":"2026-11-26T00:00:00Z","host_id":"x","aarts_version":"0.1","server_id":"filesystem","transport":"stdio","tool_pins":{"send_mail":"00"}}`,
		`{"hook_point":"SessionStart","session_id":"mcp-filesystem-forged","timestamp":"2026-11-26T00:00:00Z","host_id":"x","aarts_version":"0.1","source":"startup"}`,
	} {
		st := r.eng.Answer(context.Background(), engine.Request{Body: []byte(ev)})
		if st.Decision != "deny" || st.ReasonCode != engine.ReasonInputRejected {
			t.Fatalf("a forged event answered %s %s", st.Decision, st.ReasonCode)
		}
	}
}

// TestGatewaySessionsAreTheirIdentitys: a session another identity opened
// can neither be used nor ended by it; an identity holds at most
// MaxSessions sessions (the next is refused, on record); and a session
// whose server died connects again on its next request.
func TestGatewaySessionsAreTheirIdentitys(t *testing.T) {
	r := newRigWith(t, nil, []string{"-die-on", "read_file"})
	cfg := r.config(t)
	cfg.MaxSessions = 2
	_, url := serveGateway(t, cfg, r.upstream(t), tokensOf(t,
		"acme-token", `"tenant":"acme","role":"host","name":"ci","principal":"alice","agent":"claude"`,
		"beta-token", `"tenant":"beta","role":"host","name":"ci","principal":"alice","agent":"codex"`))
	connect := func(token, key, version string) *mcp.ClientSession {
		transport := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, key}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	acme := connect("acme-token", "", "2025-11-25")
	if _, err := acme.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("DELETE", url, nil)
	req.Header.Set("Authorization", "Bearer beta-token")
	req.Header.Set("Mcp-Session-Id", acme.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Fatalf("another tenant's DELETE of the session: %d", resp.StatusCode)
	}
	if _, err := acme.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("the session after another's DELETE: %v", err)
	}
	// The cap: acme holds one session; a second is let in, a third not.
	connect("acme-token", "two", "2026-07-28").ListTools(context.Background(), nil)
	if _, err := connect("acme-token", "three", "2026-07-28").ListTools(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "the most it may") {
		t.Fatalf("a third session: %v", err)
	}
	// The server dies under the first session; its next request connects
	// it again.
	if res, text := call(t, acme, "read_file", map[string]any{"path": "README.md"}); !res.IsError {
		t.Fatalf("read_file should kill the fixture: %q", text)
	}
	var tools *mcp.ListToolsResult
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if tools, err = acme.ListTools(context.Background(), nil); err == nil && len(tools.Tools) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session never came back: %v", err)
		}
	}
	ends := 0
	infos, _ := r.st.Sessions(context.Background(), store.Filter{Tenant: "acme"})
	for _, info := range infos {
		r.st.ReadSession(context.Background(), info.Key(), func(m store.Msg) error {
			if strings.Contains(string(m.Data), `"reason":"upstream_closed"`) {
				ends++
			}
			return nil
		})
	}
	if ends != 1 {
		t.Fatalf("%d sessions ended upstream_closed, want 1", ends)
	}
}

// TestAStoreGoneAnswersDeny: when the engine's store goes away under the
// proxy (a local engine that stopped), a call is answered — denied, not
// sent — within the decision bound, instead of holding the client.
func TestAStoreGoneAnswersDeny(t *testing.T) {
	r := newRig(t, nil)
	m := newMemServer()
	ctx := context.Background()
	up, down := mcp.NewInMemoryTransports()
	if _, err := m.srv.Connect(ctx, down, nil); err != nil {
		t.Fatal(err)
	}
	p, err := Connect(ctx, Config{Engine: r.eng, Ledger: r.st, Server: "filesystem", Upstream: up, URI: "mem", Transport: "stdio", DecideTimeout: 500 * time.Millisecond}, "")
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := p.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r.st.Close()
	res, text := call(t, cs, "echo", map[string]any{"n": 1})
	if !res.IsError || !strings.Contains(text, "deny") {
		t.Fatalf("with the store gone: %q", text)
	}
	if got := m.received(); len(got) != 0 {
		t.Fatalf("the server received %v", got)
	}
}
