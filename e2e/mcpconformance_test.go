package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGatewayIsTransparent runs the official MCP TypeScript SDK's client
// (testdata/mcpclient.mjs: one fixed session that uses every feature of
// the protocol) against server-everything from the npm registry, directly
// and through engine mcp-proxy, over stdio and over Streamable HTTP, at
// the SDK's latest revision (2025-11-25). Every answer, every notification
// and every request the server makes of the client must be the same both
// ways, except:
//   - where the record shows the gateway judged: a call it denied, a
//     result it redacted (each difference must be on record);
//   - what the comparison normalizes, each for its reason (see normalize).
//
// Tools, resources, prompts, completions, subscriptions and their updates,
// log messages and the level, progress, sampling, elicitation and roots
// (with a change of roots) are all compared; sampling and elicitation
// must be on record as the proxy judged them.
func TestGatewayIsTransparent(t *testing.T) {
	sdk := filepath.Dir(host(t, "AGENTLEDGER_E2E_MCPSDK"))
	everything := host(t, "AGENTLEDGER_E2E_EVERYTHING")
	engine := filepath.Join(buildPrograms(t), "engine")
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			data := t.TempDir()
			var direct, proxied transcript
			if transport == "stdio" {
				direct = runMCPClient(t, sdk, map[string]any{"transport": "stdio", "command": everything, "args": []string{"stdio"}})
				proxied = runMCPClient(t, sdk, map[string]any{"transport": "stdio", "command": engine,
					"args": []string{"mcp-proxy", "--data", data, "--name", "everything", "--", everything, "stdio"}})
			} else {
				upstream := startProgram(t, []string{"PORT=" + freePort(t)}, everything, "streamableHttp")
				url := "http://" + upstream.addr + "/mcp"
				direct = runMCPClient(t, sdk, map[string]any{"transport": "http", "url": url})
				gw := startConformanceGateway(t, engine, data, everything)
				proxied = runMCPClient(t, sdk, map[string]any{"transport": "http", "url": "http://" + gw.addr + "/",
					"headers": map[string]string{"Authorization": "Bearer " + conformanceToken}})
				gw.stop(t)
			}
			stopEngine(data)
			compareTranscripts(t, transport, direct, proxied, judgedOnRecord(t, data))
		})
	}
}

// conformanceToken is the host token of startConformanceGateway's
// gateway.
const conformanceToken = "conformance-host-token-0123456789"

// startConformanceGateway starts engine mcp-proxy over Streamable HTTP,
// recording in data. The gateway runs server-everything itself, once per
// session (a server reached by URL is a network destination the manifest
// must name).
func startConformanceGateway(t *testing.T, engine, data, everything string) *program {
	t.Helper()
	sum := sha256.Sum256([]byte(conformanceToken))
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	os.WriteFile(tokens, []byte(`{"tokens":[{"sha256":"`+hex.EncodeToString(sum[:])+`","tenant":"default","role":"host","name":"conformance"}]}`), 0o600)
	return startProgram(t, nil, engine, "mcp-proxy", "--listen", "127.0.0.1:"+freePort(t), "--tokens", tokens,
		"--data", data, "--name", "everything", "--", everything, "stdio")
}

// transcript is what the conformance client saw.
type transcript struct {
	Server        map[string]any   `json:"server"`
	Steps         []map[string]any `json:"steps"`
	Notifications []map[string]any `json:"notifications"`
	Asked         []map[string]any `json:"asked"`
	Progress      map[string][]any `json:"progress"`
}

// runMCPClient runs the conformance client with config and reads its
// transcript.
func runMCPClient(t *testing.T, sdk string, config map[string]any) transcript {
	t.Helper()
	raw, _ := json.Marshal(config)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "testdata/mcpclient.mjs", sdk, string(raw))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the conformance client (%s): %v\n%s", config["transport"], err, stderr.String())
	}
	var tr transcript
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatalf("the conformance client's transcript: %v: %.300s", err, out)
	}
	if len(tr.Steps) == 0 {
		t.Fatal("the conformance client took no step")
	}
	return tr
}

// judgedOnRecord is what the gateway's record says it did to each tool
// call (by tool: "deny" when it refused the call, "redacted" when the
// client got the result redacted), after checking that the server's
// sampling and elicitation are on record too.
func judgedOnRecord(t *testing.T, data string) map[string]string {
	t.Helper()
	r := &hostRun{records: readRecord(t, data)}
	judged := map[string]string{}
	for _, rec := range r.inOrder("PreToolUse") {
		if decisionOf(rec.verdict) == "deny" {
			judged[strings.TrimPrefix(fmt.Sprint(rec.event["tool_name_native"]), "mcp__everything__")] = "deny"
		}
	}
	for _, rec := range r.inOrder("PostToolUse") {
		if rec.event["result_delivered"] == "redacted" {
			judged[strings.TrimPrefix(fmt.Sprint(rec.event["tool_name_native"]), "mcp__everything__")] = "redacted"
		}
	}
	for _, kind := range []string{"PreLLMRequest", "PostLLMResponse", "PreUserInput"} {
		if len(r.inOrder(kind)) == 0 {
			t.Errorf("no %s on record: the server's sampling and elicitation must be judged and recorded", kind)
		}
	}
	return judged
}

