package mcpproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessageBytes bounds one JSON-RPC message from a client. A longer one
// is refused (and recorded by its first bytes), on either face.
const MaxMessageBytes = 4 << 20

// The JSON-RPC 2.0 error codes the proxy answers bad input with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
)

// clientMethods are the methods an MCP client may send a server, in every
// revision the proxy speaks (requests and notifications).
var clientMethods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true, "subscriptions/listen": true,
	"tools/list": true, "tools/call": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true, "resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true, "completion/complete": true, "logging/setLevel": true,
	"notifications/initialized": true, "notifications/cancelled": true, "notifications/progress": true, "notifications/roots/list_changed": true,
}

// beforeInitialize are the requests a client of the session revisions may
// send before initialize (a stateless client sends no initialize).
var beforeInitialize = map[string]bool{"initialize": true, "ping": true, "server/discover": true}

// refusal is why a message from the client is not passed on: the JSON-RPC
// error it is answered with (none for a notification) and, for the
// record, the method as far as it could be read.
type refusal struct {
	id      json.RawMessage // the request's id; null when it could not be read
	code    int
	message string
	method  string
	notify  bool // a notification: refused and recorded, not answered
}

// answer is the JSON-RPC response that refuses the message.
func (r *refusal) answer() []byte {
	id := r.id
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": r.code, "message": r.message}})
	return b
}

// where names the refused message for the record: its method when it is
// one a client may send, else "jsonrpc" (the name a client made up could
// hold anything, a secret included; the excerpt keeps it, redacted).
func (r *refusal) where() string {
	if !clientMethods[r.method] {
		return "jsonrpc"
	}
	return r.method
}

// wireMessage is a JSON-RPC message's envelope, as screen reads it.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// screen checks one message from the client before the SDK reads it:
// nil lets it pass. size is its whole length (it may be longer than raw,
// the part that was read); initialized says whether the client has begun
// its session (initialize, or a request of the stateless revision).
func screen(raw []byte, size int, initialized bool) *refusal {
	if size > MaxMessageBytes {
		return &refusal{code: codeInvalidRequest, message: fmt.Sprintf("the message is %d bytes or more; the limit is %d", size, MaxMessageBytes)}
	}
	trimmed := bytes.TrimSpace(raw)
	if !json.Valid(trimmed) {
		return &refusal{code: codeParseError, message: "parse error: the message is not JSON"}
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return &refusal{code: codeInvalidRequest, message: "a batch: JSON-RPC batches were removed in MCP 2025-06-18; send each message alone"}
	}
	if err := envelopeKeys(trimmed); err != nil {
		return &refusal{code: codeInvalidRequest, message: "invalid request: " + err.Error()}
	}
	var m wireMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return &refusal{code: codeInvalidRequest, message: "invalid request: not a JSON-RPC message object"}
	}
	r := &refusal{code: codeInvalidRequest}
	if validID(m.ID) {
		r.id = m.ID
	}
	if m.Method != nil {
		r.method = *m.Method
	}
	switch {
	case m.JSONRPC != "2.0":
		r.message = `invalid request: "jsonrpc" must be "2.0"`
	case len(m.ID) > 0 && !validID(m.ID):
		r.message = `invalid request: "id" must be a string or an integer of at most 64 bits`
	case m.Method == nil && (len(m.ID) == 0 || (len(m.Result) == 0) == (len(m.Error) == 0)):
		r.message = `invalid request: neither a request ("method") nor a response ("result" or "error" with its "id")`
	case m.Method == nil:
		return nil // a response to the server's request (sampling, elicitation, roots)
	case !clientMethods[*m.Method]:
		r.code, r.message, r.notify = codeMethodNotFound, fmt.Sprintf("method not found: %q", *m.Method), len(m.ID) == 0
	case len(m.ID) > 0 && strings.HasPrefix(*m.Method, "notifications/"):
		r.message = fmt.Sprintf("invalid request: %s is a notification and carries no id", *m.Method)
	case len(m.ID) == 0 && !strings.HasPrefix(*m.Method, "notifications/"):
		r.message = fmt.Sprintf("invalid request: %s is a request and needs an id", *m.Method)
	case len(m.ID) > 0 && !initialized && !beforeInitialize[*m.Method] && !stateless(m.Params):
		r.message = fmt.Sprintf("invalid request: %s before initialize (the session revisions begin with initialize)", *m.Method)
	default:
		return nil
	}
	return r
}

// validID is a JSON-RPC id the proxy passes on: a string, or an integer
// that fits in 64 bits (the SDK keeps ids as int64; a fraction or an
// exponent would come back as another id).
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		return true
	}
	_, err := strconv.ParseInt(string(id), 10, 64)
	return err == nil
}

// envelopeNames are the members of a JSON-RPC message.
var envelopeNames = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// envelopeKeys refuses a message object whose members are named twice, or
// named in another case than JSON-RPC's ("Method"): readers that match
// names differently (Go's encoding/json ignores case) would read another
// message than the one judged.
func envelopeKeys(raw []byte) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return errors.New("not a JSON-RPC message object")
	}
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		if seen[k] {
			return fmt.Errorf("the member %q is named twice", k)
		}
		seen[k] = true
		for _, name := range envelopeNames {
			if k != name && strings.EqualFold(k, name) {
				return fmt.Errorf("the member %q: JSON-RPC names it %q", k, name)
			}
		}
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

// stateless says whether a request's params carry the stateless
// revision's protocol version in _meta (2026-07-28 has no initialize).
func stateless(params json.RawMessage) bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	var v string
	return json.Unmarshal(p.Meta[mcp.MetaKeyProtocolVersion], &v) == nil && v >= statelessRevision
}

// begins says whether a message that passed screen begins the client's
// session.
func begins(raw []byte) bool {
	var m wireMessage
	if json.Unmarshal(raw, &m) != nil || m.Method == nil {
		return false
	}
	return *m.Method == "initialize" || *m.Method == "server/discover" || stateless(m.Params)
}
