// Package reducer folds a session's envelopes into its snapshot: what the
// session has done so far — budgets consumed, taint, sanitizer keys, loops,
// data classes, egress, denials, open approvals. The fold is pure: time comes
// from envelope timestamps, never a clock; nothing is random; no map order
// reaches the snapshot, so the same envelopes give the same snapshot hash on
// every machine.
package reducer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/canon"
)

// Snapshot is a session's state after some prefix of its envelopes. Every
// list is either a sorted set or in seq order.
type Snapshot struct {
	TenantID  string `json:"tenant_id"`
	SessionID string `json:"session_id"`
	// Seq is the seq of the last envelope folded, -1 before the first.
	Seq    int64 `json:"seq"`
	Events int   `json:"events"`

	StepsConsumed     int   `json:"steps_consumed"`
	ToolCallsConsumed int   `json:"tool_calls_consumed"`
	StartedMs         int64 `json:"started_ms"`
	LastMs            int64 `json:"last_ms"`
	WallTimeMs        int64 `json:"wall_time_ms"`
	OutputBytes       int64 `json:"output_bytes"`

	IsTainted bool `json:"is_tainted"`
	// TaintKinds is the set of kinds of content that tainted the session;
	// TaintSources the most recent sources (at most 8).
	TaintKinds    []string      `json:"taint_kinds"`
	TaintSources  []TaintSource `json:"taint_sources"`
	SanitizedKeys []string      `json:"sanitized_keys"`

	LoopViolation string   `json:"loop_violation"`
	LoopTrace     []uint64 `json:"loop_trace"`

	DataClasses  []string  `json:"data_classes"`
	DataFindings []Finding `json:"data_findings"`

	OriginalRequest string `json:"original_request"`
	// Intent is what the user's latest request asks (nil before one).
	Intent        *Intent  `json:"intent,omitempty"`
	EgressDomains []string `json:"egress_domains"`
	// Downloaded are the files tool calls of the session downloaded (curl
	// -o, wget), so that running one later is seen as what it is.
	Downloaded []string `json:"downloaded,omitempty"`
	// Written are the files tool calls of the session wrote (file tools
	// and shell redirects), so that running one later (go run, make -f,
	// a script) is known to run code the agent wrote: never explicitly
	// allowed. At most maxWritten are kept.
	Written []string `json:"written,omitempty"`
	// ShellDir is where a cd of the session's last shell call that moved
	// the shell left it (hosts keep the shell's directory across calls).
	ShellDir    string    `json:"shell_dir,omitempty"`
	DeniedCount int       `json:"denied_count"`
	Pending     []Pending `json:"pending"`
	// HostAsks are asks the host resolves in its own prompt (Claude
	// Code's permission dialog): they do not wait on the engine, never time
	// out and do not count as pending; each is closed by a Resolution the
	// engine infers from the host's next report of the call.
	HostAsks []Pending `json:"host_asks,omitempty"`
	// Released are the asked calls an approver approved that have not run
	// yet: the same action sent again within ReleaseTTLMs of the approval
	// is allowed once (AARM R4.3).
	Released []Release `json:"released,omitempty"`
	// Calls are the calls the host may be running: each PreToolUse that
	// was not denied or deferred, by turn and input, until its result
	// (PostToolUse) names it (AARM R5.5). At most maxCalls are kept.
	Calls []CallRef `json:"calls,omitempty"`
	// Refused are the calls the host was told not to run (answered deny,
	// or held for an approver), so that a result reported for one is
	// known for what it is (BindResult). At most maxCalls are kept.
	Refused []CallRef `json:"refused,omitempty"`
	// lastTurn and lastOutputs are the turn and outputs of the PreToolUse
	// folded last, for its verdict; lastKeys its input's (InputKeys).
	lastTurn, lastTool, lastCwd string
	lastKeys                    map[string]string
	lastOutputs                 []string

	ParentSessionID string `json:"parent_session_id"`
	// Inherited is what this sub-agent session took from its parent.
	Inherited *Inheritance `json:"inherited,omitempty"`
	// Grants are the sub-agents this session spawned and what each may use.
	Grants           []Grant  `json:"grants,omitempty"`
	PermittedTools   []string `json:"permitted_tools"`
	AllowedArtifacts []string `json:"allowed_artifacts"`
	DeniedArtifacts  []string `json:"denied_artifacts"`

	// Recent is the loop detector's window of the last tool calls.
	Recent []Call `json:"recent"`
	// NoProgress counts consecutive tool results already seen in the window.
	NoProgress      int      `json:"no_progress"`
	NoProgressTrace []uint64 `json:"no_progress_trace"`
}

