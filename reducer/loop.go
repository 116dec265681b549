package reducer

import (
	"encoding/json"
	"slices"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
)

// The loop detector. A violation is raised by one of three signals, each
// with the seqs that show it (LoopTrace):
//
//   - identical_call: the same tool with the same canonical input
//     IdenticalCalls times within the last Window calls with nothing
//     written between them (a test run after each edit is progress, not
//     a loop; the same run retried over an unchanged tree is);
//   - repeating_sequence: the last 2L calls (tool and input) are one
//     sequence of length L (3 ≤ L ≤ 7, not all one call) repeated twice —
//     the same tool names with other inputs (edit, test, commit; edit,
//     test, commit) are a working rhythm, not a loop;
//   - no_progress: NoProgressResults consecutive tool results each already
//     seen in the window.
//
// A violation stays until the user speaks again (PreUserInput) or a
// LOOP_DETECTED verdict is approved (a Resolution or PostAskResolution);
// either empties the window, so detection needs fresh evidence.

func (n *Snapshot) clearLoop() {
	n.LoopViolation = ""
	n.LoopTrace = nil
	n.Recent = nil
	n.NoProgress = 0
	n.NoProgressTrace = nil
}

// inputFingerprint is the fingerprint of a tool event's native tool and
// canonical input: what the loop detector compares, and what a call's
// result must carry (BindResult).
func inputFingerprint(ev *aarts.Event) string { return fingerprintOf(ev.NativeTool(), ev.ToolInput) }

// fingerprintOf is the fingerprint of a call of tool with input.
func fingerprintOf(tool string, input any) string {
	raw, _ := json.Marshal(input)
	if c, err := ledger.Canonicalize(raw, ledger.Limits{MaxBytes: 16 << 20, MaxDepth: 1000}); err == nil {
		raw = c
	}
	return fingerprint(tool, string(raw))
}

func (n *Snapshot) recordCall(seq uint64, tool, fp string, writes bool) {
	n.Recent = append(n.Recent, Call{Seq: seq, Tool: tool, Fingerprint: fp, Writes: writes})
	if len(n.Recent) > Window {
		n.Recent = n.Recent[len(n.Recent)-Window:]
	}
	if n.LoopViolation != "" {
		return
	}
	last := n.Recent[len(n.Recent)-1]
	var same []uint64
	for _, c := range n.Recent {
		switch {
		case c.Fingerprint == last.Fingerprint:
			same = append(same, c.Seq)
		case c.Writes:
			same = same[:0] // something changed since: what came before is not a retry
		}
	}
	if len(same) >= IdenticalCalls {
		n.LoopViolation, n.LoopTrace = LoopIdenticalCall, same
		return
	}
	for l := 3; l <= 7; l++ {
		if len(n.Recent) < 2*l {
			break
		}
		tail := n.Recent[len(n.Recent)-2*l:]
		if repeats(tail, l) {
			trace := make([]uint64, len(tail))
			for i, c := range tail {
				trace[i] = c.Seq
			}
			n.LoopViolation, n.LoopTrace = LoopRepeatingSequence, trace
			return
		}
	}
}

// recordWrite notes a write a host reported only after it happened
// (Cursor's afterFileEdit): the tree changed, so a call repeated after it
// is no retry. A write whose call the window holds already counts.
func (n *Snapshot) recordWrite(seq uint64, ev *aarts.Event) {
	if k := len(n.Recent); k > 0 && n.Recent[k-1].Writes && n.Recent[k-1].Tool == ev.NativeTool() {
		return
	}
	input, _ := json.Marshal(ev.ToolInput)
	tool := ev.NativeTool()
	n.Recent = append(n.Recent, Call{Seq: seq, Tool: tool, Fingerprint: fingerprint(tool, "written:"+string(input)), Writes: true})
	if len(n.Recent) > Window {
		n.Recent = n.Recent[len(n.Recent)-Window:]
	}
}

// repeats reports whether calls is one sequence of l calls (tool and
// input) twice, with at least two different calls in it.
func repeats(calls []Call, l int) bool {
	distinct := false
	for i := 0; i < l; i++ {
		if calls[i].Fingerprint != calls[i+l].Fingerprint {
			return false
		}
		if calls[i].Fingerprint != calls[0].Fingerprint {
			distinct = true
		}
	}
	return distinct
}

func (n *Snapshot) recordResult(seq uint64, tool, text string) {
	fp := fingerprint(tool, text)
	seen := slices.ContainsFunc(n.Recent, func(c Call) bool { return c.Result == fp })
	for i := len(n.Recent) - 1; i >= 0; i-- {
		if n.Recent[i].Tool == tool && n.Recent[i].Result == "" {
			n.Recent[i].Result = fp
			break
		}
	}
	if !seen {
		n.NoProgress, n.NoProgressTrace = 0, nil
		return
	}
	n.NoProgress++
	n.NoProgressTrace = append(n.NoProgressTrace, seq)
	if n.NoProgress >= NoProgressResults && n.LoopViolation == "" {
		n.LoopViolation, n.LoopTrace = LoopNoProgress, slices.Clone(n.NoProgressTrace)
	}
}
