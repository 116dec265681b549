package mcpproxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/internal/apitest"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/manifest"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/seal"
)

var fixture struct {
	once sync.Once
	bin  string
	err  error
}

// server builds fixtures/mcpserver once.
func server(t testing.TB) string {
	t.Helper()
	fixture.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpserver")
		if err != nil {
			fixture.err = err
			return
		}
		fixture.bin = filepath.Join(dir, "mcpserver")
		if out, err := exec.Command("go", "build", "-o", fixture.bin, "../fixtures/mcpserver").CombinedOutput(); err != nil {
			fixture.err = err
			t.Log(string(out))
		}
	})
	if fixture.err != nil {
		t.Fatal(fixture.err)
	}
	return fixture.bin
}

// rig is an engine on a real store with a signing key, and the fixture
// server (its calls counted in a file) behind the proxy's face a test's
// client connects to.
type rig struct {
	st          *store.Store
	eng         *engine.Engine
	ring        receipt.Keyring
	calls       string
	flagsMu     sync.Mutex
	serverFlags []string      // the fixture's flags, for the next server started
	timeout     time.Duration // the proxy's UpstreamTimeout (default when 0)
	monitor     bool          // the proxy's Monitor
	face        string        // eachClient's face and revision
	version     string

	mu      sync.Mutex
	proxies []*Proxy // the stdio face's, one per client
	gateway *Gateway // the http face, made with its first client
	url     string
}

// faces are the two ways a client reaches the proxy: stdio (the proxy's
// server on a pair of OS pipes, newline-delimited JSON-RPC, as `engine
// mcp-proxy -- CMD` serves it on its stdin and stdout) and http (the
// Gateway: Streamable HTTP with a host's bearer token).
var faces = []string{"stdio", "http"}

// revisions are the protocol generations the tests speak: sessions with
// initialize, and stateless with server/discover.
var revisions = []string{"2025-11-25", "2026-07-28"}

// eachClient runs fn for every face and revision, each with a new rig.
func eachClient(t *testing.T, newRig func(t *testing.T) *rig, fn func(t *testing.T, r *rig, cs *mcp.ClientSession)) {
	for _, face := range faces {
		for _, version := range revisions {
			t.Run(face+"/"+version, func(t *testing.T) {
				r := newRig(t)
				r.face, r.version = face, version
				fn(t, r, r.client(t, face, version))
			})
		}
	}
}

func newRig(t *testing.T, edit func(*manifest.Manifest), opts ...engine.Option) *rig {
	t.Helper()
	return newRigWith(t, edit, nil, opts...)
}