// TaintSource records what tainted the session. Kind says how far the
// content came from: web (fetched from the network), mcp (an MCP server's
// result), memory, sub_agent, or local (a local tool's output).
type TaintSource struct {
	Seq       uint64 `json:"seq"`
	HookPoint string `json:"hook_point"`
	Tool      string `json:"tool,omitempty"`
	Kind      string `json:"kind"`
	Reason    string `json:"reason"`
}

// Taint kinds.
const (
	TaintWeb      = "web"
	TaintMCP      = "mcp"
	TaintMemory   = "memory"
	TaintSubAgent = "sub_agent"
	TaintLocal    = "local"
)

// Finding records sensitive data seen, without the data itself.
type Finding struct {
	Seq      uint64 `json:"seq"`
	Class    string `json:"class"`
	Detector string `json:"detector"`
}

// Pending is an ask, STEP_UP or DEFER verdict awaiting resolution.
type Pending struct {
	ForSeq       uint64   `json:"for_seq"`
	HookPoint    string   `json:"hook_point"`
	AARMDecision string   `json:"aarm_decision"`
	ReasonCode   string   `json:"reason_code"`
	Artifacts    []string `json:"artifacts,omitempty"`
	// TurnID is the asked call's turn, for a host ask.
	TurnID string `json:"turn_id,omitempty"`
	// Action is the asked action's digest (VerdictRecord.ActionSHA256),
	// which its resolution must name.
	Action string `json:"action,omitempty"`
	// NoPrompt: no one in the host was asked (it was answered deny, or
	// the call was deferred); the ask waits for an approver, whose
	// approval lets the call run once when it is sent again (Released).
	NoPrompt bool `json:"no_prompt,omitempty"`
	// Tool and Cwd are the asked call's native tool and working directory:
	// an approval releases only the same call in the same place.
	Tool string `json:"tool,omitempty"`
	Cwd  string `json:"cwd,omitempty"`
	// Outputs are the files the asked call would write or download: a
	// later call that uses one depends on it and waits with it (AARM
	// R4.11).
	Outputs []string `json:"outputs,omitempty"`
	// AskedBy is the identity that asked (VerdictRecord.AskedBy): a
	// host's ask is closed only by that identity's report, an approval
	// releases the call only to it.
	AskedBy string `json:"asked_by,omitempty"`
}

// CallRef is a call of the session, by its turn: its PreToolUse event
// and the verdict that let it run. The verdict's hash is kept beside the
// snapshot, not in it: a replay's verdicts are other envelopes.
type CallRef struct {
	Turn       string `json:"turn"`
	EventSeq   uint64 `json:"event_seq"`
	VerdictSeq uint64 `json:"verdict_seq"`
	// Input fingerprints each member of the call's input (its canonical
	// value); Rewritten those of the input a MODIFY verdict replaced it
	// with: the members a result carries must be those of one of them
	// (InputKeys).
	Input     map[string]string `json:"input,omitempty"`
	Rewritten map[string]string `json:"rewritten,omitempty"`
	// Unreported: a turn ended without the call's outcome
	// (aarts.VerdictRecord.Unreported); it stays open for a late result.
	Unreported  bool `json:"unreported,omitempty"`
	verdictHash string
}

// EndsTurn reports whether an event at hookPoint ends a turn: whatever
// the host let run before it has had its outcome reported by then.
func EndsTurn(hookPoint string) bool {
	return hookPoint == "PreOutputDeliver" || hookPoint == "SessionEnd"
}

// UnreportedCalls are the calls the host was let run whose outcome it
// has not reported, and that no earlier turn's end named (for
// aarts.VerdictRecord.Unreported), oldest first.
func (s Snapshot) UnreportedCalls() []aarts.CallRef {
	var out []aarts.CallRef
	for _, c := range s.Calls {
		if !c.Unreported {
			out = append(out, aarts.CallRef{EventSeq: c.EventSeq, VerdictSeq: c.VerdictSeq, VerdictHash: c.verdictHash})
		}
	}
	return out
}

// maxCalls bounds Calls.
const maxCalls = 64

