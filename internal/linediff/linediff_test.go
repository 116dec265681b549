package linediff

import (
	"fmt"
	"testing"
)

func ExampleLines() {
	for _, l := range Lines([]string{"a", "b", "c"}, []string{"a", "B", "c", "d"}) {
		fmt.Println(l.Op + l.Text)
	}
	// Output:
	//  a
	// -b
	// +B
	//  c
	// +d
}

// TestPastTheBound: texts past MaxLines are shown whole, every line
// removed and added, never compared.
func TestPastTheBound(t *testing.T) {
	a := make([]string, MaxLines+1)
	got := Lines(a, []string{"x"})
	if len(got) != MaxLines+2 || got[0].Op != "-" || got[len(got)-1] != (Line{"+", "x"}) {
		t.Fatalf("%d lines, first %v, last %v", len(got), got[0], got[len(got)-1])
	}
}
