// Package linediff compares two texts line by line: the longest common
// subsequence of their lines kept, the rest removed or added. Pure; the
// texts it is for are small (configuration files, tool definitions).
package linediff

// Line is one line of a diff: Op is " " (in both), "-" (only in the first)
// or "+" (only in the second).
type Line struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

// MaxLines bounds the lines Lines compares (its table is len(a)×len(b));
// past it, every line of a is removed and every line of b added.
const MaxLines = 4000

// Lines is the diff of a against b, in order.
func Lines(a, b []string) []Line {
	var out []Line
	if len(a) > MaxLines || len(b) > MaxLines {
		for _, l := range a {
			out = append(out, Line{"-", l})
		}
		for _, l := range b {
			out = append(out, Line{"+", l})
		}
		return out
	}
	// lcs[i][j] is the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, Line{" ", a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, Line{"-", a[i]})
			i++
		default:
			out = append(out, Line{"+", b[j]})
			j++
		}
	}
	return out
}
