package ledger

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// A bundle is NDJSON: one envelope's stored bytes per line, each line ended
// by '\n', ordered by tenant, session and seq. The format needs no header,
// so bundles concatenate.

// ReadLines calls fn with each line of NDJSON input (a bundle, or events to
// append) and its 1-based line number. Blank lines are skipped. A line longer
// than lim.MaxBytes is an *InputError naming it. fn MUST NOT keep line after
// it returns. ReadLines stops at the first error fn returns and returns it.
func ReadLines(r io.Reader, lim Limits, fn func(line []byte, n int) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	max := lim.Bytes()
	var long []byte
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
				if len(long) > max+1 {
					return &InputError{Line: n, Offset: -1, Msg: fmt.Sprintf("line is over the %d-byte limit", max)}
				}
			}
			line = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read bundle line %d: %w", n, err)
		}
		body := line
		if len(body) > 0 && body[len(body)-1] == '\n' {
			body = body[:len(body)-1]
		}
		if len(body) > 0 && body[len(body)-1] == '\r' {
			body = body[:len(body)-1]
		}
		if len(body) > max {
			return &InputError{Line: n, Offset: -1, Msg: fmt.Sprintf("line is %d bytes, over the %d-byte limit", len(body), max)}
		}
		if len(body) > 0 && !isBlank(body) {
			if ferr := fn(body, n); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// VerifyBundle reads a bundle and verifies every chain in it.
func VerifyBundle(r io.Reader, m Mode, lim Limits) (*Report, error) {
	v := NewVerifier(m, lim)
	if err := v.ReadBundle(r); err != nil {
		return nil, err
	}
	return v.Report(), nil
}

// BundleWriter writes envelopes as bundle lines.
type BundleWriter struct {
	w *bufio.Writer
}

// NewBundleWriter returns a BundleWriter on w. Call Flush when done.
func NewBundleWriter(w io.Writer) *BundleWriter {
	return &BundleWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// Write writes one envelope's stored bytes and a newline.
func (b *BundleWriter) Write(e *Envelope) error { return b.WriteRaw(e.raw) }

// WriteRaw writes stored envelope bytes exactly as given, and a newline.
func (b *BundleWriter) WriteRaw(raw []byte) error {
	if _, err := b.w.Write(raw); err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	if err := b.w.WriteByte('\n'); err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	return nil
}

// Flush writes any buffered data.
func (b *BundleWriter) Flush() error {
	if err := b.w.Flush(); err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	return nil
}

// LoadBundle reads a whole bundle, per session or in stream order (see
// Collector.ReadStream), and verifies it in deep mode. When the report has
// no fault it also returns the bundle's chains, one per session, ordered by
// tenant and session, each in seq order. The caller refuses a bundle whose
// report has faults.
func LoadBundle(r io.Reader, lim Limits) ([][]*Envelope, *Report, error) {
	c := NewCollector(lim)
	if err := c.ReadStream(r); err != nil {
		return nil, nil, err
	}
	sessions, rep := c.Chains()
	if !rep.OK() {
		return nil, rep, nil
	}
	chains := make([][]*Envelope, len(sessions))
	for i, sc := range sessions {
		chains[i] = sc.Envelopes
	}
	return chains, rep, nil
}
