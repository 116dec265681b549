package hostconfig

import (
	"fmt"
	"strings"

	"github.com/agentledger/agentledger/internal/linediff"
)

// Diff is a unified diff of a file's text before and after (three lines
// of context), "" when they are the same.
func Diff(path string, before, after []byte) string {
	if string(before) == string(after) {
		return ""
	}
	a, b := lines(before), lines(after)
	type op struct {
		kind byte // ' ', '-', '+'
		text string
		ai   int // line of a this op is at (0-based)
		bi   int
	}
	var ops []op
	i, j := 0, 0
	for _, l := range linediff.Lines(a, b) {
		ops = append(ops, op{l.Op[0], l.Text, i, j})
		if l.Op != "+" {
			i++
		}
		if l.Op != "-" {
			j++
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", path, path)
	const context = 3
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(k-context, 0)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(end+context, len(ops))
				break
			}
			end = run
		}
		na, nb := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				na++
			}
			if o.kind != '-' {
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", ops[start].ai+1, na, ops[start].bi+1, nb)
		for _, o := range ops[start:end] {
			fmt.Fprintf(&out, "%c%s\n", o.kind, o.text)
		}
		k = end
	}
	return out.String()
}

func lines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