// BindResult is the call a tool result ev (a PostToolUse) is the outcome
// of, or, when it answers no call the host was let run, how it fails to
// (aarts.ResultUnknownCall, ResultDeniedCall, ResultAskedCall,
// ResultInputDiffers). A result names its call by turn and carries its
// input: a call of that turn with that input binds it (hosts that name no
// call share one turn among several calls); a call of that turn the host
// was told not to run, or that waits for an approver, is a finding, as is
// a call of that turn with another input. A result whose turn names no
// call is bound by its input alone (a host whose turns are not its
// calls'). A host's report that it refused the call (host_refused), and a
// failure reported for a call the host was told not to run, answer
// nothing and are no finding; nor is a result the host reports with no
// call before it to judge (result_only: Cursor's afterFileEdit).
func (s Snapshot) BindResult(ev *aarts.Event) (call aarts.CallRef, bound bool, unbound string) {
	if ev.HookPoint != "PostToolUse" || ev.Field("host_refused") == true {
		return aarts.CallRef{}, false, ""
	}
	keys := InputKeys(ev.NativeTool(), ev.ToolInput)
	sameInput := func(c CallRef) bool {
		return ev.ToolInput == nil || c.Input == nil || agree(c.Input, keys) || c.Rewritten != nil && agree(c.Rewritten, keys)
	}
	ofTurn := func(c CallRef) bool { return ev.TurnID != "" && c.Turn == ev.TurnID }
	byInput := func(c CallRef) bool { return ev.ToolInput != nil && c.Input != nil && sameInput(c) }
	// The oldest call a result matches is the one it completes: identical
	// calls run side by side report in the order they were made.
	found := func(list []CallRef, match func(CallRef) bool) (CallRef, bool) {
		for _, c := range list {
			if match(c) {
				return c, true
			}
		}
		return CallRef{}, false
	}
	ref := func(c CallRef) aarts.CallRef {
		return aarts.CallRef{EventSeq: c.EventSeq, VerdictSeq: c.VerdictSeq, VerdictHash: c.verdictHash}
	}
	refused := func() (aarts.CallRef, bool, string) {
		if ev.Field("tool_failed") == true {
			return aarts.CallRef{}, false, "" // it did not run, as it was told
		}
		return aarts.CallRef{}, false, aarts.ResultDeniedCall
	}
	if c, ok := found(s.Calls, func(c CallRef) bool { return ofTurn(c) && sameInput(c) }); ok {
		return ref(c), true, ""
	}
	if ev.Field("result_only") == true {
		return aarts.CallRef{}, false, ""
	}
	if c, ok := found(s.Refused, func(c CallRef) bool { return ofTurn(c) && sameInput(c) }); ok {
		if slices.ContainsFunc(s.Pending, func(p Pending) bool { return p.ForSeq == c.EventSeq }) && ev.Field("tool_failed") != true {
			return aarts.CallRef{}, false, aarts.ResultAskedCall
		}
		return refused()
	}
	if _, ok := found(s.Calls, ofTurn); ok {
		return aarts.CallRef{}, false, aarts.ResultInputDiffers
	}
	if c, ok := found(s.Calls, byInput); ok {
		return ref(c), true, ""
	}
	if c, ok := found(s.Refused, byInput); ok {
		if slices.ContainsFunc(s.Pending, func(p Pending) bool { return p.ForSeq == c.EventSeq }) && ev.Field("tool_failed") != true {
			return aarts.CallRef{}, false, aarts.ResultAskedCall
		}
		return refused()
	}
	return aarts.CallRef{}, false, aarts.ResultUnknownCall
}

// InputKeys fingerprints each member of a call's input to tool (an input
// that is not an object is one member, ""), for BindResult.
func InputKeys(tool string, input any) map[string]string {
	obj, ok := input.(map[string]any)
	if !ok {
		return map[string]string{"": fingerprintOf(tool, input)}
	}
	out := make(map[string]string, len(obj))
	for k, v := range obj {
		out[k] = fingerprintOf(tool, v)
	}
	return out
}

// agree reports whether a result's input members (got) are those of a
// call (want): every member both carry is the same, and they share one
// at least, or both are empty. A host may leave out of its report a
// member that only describes the call (Claude Code's description).
func agree(want, got map[string]string) bool {
	shared := 0
	for k, v := range got {
		if w, ok := want[k]; ok {
			if w != v {
				return false
			}
			shared++
		}
	}
	return shared > 0 || len(want) == 0 && len(got) == 0
}