// newRigWith is newRig with extra flags for the fixture server.
func newRigWith(t *testing.T, edit func(*manifest.Manifest), serverFlags []string, opts ...engine.Option) *rig {
	t.Helper()
	st, err := store.Open(context.Background(), store.Config{DataDir: t.TempDir(), Sync: store.SyncInterval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := apitest.Decider(t, "../fixtures/manifests/coding-agent.json", edit)
	keys, err := seal.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d.Sealer = &seal.Sealer{Keys: keys, Policy: seal.PolicyOf(d.Policy.Manifest())}
	ring := apitest.Sign(t, d)
	eng, err := engine.New(d, st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{st: st, eng: eng, ring: ring,
		calls: filepath.Join(t.TempDir(), "calls"), serverFlags: serverFlags}
}

// config is the proxy's configuration, its upstream a new fixture server.
func (r *rig) config(t testing.TB) Config {
	bin := server(t)
	return Config{Engine: r.eng, Server: "filesystem", URI: bin, Transport: "stdio", UpstreamTimeout: r.timeout, Ledger: r.st, Monitor: r.monitor}
}

// upstream starts a fixture server.
func (r *rig) upstream(t testing.TB) func() (mcp.Transport, error) {
	bin := server(t)
	return func() (mcp.Transport, error) {
		r.flagsMu.Lock()
		flags := append([]string{"-calls", r.calls}, r.serverFlags...)
		r.flagsMu.Unlock()
		return &mcp.CommandTransport{Command: exec.Command(bin, flags...)}, nil
	}
}

// client connects an SDK client speaking revision version to the proxy's
// face (stdio or http).
func (r *rig) client(t *testing.T, face, version string) *mcp.ClientSession {
	t.Helper()
	return r.clientWith(t, face, version, nil)
}

// clientWith is client with the client's options.
func (r *rig) clientWith(t *testing.T, face, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	var ct mcp.Transport
	if face == "stdio" {
		ct = r.stdio(t)
	} else {
		ct = r.http(t, version)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("the client speaks %s, want %s", got, version)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// stdio serves a proxy on OS pipes, as engine mcp-proxy does (the
// server is reached once the client's initialize is read, declaring what
// the client declared), and returns the client's end.
func (r *rig) stdio(t *testing.T) mcp.Transport {
	cfg := r.config(t)
	cfg.Upstream, _ = r.upstream(t)()
	toProxy, fromClient, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	toClient, fromProxy, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer fromProxy.Close()
		caps, in, err := ReadInitialize(toProxy)
		if err != nil {
			return
		}
		cfg.ClientCapabilities = caps
		p, err := Connect(context.Background(), cfg, "")
		if err != nil {
			t.Errorf("connect the proxy: %v", err)
			return
		}
		r.mu.Lock()
		r.proxies = append(r.proxies, p)
		r.mu.Unlock()
		p.Server().Run(context.Background(), p.StdioTransport(in, fromProxy))
		p.Close(context.Background())
	}()
	t.Cleanup(func() {
		fromClient.Close()
		<-done
	})
	return &mcp.IOTransport{Reader: toClient, Writer: fromClient}
}

// http serves the gateway (once) and returns a client transport with the
// host's token, and for a stateless client a session key.
func (r *rig) http(t *testing.T, version string) mcp.Transport {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gateway == nil {
		r.gateway, r.url = serveGateway(t, r.config(t), r.upstream(t), tokensOf(t, "host-token", `"tenant":"default","role":"host","name":"agent"`))
	}
	key := ""
	if version >= "2026-07-28" {
		key = "k" + fmt.Sprint(time.Now().UnixNano())
	}
	return &mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: &http.Client{Transport: bearer{"host-token", key}}}
}

// serveGateway serves a gateway of cfg over HTTP until the test ends, and
// returns it with its URL.
func serveGateway(t testing.TB, cfg Config, upstream func() (mcp.Transport, error), tokens *engine.Tokens) (*Gateway, string) {
	t.Helper()
	g, err := NewGateway(context.Background(), cfg, upstream, tokens)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() {
		srv.CloseClientConnections() // a client's subscriptions/listen stream may linger
		srv.Close()
		g.Close(context.Background())
	})
	return g, srv.URL
}

// proxy is the proxy of the rig's one session, on either face.
func (r *rig) proxy(t *testing.T) *Proxy {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []*Proxy
	all = append(all, r.proxies...)
	if r.gateway != nil {
		r.gateway.mu.Lock()
		for _, c := range r.gateway.proxies {
			if c.p != nil {
				all = append(all, c.p)
			}
		}
		r.gateway.mu.Unlock()
	}
	if len(all) != 1 {
		t.Fatalf("%d proxied sessions, want 1", len(all))
	}
	return all[0]
}

func (r *rig) called(t *testing.T) []string {
	b, _ := os.ReadFile(r.calls)
	return strings.Fields(string(b))
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res, textOf(res)
}

// textOf is a result's text content, joined.
func textOf(res *mcp.CallToolResult) string {
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String()
}

// recorded reads the proxied session's envelopes: their types, and every
// signed record checked with the engine's key.
func (r *rig) recorded(t *testing.T) ([]string, []*ledger.Envelope) {
	t.Helper()
	chk := receipt.NewChecker(r.ring)
	var types []string
	var envs []*ledger.Envelope
	err := r.st.ReadSession(context.Background(), ledger.SessionKey{Tenant: "default", Session: r.proxy(t).Session()}, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil {
			return err
		}
		if f := chk.Check(e); f != nil {
			return f
		}
		types = append(types, e.EventType())
		envs = append(envs, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return types, envs
}

// TestAllowedAndDeniedCalls: for each face and revision, an allowed call
// reaches the server and is recorded (event, verdict, result, verdict); a
// denied one never reaches it, and the client gets isError with the
// reason.
func TestAllowedAndDeniedCalls(t *testing.T) {
	eachClient(t, func(t *testing.T) *rig { return newRig(t, nil) }, func(t *testing.T, r *rig, cs *mcp.ClientSession) {
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(tools.Tools) != 4 {
			t.Fatalf("tools/list: %v %v", err, tools)
		}
		res, text := call(t, cs, "read_file", map[string]any{"path": "README.md"})
		if res.IsError || !strings.Contains(text, "A small web shop") {
			t.Fatalf("allowed call: %v %q", res.IsError, text)
		}
		res, text = call(t, cs, "read_file", map[string]any{"path": "/home/dev/.ssh/id_rsa"})
		if !res.IsError || !strings.Contains(text, "deny (SECRET_ACCESS)") {
			t.Fatalf("denied call: %v %q", res.IsError, text)
		}
		if got := r.called(t); len(got) != 1 || got[0] != "read_file" {
			t.Fatalf("the server received %v, want the allowed read_file alone", got)
		}
		types, envs := r.recorded(t)
		want := "SessionStart Verdict PreMCPConnect Verdict PreToolUse Verdict PostToolUse Verdict PreToolUse Verdict"
		if strings.Join(types, " ") != want {
			t.Fatalf("recorded %v\nwant %s", types, want)
		}
		if post := envs[6].Payload(); !strings.Contains(string(post), "A small web shop") {
			t.Fatalf("the result is not on record: %s", post)
		}
	})
}

// approveToolChange approves the one open ask, the gateway's PreMCPConnect
// about a changed tool, as the on-call approver.
func (r *rig) approveToolChange(t *testing.T) {
	t.Helper()
	pending := r.eng.Pending(context.Background(), "default")
	if len(pending) != 1 || pending[0].HookPoint != "PreMCPConnect" || pending[0].ReasonCode != "TOOL_CHANGED" {
		t.Fatalf("pending: %+v", pending)
	}
	if _, err := r.eng.Resolve(context.Background(), "default", pending[0].PendingID, "approved", pending[0].ActionSHA256,
		receipt.Authenticated{Principal: "oncall@shop.example", By: "token:oncall"}); err != nil {
		t.Fatal(err)
	}
}

// approver serves the engine's API with an approver's token.
func (r *rig) approver(t *testing.T) string {
	tk := tokensOf(t, "approver-token", `"tenant":"default","role":"approver","name":"oncall","principal":"oncall@shop.example"`)
	api := httptest.NewServer(engine.Handler(engine.ServerConfig{Engine: r.eng, Store: r.st, Tokens: tk}))
	t.Cleanup(api.Close)
	return api.URL
}

// TestAskHeldThenApproved: an ask is held while an approver may answer;
// approved through POST /v1/resolutions, the call reaches the server once.
func TestAskHeldThenApproved(t *testing.T) {
	asks := func(t *testing.T) *rig {
		return newRig(t, func(m *manifest.Manifest) {
			m.ApprovalRequired = append(m.ApprovalRequired, "mcp__filesystem__create_issue")
		})
	}
	eachClient(t, asks, func(t *testing.T, r *rig, cs *mcp.ClientSession) {
		api := r.approver(t)
		done := make(chan string, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_issue", Arguments: map[string]any{"title": "flaky checkout test"}})
			switch {
			case err != nil:
				done <- "ERROR " + err.Error()
			case res.IsError:
				done <- "ERROR " + res.Content[0].(*mcp.TextContent).Text
			default:
				done <- res.Content[0].(*mcp.TextContent).Text
			}
		}()
		var pending []engine.PendingApproval
		for deadline := time.Now().Add(20 * time.Second); len(pending) == 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the ask never opened")
			}
			pending = r.eng.Pending(context.Background(), "default")
		}
		if len(r.called(t)) != 0 {
			t.Fatal("the asked call reached the server before it was approved")
		}
		var status engine.PendingStatus
		if code := getJSON(t, api+"/v1/pending/"+pending[0].PendingID+"?wait=0s", "approver-token", &status); code != 200 || status.Status != "open" {
			t.Fatalf("GET /v1/pending: %d %+v", code, status)
		}
		body := `{"pending_id":"` + pending[0].PendingID + `","resolution":"approved","action_sha256":"` + pending[0].ActionSHA256 + `"}`
		req, _ := http.NewRequest("POST", api+"/v1/resolutions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer approver-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("resolve: %v %v", err, resp)
		}
		resp.Body.Close()
		if text := <-done; !strings.Contains(text, "created issue #1") {
			t.Fatalf("after approval: %q", text)
		}
		if got := r.called(t); len(got) != 1 || got[0] != "create_issue" {
			t.Fatalf("the server received %v", got)
		}
		types, envs := r.recorded(t)
		if !strings.Contains(strings.Join(types, " "), "PreToolUse Verdict Resolution PreToolUse Verdict PostToolUse Verdict") {
			t.Fatalf("recorded %v", types)
		}
		for _, e := range envs {
			if e.EventType() == ledger.EventResolution && !strings.Contains(string(e.Payload()), `"authenticated_by":"token:oncall"`) {
				t.Fatalf("the resolution does not name its approver: %s", e.Payload())
			}
		}
	})
}

// getJSON GETs url with a bearer token and decodes the answer into v.
func getJSON(t *testing.T, url, token string, v any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return resp.StatusCode
}

// TestAskHeldThenTimedOut: nobody answers; the engine's timeout denies it,
// on record, and the call never reaches the server.
func TestAskHeldThenTimedOut(t *testing.T) {
	asks := func(t *testing.T) *rig {
		return newRig(t, func(m *manifest.Manifest) {
			m.ApprovalRequired = append(m.ApprovalRequired, "mcp__filesystem__create_issue")
		}, engine.WithPendingTimeout(300*time.Millisecond))
	}
	eachClient(t, asks, func(t *testing.T, r *rig, cs *mcp.ClientSession) {
		res, text := call(t, cs, "create_issue", map[string]any{"title": "x"})
		if !res.IsError || !strings.Contains(text, "TIMEOUT") {
			t.Fatalf("timed out ask: %v %q", res.IsError, text)
		}
		if len(r.called(t)) != 0 {
			t.Fatal("a timed-out ask reached the server")
		}
		_, envs := r.recorded(t)
		last := envs[len(envs)-1]
		if last.EventType() != ledger.EventResolution || !strings.Contains(string(last.Payload()), `"resolution":"timeout"`) {
			t.Fatalf("last record %s %s", last.EventType(), last.Payload())
		}
	})
}

// TestASecretInAResultIsRedactedAndSealed: the client gets the result with
// the token redacted; the record holds it sealed, not in the clear, and
// says the client got it redacted.
func TestASecretInAResultIsRedactedAndSealed(t *testing.T) {
	const token = "ghp_R7dKq2R7dKq2R7dKq2R7dKq2R7dKq2sP2a"
	eachClient(t, func(t *testing.T) *rig { return newRig(t, nil) }, func(t *testing.T, r *rig, cs *mcp.ClientSession) {
		res, text := call(t, cs, "read_file", map[string]any{"path": "deploy/NOTES.md"})
		if strings.Contains(text, token) || !strings.Contains(text, "Deploy with the bot token") {
			t.Fatalf("the client got: %v %q", res.IsError, text)
		}
		_, envs := r.recorded(t)
		sealed := false
		for _, e := range envs {
			if strings.Contains(string(e.Bytes()), token) {
				t.Fatalf("%s seq %d holds the token in the clear", e.EventType(), e.Seq())
			}
			sealed = sealed || (e.EventType() == "PostToolUse" && seal.Has(e.Payload()) && strings.Contains(string(e.Payload()), `"result_delivered":"redacted"`))
		}
		if !sealed {
			t.Fatal("the result is not recorded sealed, with its redaction")
		}
	})
}

// TestRugPull: the server changes one field of read_file's input schema
// (not its description) after its first list. The next list leaves the
// tool out, its call is denied TOOL_CHANGED without reaching the server,
// and once an approver answers the recorded re-declaration the tool is
// pinned as it now is and its call goes through.
func TestRugPull(t *testing.T) {
	eachClient(t, func(t *testing.T) *rig { return newRigWith(t, nil, []string{"-rug-pull"}) }, rugPull)
}

func rugPull(t *testing.T, r *rig, cs *mcp.ClientSession) {
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "read_file" {
			t.Fatal("the changed tool is still listed")
		}
	}
	if len(tools.Tools) != 3 {
		t.Fatalf("%d tools listed", len(tools.Tools))
	}
	res, text := call(t, cs, "read_file", map[string]any{"path": "README.md"})
	if !res.IsError || !strings.Contains(text, "deny (TOOL_CHANGED)") {
		t.Fatalf("a call to the changed tool: %v %q", res.IsError, text)
	}
	if len(r.called(t)) != 0 {
		t.Fatal("the changed tool's call reached the server")
	}
	r.approveToolChange(t)
	for deadline := time.Now().Add(10 * time.Second); r.proxy(t).toolPin("read_file")["status"] != "pinned"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the approval never re-pinned the tool")
		}
	}
	if tools, err = cs.ListTools(context.Background(), nil); err != nil || len(tools.Tools) != 4 {
		t.Fatalf("after re-pinning: %v %d tools", err, len(tools.Tools))
	}
	if res, text = call(t, cs, "read_file", map[string]any{"path": "README.md"}); res.IsError {
		t.Fatalf("after re-pinning: %q", text)
	}
	if got := r.called(t); len(got) != 1 || got[0] != "read_file" {
		t.Fatalf("the server received %v", got)
	}
	types, envs := r.recorded(t)
	joined := strings.Join(types, " ")
	if !strings.Contains(joined, "PreMCPConnect Verdict PreMCPConnect Verdict PreToolUse Verdict Resolution") {
		t.Fatalf("recorded %v", types)
	}
	found := false
	for _, e := range envs {
		found = found || (e.EventType() == "PreMCPConnect" && strings.Contains(string(e.Payload()), `"tool_changes":{"added":[],"changed":["read_file"],"removed":[]}`) &&
			strings.Contains(string(e.Payload()), `"tool_flags":{"read_file":["exfiltration"]}`))
		if e.Seq() < 4 && strings.Contains(string(e.Payload()), "tool_flags") {
			t.Fatalf("the fixture's own tools are flagged: %s", e.Payload())
		}
	}
	if !found {
		t.Fatal("the change, and its flag, are not on record")
	}
}

