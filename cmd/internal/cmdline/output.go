package cmdline

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// Format returns the --format value, text or json.
func Format(c *cli.Context) (string, error) {
	f := Resolve(c, FlagFormat)
	if f != "text" && f != "json" {
		return "", Usage(fmt.Errorf("--format %q: want text or json", f))
	}
	return f, nil
}

// Render writes v as one JSON document when format is json, else calls
// text.
func Render(w io.Writer, format string, v any, text func(io.Writer) error) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	return text(w)
}

// Progress draws a one-line progress indicator on a terminal; on anything
// else it draws nothing.
type Progress struct {
	w     io.Writer
	label string
	on    bool
	last  time.Time
	// Total, when known, turns the counter into a bar.
	Total uint64
	// Unit names what is counted; "envelopes" when empty.
	Unit string
}

// NewProgress returns a Progress on w that draws only when w is a terminal.
func NewProgress(w io.Writer, label string) *Progress {
	on := false
	if f, ok := w.(*os.File); ok {
		on = term.IsTerminal(int(f.Fd()))
	}
	return &Progress{w: w, label: label, on: on}
}

// Update shows done items, at most ten times a second.
func (p *Progress) Update(done uint64) {
	if p == nil || !p.on || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	if p.Total == 0 {
		fmt.Fprintf(p.w, "\r%s: %d %s", p.label, done, cmp.Or(p.Unit, "envelopes"))
		return
	}
	const width = 30
	filled := int(min(done, p.Total) * width / p.Total)
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d", p.label, strings.Repeat("=", filled), strings.Repeat(" ", width-filled), done, p.Total)
}

// Done clears the line.
func (p *Progress) Done() {
	if p != nil && p.on && !p.last.IsZero() {
		fmt.Fprintf(p.w, "\r\033[K")
	}
}