// Release is an approved ask whose call may now run once.
type Release struct {
	// Action is the approved action's digest (VerdictRecord.ActionSHA256),
	// Tool and Cwd its native tool and working directory.
	Action string `json:"action"`
	Tool   string `json:"tool,omitempty"`
	Cwd    string `json:"cwd,omitempty"`
	// Seq and AtMs are the approving Resolution's.
	Seq  uint64 `json:"seq"`
	AtMs int64  `json:"at_ms"`
	// ForSeq is the asked event's.
	ForSeq uint64 `json:"for_seq"`
	// AskedBy is the identity that asked: only it may run the call.
	AskedBy string `json:"asked_by,omitempty"`
}

// ReleaseTTLMs is how long after its approval an approved call may be
// sent again and run: ten minutes of recorded time.
const ReleaseTTLMs = 10 * 60 * 1000

// maxReleased bounds Released.
const maxReleased = 16

// ReleaseFor is the approval that lets the action with digest action, of
// the native tool in the working directory cwd, sent by the identity
// asker, run at atMs (recorded time), if one does: an approval releases
// the call only to the identity that asked.
func (s Snapshot) ReleaseFor(action, tool, cwd, asker string, atMs int64) (Release, bool) {
	for _, r := range s.Released {
		if action != "" && r.Action == action && r.Tool == tool && r.Cwd == cwd && r.AskedBy == asker && atMs >= r.AtMs && atMs-r.AtMs <= ReleaseTTLMs {
			return r, true
		}
	}
	return Release{}, false
}

// Call is one tool call in the loop detector's window.
type Call struct {
	Seq         uint64 `json:"seq"`
	Tool        string `json:"tool"`
	Fingerprint string `json:"fingerprint"` // SHA-256 of tool + canonical input, 16 hex digits
	Result      string `json:"result,omitempty"`
	// Writes is true when the call writes files (so that what follows it
	// runs on a changed tree: no retry).
	Writes bool `json:"writes,omitempty"`
}

// New returns the snapshot of a session before its first envelope.
func New(tenant, session string) Snapshot {
	return Snapshot{TenantID: tenant, SessionID: session, Seq: -1}
}

// Hash returns the lowercase hex SHA-256 of the snapshot's RFC 8785 form.
func (s Snapshot) Hash() string {
	// The canonical form is hashed and dropped: written into a buffer
	// kept for the next hash, it costs no allocation of its own.
	buf := hashBufs.Get().(*[]byte)
	c := s.appendCanonical((*buf)[:0])
	sum := sha256.Sum256(c)
	if cap(c) <= 1<<20 {
		clear(c) // the snapshot holds the user's request: nothing of it stays
		*buf = c[:0]
		hashBufs.Put(buf)
	}
	return hex.EncodeToString(sum[:])
}

var hashBufs = sync.Pool{New: func() any { return new([]byte) }}

// Canonical returns the snapshot's RFC 8785 form. Nil lists are written as
// empty ones, so a snapshot's hash does not depend on how it was built.
func (s Snapshot) Canonical() []byte { return s.appendCanonical(nil) }

// appendCanonical appends the snapshot's RFC 8785 form to dst, written
// straight from the struct (canon.AppendMarshal: what canonicalizing
// json.Marshal's text gives, without that text).
func (s Snapshot) appendCanonical(dst []byte) []byte {
	s.normalize()
	c, err := canon.AppendMarshal(dst, &s)
	if err != nil {
		panic(fmt.Sprintf("reducer: canonicalize snapshot: %v", err)) // plain data; cannot fail
	}
	return c
}

func (s *Snapshot) normalize() {
	for _, l := range []*[]string{&s.TaintKinds, &s.SanitizedKeys, &s.DataClasses, &s.EgressDomains, &s.PermittedTools, &s.AllowedArtifacts, &s.DeniedArtifacts} {
		if *l == nil {
			*l = []string{}
		}
	}
	for _, l := range []*[]uint64{&s.LoopTrace, &s.NoProgressTrace} {
		if *l == nil {
			*l = []uint64{}
		}
	}
	if s.TaintSources == nil {
		s.TaintSources = []TaintSource{}
	}
	if s.DataFindings == nil {
		s.DataFindings = []Finding{}
	}
	if s.Pending == nil {
		s.Pending = []Pending{}
	}
	if s.Recent == nil {
		s.Recent = []Call{}
	}
}