// bearer adds a token (and a session key, when given) to every request.
type bearer struct {
	token, key string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if b.key != "" {
		r.Header.Set(HeaderSession, b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestGatewayOverHTTP serves the proxy over Streamable HTTP with bearer
// auth: each revision's client gets the allowed call answered and the
// denied one refused before the server; sessions are named as documented
// (a 2026-07-28 client's key, an older client's Mcp-Session-Id); a request
// without a host token is refused.
func TestGatewayOverHTTP(t *testing.T) {
	r := newRig(t, nil)
	tk := tokensOf(t, "host-token", `"tenant":"acme","role":"host","name":"agent"`, "auditor-token", `"tenant":"acme","role":"auditor","name":"audit"`)
	_, url := serveGateway(t, r.config(t), r.upstream(t), tk)
	for _, c := range []struct{ version, key, named string }{{"2026-07-28", "build-42", "client"}, {"2026-07-28", "", "principal"}, {"2025-11-25", "", "mcp_session_id"}} {
		t.Run(c.version, func(t *testing.T) {
			transport := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{"host-token", c.key}}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), transport,
				&mcp.ClientSessionOptions{ProtocolVersion: c.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != c.version {
				t.Fatalf("negotiated %s", got)
			}
			if res, text := call(t, cs, "read_file", map[string]any{"path": "README.md"}); res.IsError || !strings.Contains(text, "A small web shop") {
				t.Fatalf("allowed call: %q", text)
			}
			if res, text := call(t, cs, "read_file", map[string]any{"path": "/home/dev/.ssh/id_rsa"}); !res.IsError || !strings.Contains(text, "deny") {
				t.Fatalf("denied call: %q", text)
			}
		})
	}
	if got := strings.Join(r.called(t), " "); got != "read_file read_file read_file" {
		t.Fatalf("the server received %q", got)
	}
	infos, err := r.st.Sessions(context.Background(), store.Filter{Tenant: "acme"})
	if err != nil || len(infos) != 3 {
		t.Fatalf("sessions: %v %+v", err, infos)
	}
	named := map[string]bool{}
	for _, info := range infos {
		r.st.ReadSession(context.Background(), info.Key(), func(m store.Msg) error {
			if strings.Contains(string(m.Data), `"event_type":"Verdict"`) && !strings.Contains(string(m.Data), `"authenticated_by":"token:agent"`) {
				t.Errorf("%s: a receipt does not attest the client's token: %s", info.Session, m.Data)
			}
			for _, n := range []string{"client", "principal", "mcp_session_id"} {
				if strings.Contains(string(m.Data), `"session_named_by":"`+n+`"`) {
					named[n] = true
				}
			}
			return nil
		})
	}
	if !named["client"] || !named["principal"] || !named["mcp_session_id"] {
		t.Fatalf("how the sessions were named is not on record: %v", named)
	}
	for _, tok := range []string{"", "auditor-token"} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 && resp.StatusCode != 403 {
			t.Fatalf("token %q: %d", tok, resp.StatusCode)
		}
	}
}

// TestLeastPrivilege: a manifest that declares only some of a server's
// tools (mcp__filesystem__read_* and list_dir, not mcp_call as a whole)
// lists only those; a call to another is denied PERMISSION_UNDECLARED
// without reaching the server.
func TestLeastPrivilege(t *testing.T) {
	eachClient(t, func(t *testing.T) *rig {
		return newRig(t, func(m *manifest.Manifest) {
			m.Tools = slices.DeleteFunc(m.Tools, func(s string) bool { return s == "mcp_call" })
			m.Tools = append(m.Tools, "mcp__filesystem__read_*", "mcp__filesystem__list_dir")
		})
	}, leastPrivilege)
}

func leastPrivilege(t *testing.T, r *rig, cs *mcp.ClientSession) {
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tool := range tools.Tools {
		listed = append(listed, tool.Name)
	}
	slices.Sort(listed)
	if strings.Join(listed, " ") != "list_dir read_file" {
		t.Fatalf("listed %v", listed)
	}
	res, text := call(t, cs, "create_issue", map[string]any{"title": "x"})
	if !res.IsError || !strings.Contains(text, "deny (PERMISSION_UNDECLARED)") {
		t.Fatalf("an undeclared tool: %q", text)
	}
	if res, text = call(t, cs, "list_dir", map[string]any{"path": "checkout"}); res.IsError {
		t.Fatalf("a declared tool: %q", text)
	}
	if got := strings.Join(r.called(t), " "); got != "list_dir" {
		t.Fatalf("the server received %q", got)
	}
}

// tokensOf writes a tokens file of (token, the entry's other members)
// pairs and loads it.
func tokensOf(t testing.TB, pairs ...string) *engine.Tokens {
	t.Helper()
	var entries []string
	for i := 0; i < len(pairs); i += 2 {
		sum := sha256.Sum256([]byte(pairs[i]))
		entries = append(entries, `{"sha256":"`+hex.EncodeToString(sum[:])+`",`+pairs[i+1]+`}`)
	}
	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(path, []byte(`{"tokens":[`+strings.Join(entries, ",")+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tk, err := engine.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestParallelClientsAndCalls: clients of two tenants open sessions at
// once, and each sends calls in parallel: every session is connected
// once (one SessionStart), every call is recorded with its verdict, the
// denied ones never reach the server, and the chains check.
func TestParallelClientsAndCalls(t *testing.T) {
	r := newRig(t, nil)
	tk := tokensOf(t, "acme-token", `"tenant":"acme","role":"host","name":"acme-agent"`, "beta-token", `"tenant":"beta","role":"host","name":"beta-agent"`)
	_, url := serveGateway(t, r.config(t), r.upstream(t), tk)
	const clients, calls = 4, 6
	var wg sync.WaitGroup
	errs := make(chan error, clients*calls)
	for c := 0; c < clients; c++ {
		token := []string{"acme-token", "beta-token"}[c%2]
		transport := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, "shared-key"}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "p", Version: "1"}, nil).Connect(context.Background(), transport, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		for i := 0; i < calls; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": fmt.Sprintf("/home/dev/.ssh/id_rsa%d", i)}})
				if err != nil || !res.IsError {
					errs <- fmt.Errorf("call %d: %v %+v", i, err, res)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := r.called(t); len(got) != 0 {
		t.Fatalf("denied calls reached the server: %v", got)
	}
	chk := receipt.NewChecker(r.ring)
	for _, tenant := range []string{"acme", "beta"} {
		infos, err := r.st.Sessions(context.Background(), store.Filter{Tenant: tenant})
		if err != nil || len(infos) != 1 {
			t.Fatalf("%s: %d sessions (one key, one token: one session): %v", tenant, len(infos), err)
		}
		counts := map[string]int{}
		r.st.ReadSession(context.Background(), infos[0].Key(), func(m store.Msg) error {
			e, err := ledger.Decode(m.Data, ledger.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if f := chk.Check(e); f != nil {
				t.Fatal(f)
			}
			counts[e.EventType()]++
			return nil
		})
		want := clients / 2 * calls
		if counts["SessionStart"] != 1 || counts["PreMCPConnect"] != 1 || counts["PreToolUse"] != want || counts["Verdict"] != want+2 {
			t.Fatalf("%s: recorded %v, want one connection and %d judged calls", tenant, counts, want)
		}
	}
}

// TestGatewayToHTTPUpstream: the gateway in front of a server reached
// over Streamable HTTP (--upstream URL), with clients of each revision:
// the proxy's requests to the server speak its own revision, whatever the
// client's (a stateless client's _meta and context stay on its side).
func TestGatewayToHTTPUpstream(t *testing.T) {
	r := newRig(t, func(m *manifest.Manifest) { m.Network.Domains = append(m.Network.Domains, "127.0.0.1") })
	url := startHTTPFixture(t)
	_, gw := serveGateway(t, Config{Engine: r.eng, Server: "filesystem", URI: url, Transport: "streamable_http"},
		func() (mcp.Transport, error) { return &mcp.StreamableClientTransport{Endpoint: url}, nil },
		tokensOf(t, "host-token", `"tenant":"default","role":"host","name":"agent"`))
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) {
			transport := &mcp.StreamableClientTransport{Endpoint: gw, HTTPClient: &http.Client{Transport: bearer{"host-token", "k-" + version}}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), transport,
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if res, text := call(t, cs, "read_file", map[string]any{"path": "README.md"}); res.IsError || !strings.Contains(text, "A small web shop") {
				t.Fatalf("allowed call: %q", text)
			}
			if res, text := call(t, cs, "read_file", map[string]any{"path": "/home/dev/.ssh/id_rsa"}); !res.IsError || !strings.Contains(text, "deny (SECRET_ACCESS)") {
				t.Fatalf("denied call: %q", text)
			}
		})
	}
}

// TestGatewaySessionsEnd: a session revision's client that closes its MCP
// session (DELETE) ends its agentledger session; a stateless client's
// session unused for the idle timeout ends (reason idle) and connects
// again when the client comes back; either way the upstream is let go.
func TestGatewaySessionsEnd(t *testing.T) {
	r := newRig(t, nil)
	cfg := r.config(t)
	cfg.IdleTimeout = 200 * time.Millisecond
	_, url := serveGateway(t, cfg, r.upstream(t), tokensOf(t, "host-token", `"tenant":"default","role":"host","name":"agent"`))
	connect := func(version, key string) *mcp.ClientSession {
		transport := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{"host-token", key}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), transport,
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	// ends reports the SessionEnd reasons of the tenant's sessions.
	ends := func() map[string][]string {
		infos, _ := r.st.Sessions(context.Background(), store.Filter{Tenant: "default"})
		out := map[string][]string{}
		for _, info := range infos {
			r.st.ReadSession(context.Background(), info.Key(), func(m store.Msg) error {
				if _, reason, ok := strings.Cut(string(m.Data), `"reason":"`); ok && strings.Contains(string(m.Data), `"hook_point":"SessionEnd"`) {
					out[info.Session] = append(out[info.Session], reason[:strings.IndexByte(reason, '"')])
				}
				return nil
			})
		}
		return out
	}
	waitFor := func(what string, ok func(map[string][]string) bool) map[string][]string {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			e := ends()
			if ok(e) {
				return e
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: ends %v", what, e)
			}
		}
	}
	old := connect("2025-11-25", "")
	if res, text := call(t, old, "list_dir", map[string]any{"path": "checkout"}); res.IsError {
		t.Fatal(text)
	}
	old.Close()
	waitFor("the closed session", func(e map[string][]string) bool {
		for s, reasons := range e {
			if strings.Contains(s, "-sid-") && slices.Equal(reasons, []string{"client_closed"}) {
				return true
			}
		}
		return false
	})
	cs := connect("2026-07-28", "idle-key")
	defer cs.Close()
	if res, text := call(t, cs, "list_dir", map[string]any{"path": "checkout"}); res.IsError {
		t.Fatal(text)
	}
	waitFor("the idle session", func(e map[string][]string) bool {
		for s, reasons := range e {
			if strings.HasSuffix(s, "-idle-key") && slices.Equal(reasons, []string{"idle"}) {
				return true
			}
		}
		return false
	})
	if res, text := call(t, cs, "read_file", map[string]any{"path": "README.md"}); res.IsError {
		t.Fatalf("back after idle: %q", text)
	}
	infos, _ := r.st.Sessions(context.Background(), store.Filter{Tenant: "default"})
	for _, info := range infos {
		if !strings.HasSuffix(info.Session, "-idle-key") {
			continue
		}
		starts := 0
		r.st.ReadSession(context.Background(), info.Key(), func(m store.Msg) error {
			if strings.Contains(string(m.Data), `"hook_point":"SessionStart"`) && strings.Contains(string(m.Data), `"source":"startup"`) {
				starts++
			}
			return nil
		})
		if starts != 2 {
			t.Fatalf("the idle session started %d times, want 2 (again when the client came back)", starts)
		}
	}
}

// TestReadOnlyToolsAfterTaint: once a result has tainted the session, a
// pinned tool its server declares read-only and closed-world (read_file)
// is still called without an ask, while one that can write (create_issue)
// is asked about (here: nobody answers, so it times out, denied).
func TestReadOnlyToolsAfterTaint(t *testing.T) {
	short := func(t *testing.T) *rig { return newRig(t, nil, engine.WithPendingTimeout(300*time.Millisecond)) }
	eachClient(t, short, func(t *testing.T, r *rig, cs *mcp.ClientSession) {
		for _, path := range []string{"README.md", "checkout/total.go"} {
			if res, text := call(t, cs, "read_file", map[string]any{"path": path}); res.IsError {
				t.Fatalf("read_file %s: %q", path, text)
			}
		}
		res, text := call(t, cs, "create_issue", map[string]any{"title": "x"})
		if !res.IsError || !strings.Contains(text, "TIMEOUT") {
			t.Fatalf("create_issue after taint: %q", text)
		}
		_, envs := r.recorded(t)
		asked := false
		for _, e := range envs {
			asked = asked || (e.EventType() == ledger.EventVerdict && strings.Contains(string(e.Payload()), `"reason_code":"TAINTED_TO_HIGH_RISK"`))
		}
		if !asked {
			t.Fatal("the write after taint was not asked about")
		}
	})
}
