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
	"encoding/json"
	"fmt"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
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
	// was not denied or deferred, by turn, until its result (PostToolUse)
	// names it (AARM R5.5). At most maxCalls are kept.
	Calls []CallRef `json:"calls,omitempty"`
	// lastTurn and lastOutputs are the turn and outputs of the PreToolUse
	// folded last, for its verdict.
	lastTurn, lastTool, lastCwd string
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
}

// CallRef is a call of the session, by its turn: its PreToolUse event
// and the verdict that let it run. The verdict's hash is kept beside the
// snapshot, not in it: a replay's verdicts are other envelopes.
type CallRef struct {
	Turn        string `json:"turn"`
	EventSeq    uint64 `json:"event_seq"`
	VerdictSeq  uint64 `json:"verdict_seq"`
	verdictHash string
}

// maxCalls bounds Calls.
const maxCalls = 64

// CallOf is the call of turn the host may be running, if any.
func (s Snapshot) CallOf(turn string) (aarts.CallRef, bool) {
	for _, c := range s.Calls {
		if turn != "" && c.Turn == turn {
			return aarts.CallRef{EventSeq: c.EventSeq, VerdictSeq: c.VerdictSeq, VerdictHash: c.verdictHash}, true
		}
	}
	return aarts.CallRef{}, false
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
}

// ReleaseTTLMs is how long after its approval an approved call may be
// sent again and run: ten minutes of recorded time.
const ReleaseTTLMs = 10 * 60 * 1000

// maxReleased bounds Released.
const maxReleased = 16

// ReleaseFor is the approval that lets the action with digest action, of
// the native tool in the working directory cwd, run at atMs (recorded
// time), if one does.
func (s Snapshot) ReleaseFor(action, tool, cwd string, atMs int64) (Release, bool) {
	for _, r := range s.Released {
		if action != "" && r.Action == action && r.Tool == tool && r.Cwd == cwd && atMs >= r.AtMs && atMs-r.AtMs <= ReleaseTTLMs {
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
	sum := sha256.Sum256(s.Canonical())
	return hex.EncodeToString(sum[:])
}

// Canonical returns the snapshot's RFC 8785 form. Nil lists are written as
// empty ones, so a snapshot's hash does not depend on how it was built.
func (s Snapshot) Canonical() []byte {
	s.normalize()
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("reducer: marshal snapshot: %v", err)) // plain data; cannot fail
	}
	c, err := ledger.Canonicalize(raw, ledger.Limits{MaxBytes: 64 << 20, MaxDepth: 16})
	if err != nil {
		panic(fmt.Sprintf("reducer: canonicalize snapshot: %v", err))
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