// compareTranscripts fails on any difference between the direct and the
// proxied session that the record does not account for.
func compareTranscripts(t *testing.T, transport string, direct, proxied transcript, judged map[string]string) {
	t.Helper()
	if a, b := canonical(normalize(direct.Server)), canonical(normalize(proxied.Server)); a != b {
		t.Errorf("the server as the client sees it differs:\n direct  %.600s\n proxied %.600s", a, b)
	}
	steps := map[string]map[string]any{}
	for _, s := range proxied.Steps {
		steps[fmt.Sprint(s["step"])] = s
	}
	if len(direct.Steps) != len(proxied.Steps) {
		t.Errorf("%d steps direct, %d proxied", len(direct.Steps), len(proxied.Steps))
	}
	accounted := 0
	for _, d := range direct.Steps {
		name := fmt.Sprint(d["step"])
		a, b := canonical(normalize(d)), canonical(normalize(steps[name]))
		if a == b {
			continue
		}
		tool, isCall := strings.CutPrefix(name, "tools/call ")
		tool, _, _ = strings.Cut(tool, " ")
		if how := judged[tool]; isCall && how != "" {
			t.Logf("%s differs, on record as %s", name, how)
			accounted++
			continue
		}
		t.Errorf("%s differs and the record does not say why:\n direct  %.600s\n proxied %.600s", name, a, b)
	}
	if accounted == 0 {
		t.Error("no difference on record: the session's unknown tool should be denied and the elicitation's e-mail redacted")
	}
	// Notifications: the same ones (the server's timers decide how many of
	// each); over HTTP, a list change the server sends before the client's
	// stream is open is lost on the direct session, so list changes are
	// compared over stdio alone.
	kinds := func(tr transcript) []string {
		var out []string
		for _, n := range tr.Notifications {
			if transport == "http" && strings.HasSuffix(fmt.Sprint(n["method"]), "/list_changed") {
				continue
			}
			s := canonical(normalize(n))
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		slices.Sort(out)
		return out
	}
	if a, b := kinds(direct), kinds(proxied); !slices.Equal(a, b) {
		t.Errorf("notifications differ:\n direct  %v\n proxied %v", a, b)
	}
	if a, b := canonical(normalize(direct.Asked)), canonical(normalize(proxied.Asked)); a != b {
		t.Errorf("what the server asked of the client differs:\n direct  %.600s\n proxied %.600s", a, b)
	}
	// The server's last progress races its answer (the client drops a
	// progress that comes after it), so the counts may differ by one.
	for op, d := range direct.Progress {
		if n := len(proxied.Progress[op]); n == 0 || n < len(d)-1 || n > len(d)+1 {
			t.Errorf("progress of %s: %d notifications direct, %d proxied", op, len(d), n)
		}
	}
	if len(direct.Progress) == 0 {
		t.Error("the direct session had no progress: the comparison proves nothing of it")
	}
}

// clock and session are what the server writes that changes from run to
// run: a wall-clock time, and a session's id (its HTTP session's, which the
// gateway's own connection to it has too, under another id).
var (
	clock       = regexp.MustCompile(`\d{1,2}:\d\d:\d\d [AP]M`)
	fromSession = regexp.MustCompile(` ?from session [0-9a-f-]{36}`)
	sessionID   = regexp.MustCompile(`(session )(undefined|[0-9a-f-]{36})`)
)

// normalize drops from v what differs by design, each for its reason:
//   - false booleans: the Go SDK the gateway is built on omits a false
//     (a prompt argument's required, a completion's hasMore), which the
//     schema reads as false;
//   - tasks (the server's capability, a tool's execution.taskSupport):
//     experimental in 2025-11-25, and the Go SDK relays no task (see
//     docs/mcp.md);
//   - cacheScope and ttlMs: the gateway marks its answers private to the
//     session (what a client sees depends on its pins and redactions);
//   - an elicitation's mode "form": the Go SDK names the mode the
//     revision gives a request that names none;
//   - times and session ids in the server's own text (the session the
//     gateway runs its server in has none).
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e == false || k == "tasks" || k == "execution" || k == "cacheScope" || k == "ttlMs" || (k == "mode" && (e == "form" || e == "")) {
				continue
			}
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case string:
		x = fromSession.ReplaceAllString(clock.ReplaceAllString(x, "TIME"), "")
		return strings.TrimRight(sessionID.ReplaceAllString(x, "${1}ID"), " ")
	}
	return v
}

func canonical(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// program is a server started for a test, listening on addr.
type program struct {
	cmd  *exec.Cmd
	addr string
	out  *bytes.Buffer
}

// startProgram starts a program that listens on 127.0.0.1 (the port given
// in its arguments or env) and waits until it accepts connections.
func startProgram(t *testing.T, env []string, name string, args ...string) *program {
	t.Helper()
	port := ""
	for _, a := range append(slices.Clone(env), args...) {
		if i := strings.LastIndex(a, ":"); strings.HasPrefix(a, "127.0.0.1:") && i > 0 {
			port = a[i+1:]
		}
		if p, ok := strings.CutPrefix(a, "PORT="); ok {
			port = p
		}
	}
	p := &program{cmd: exec.Command(name, args...), addr: "127.0.0.1:" + port, out: &bytes.Buffer{}}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	for deadline := time.Now().Add(time.Minute); ; {
		if c, err := net.Dial("tcp", p.addr); err == nil {
			c.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s: %s", filepath.Base(name), p.addr, p.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop interrupts the program and waits for it (a gateway records its
// sessions' ends).
func (p *program) stop(t *testing.T) {
	p.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Errorf("%s did not stop: %s", p.cmd.Path, p.out)
	}
}

// freePort is a port free on 127.0.0.1 now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}
