package engine

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/agentledger/agentledger/aarts"
)

// ServeStdio speaks the AARTS subprocess model on in and out: the first
// line must be the version check ({"aarts_version": "0.1"}, answered like
// POST /v1/version); after it every line is a hook event, answered with one
// line (a HookResponse). The peer is the host that started the engine, so
// its actions are attested as the user running both (LocalIdentity); a
// resolution line ({"pending_id", ...}) is refused, since a host never
// approves its own ask (an approver resolves through the HTTP API; what
// the user answered in the host's own prompt comes as PostAskResolution).
// A line that cannot be decided gets {"error": "..."} and the session goes
// on; after a version check answered compatible:false it stops. It returns
// at the end of in.
func ServeStdio(ctx context.Context, e *Engine, tenant string, in io.Reader, out io.Writer) error {
	auth := LocalIdentity()
	lr := newLineReader(in, int64(e.decider.Limits.Bytes()))
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	first := true
	for n := 1; ; n++ {
		line, size, sum, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 && size == int64(len(line)) {
			continue
		}
		if first {
			var v struct {
				AARTSVersion string `json:"aarts_version"`
				HookPoint    string `json:"hook_point"`
			}
			if err := json.Unmarshal(line, &v); err != nil || v.AARTSVersion == "" || v.HookPoint != "" {
				_ = enc.Encode(apiError{Error: fmt.Sprintf(`line %d: the first line must be the version check {"aarts_version": %q}`, n, aarts.Version)})
				return errors.New("stdio: no version check")
			}
			answer := versionAnswer(v.AARTSVersion)
			if err := enc.Encode(answer); err != nil {
				return err
			}
			if answer["compatible"] != true {
				return fmt.Errorf("stdio: AARTS %s is not compatible with this engine (%s)", v.AARTSVersion, aarts.Version)
			}
			first = false
			continue
		}
		var probe struct {
			PendingID string `json:"pending_id"`
		}
		_ = json.Unmarshal(line, &probe)
		var answer any
		if probe.PendingID != "" && size == int64(len(line)) {
			answer = apiError{Error: fmt.Sprintf("line %d: a host cannot resolve its own ask; an approver resolves it with POST /v1/resolutions", n)}
		} else {
			answer = e.Answer(ctx, Request{Tenant: tenant, Auth: auth, Body: line, Size: size, SHA256: sum})
		}
		if err := enc.Encode(answer); err != nil {
			return err
		}
	}
}

// lineReader reads newline-delimited input, keeping at most keep+1 bytes
// of a line: a longer line is read to its end (hashed, not kept), so one
// oversized line is rejected on its own and the stream goes on.
type lineReader struct {
	r    *bufio.Reader
	keep int64
}

func newLineReader(r io.Reader, keep int64) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), keep: keep}
}

// next returns the next line (without its newline) or its first keep+1
// bytes, the line's length, and when the line was cut, the hex SHA-256 of
// the whole line.
func (l *lineReader) next() (line []byte, size int64, sum string, err error) {
	var h hash.Hash
	for {
		frag, err := l.r.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull && !(err == io.EOF && len(frag) > 0) {
			if err == io.EOF && size > 0 {
				break
			}
			return nil, 0, "", err
		}
		last := err == nil || err == io.EOF
		if last && len(frag) > 0 && frag[len(frag)-1] == '\n' {
			frag = frag[:len(frag)-1]
		}
		size += int64(len(frag))
		if room := l.keep + 1 - int64(len(line)); room > 0 {
			line = append(line, frag[:min(int64(len(frag)), room)]...)
		}
		if h == nil && size > l.keep {
			h = sha256.New()
			h.Write(line[:min(int64(len(line)), size-int64(len(frag)))])
			h.Write(frag)
		} else if h != nil {
			h.Write(frag)
		}
		if last {
			break
		}
	}
	if h != nil {
		sum = hex.EncodeToString(h.Sum(nil))
	}
	return line, size, sum, nil
}

// versionAnswer answers an AARTS version check.
func versionAnswer(requested string) map[string]any {
	return map[string]any{"compatible": aarts.Compatible(requested), "engine_id": ID, "engine_version": Version, "aarts_version": aarts.Version}
}
