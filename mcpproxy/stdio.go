package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/ledger"
)

// Via names the proxy as the transport of the input it refuses, in the
// record (a Rejection's host).
const Via = "mcp-proxy"

// StdioTransport is the proxy's stdio face: newline-delimited JSON-RPC
// read from r and written to w (closed with the connection when they are
// Closers). Every message the client sends is screened before the SDK
// reads it; one that is refused (not JSON, a batch, not JSON-RPC, an
// unknown method, a request before initialize, longer than
// MaxMessageBytes) is answered with its JSON-RPC error, recorded as
// Rejected in the proxy's session, and goes no further.
func (p *Proxy) StdioTransport(r io.Reader, w io.Writer) mcp.Transport {
	return &stdioTransport{p: p, r: r, w: w}
}

type stdioTransport struct {
	p *Proxy
	r io.Reader
	w io.Writer
}

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{p: t.p, r: t.r, w: t.w, lines: make(chan line), closed: make(chan struct{})}
	go c.read()
	return c, nil
}

// line is one message as read: its first MaxMessageBytes+1 bytes, its
// whole length, or the error that ended the input.
type line struct {
	data []byte
	size int
	err  error
}

type stdioConn struct {
	p      *Proxy
	r      io.Reader
	w      io.Writer
	lines  chan line
	closed chan struct{}
	once   sync.Once

	writeMu     sync.Mutex
	initialized bool // read by Read alone
}

// read splits the input into lines, keeping no more than one message's
// limit of any of them.
func (c *stdioConn) read() {
	br := bufio.NewReaderSize(c.r, 64<<10)
	for {
		var l line
		for {
			chunk, err := br.ReadSlice('\n')
			l.size += len(chunk)
			if len(l.data) <= MaxMessageBytes {
				l.data = append(l.data, chunk[:min(len(chunk), MaxMessageBytes+1-len(l.data))]...)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && l.size == 0 {
				l.err = err
			}
			break
		}
		select {
		case c.lines <- l:
		case <-c.closed:
			return
		}
		if l.err != nil {
			return
		}
	}
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var l line
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l = <-c.lines:
		}
		if l.err != nil {
			return nil, l.err
		}
		if len(bytes.TrimSpace(l.data)) == 0 {
			continue // a blank line
		}
		// The line's newline is not the message's.
		size := l.size - (len(l.data) - len(bytes.TrimRight(l.data, "\r\n")))
		if r := screen(l.data, size, c.initialized); r != nil {
			c.refuse(ctx, l, r)
			continue
		}
		msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(l.data))
		if err != nil {
			c.refuse(ctx, l, &refusal{code: codeInvalidRequest, message: "invalid request: " + err.Error()})
			continue
		}
		c.initialized = c.initialized || begins(l.data)
		return msg, nil
	}
}

// refuse records a refused message and answers it.
func (c *stdioConn) refuse(ctx context.Context, l line, r *refusal) {
	c.p.cfg.Engine.RecordRejected(ctx, ledger.SessionKey{Tenant: c.p.cfg.Tenant, Session: c.p.session}, Via, r.where(),
		l.data[:min(len(l.data), MaxMessageBytes)], len(l.data) > MaxMessageBytes, r.message)
	if !r.notify {
		c.writeLine(r.answer())
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeLine(b)
}

// writeLine writes one message and its newline in one write.
func (c *stdioConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(b, '\n'))
	return err
}

func (c *stdioConn) Close() error {
	var errs []error
	c.once.Do(func() {
		close(c.closed)
		if rc, ok := c.r.(io.Closer); ok {
			errs = append(errs, rc.Close())
		}
		if wc, ok := c.w.(io.Closer); ok {
			errs = append(errs, wc.Close())
		}
	})
	return errors.Join(errs...)
}

func (c *stdioConn) SessionID() string { return "" }

// ReadInitialize reads the first message a stdio client sends, for the
// capabilities it declares (in an initialize request, or in the _meta of
// a stateless client's first request; nil when the proxy cannot read
// them), and returns a reader that gives the message again and
// then the rest of r, closing r when closed. The proxy's connection to the
// server declares what the client declared (Config.ClientCapabilities):
// a server offers what a client's capabilities enable.
func ReadInitialize(r io.Reader) (*mcp.ClientCapabilities, io.ReadCloser, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var first []byte
	for {
		line, err := br.ReadSlice('\n')
		first = append(first, line...)
		if errors.Is(err, bufio.ErrBufferFull) && len(first) <= MaxMessageBytes {
			continue
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) && len(first) == 0 {
			return nil, nil, err
		}
		break
	}
	rest := &replayed{Reader: io.MultiReader(bytes.NewReader(first), br), under: r}
	if len(first) > MaxMessageBytes {
		return nil, rest, nil // refused as any oversized message is
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Capabilities json.RawMessage            `json:"capabilities"`
			Meta         map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(bytes.TrimSpace(first), &msg) != nil {
		return nil, rest, nil
	}
	declared := msg.Params.Capabilities
	if msg.Method != "initialize" {
		// A stateless client (2026-07-28) begins with server/discover,
		// and says what it can do in each request's _meta.
		declared = msg.Params.Meta[mcp.MetaKeyClientCapabilities]
	}
	if len(declared) == 0 {
		return nil, rest, nil
	}
	caps := &mcp.ClientCapabilities{}
	var roots struct {
		Roots *mcp.RootCapabilities `json:"roots"`
	}
	if json.Unmarshal(declared, caps) != nil || json.Unmarshal(declared, &roots) != nil {
		return nil, rest, nil
	}
	// The SDK declares roots from RootsV2 alone (its Roots is not a
	// pointer, so cannot say none).
	caps.RootsV2 = roots.Roots
	return caps, rest, nil
}

// replayed is a reader over bytes already read and the rest, which closes
// the reader underneath.
type replayed struct {
	io.Reader
	under io.Reader
}

func (r *replayed) Close() error {
	if c, ok := r.under.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
