package engine

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/agentledger/agentledger/aarts"
)

// recentKept is how many of its last decisions an engine reports in its
// status.
const recentKept = 20

// Status is what an engine reports of itself (GET /v1/status): what it
// holds in memory, its last decisions and its open approvals, with no
// tool input and no approval id (the socket is open to the agent's own
// processes, and an id is what resolves an approval).
type Status struct {
	PID      int            `json:"pid"`
	Started  time.Time      `json:"started"`
	Sessions SessionStats   `json:"sessions"`
	Configs  int            `json:"configurations"`
	Recent   []RecentAnswer `json:"recent"`
	Pending  []PendingBrief `json:"pending"`
	// Findings are the engine's last results that answer no call the
	// host was let run (RESULT_WITHOUT_ALLOW), newest first.
	Findings []RecentAnswer `json:"findings,omitempty"`
	// Fleet, in a fleet, is this engine's place in it.
	Fleet *FleetStatus `json:"fleet,omitempty"`
}

// FleetStatus is an engine's place in its fleet: its member id and the
// partitions it owns now, of how many.
type FleetStatus struct {
	Engine     string `json:"engine"`
	Partitions int    `json:"partitions"`
	Owned      []int  `json:"owned"`
}

// RecentAnswer is one decision an engine answered, newest first.
type RecentAnswer struct {
	At         time.Time `json:"at"`
	Tenant     string    `json:"tenant_id"`
	Session    string    `json:"session_id,omitempty"`
	Host       string    `json:"host,omitempty"`
	HookPoint  string    `json:"hook_point,omitempty"`
	Tool       string    `json:"tool,omitempty"`
	Decision   string    `json:"decision"`
	ReasonCode string    `json:"reason_code"`
	// Seq is the answered event's; Unbound, for a tool result that answers
	// no call the host was let run, says how (aarts.ResultDeniedCall, ...).
	Seq     uint64 `json:"seq,omitempty"`
	Unbound string `json:"unbound,omitempty"`
	// Monitored says the decision was judged and recorded in monitor mode
	// and not enforced: Decision and ReasonCode are what was judged (a
	// monitored deny is "deny"), the host was answered allow.
	Monitored bool `json:"monitored,omitempty"`
}

// PendingBrief is an open approval as a status shows it.
type PendingBrief struct {
	Tenant     string `json:"tenant_id"`
	Session    string `json:"session_id"`
	ForSeq     uint64 `json:"for_seq"`
	ToolNative string `json:"tool_native,omitempty"`
	ReasonCode string `json:"reason_code"`
	Expires    int64  `json:"expires_unix_ms"`
}

// recent keeps an engine's last answers.
type recent struct {
	mu   sync.Mutex
	ring []RecentAnswer
	next int
}

func (r *recent) add(a RecentAnswer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ring) < recentKept {
		r.ring = append(r.ring, a)
		return
	}
	r.ring[r.next] = a
	r.next = (r.next + 1) % recentKept
}

func (r *recent) list() []RecentAnswer {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.ring)
	slices.SortStableFunc(out, func(a, b RecentAnswer) int { return b.At.Compare(a.At) })
	return out
}

// noteAnswer keeps an answer for the engine's status.
func (e *Engine) noteAnswer(tenant, host string, ev *aarts.Event, r HookResponse) {
	a := RecentAnswer{At: e.now(), Tenant: tenant, Host: host, Decision: r.Decision, ReasonCode: r.ReasonCode, Seq: r.Seq, Unbound: r.Unbound}
	if m := r.Monitored; m != nil {
		a.Decision, a.ReasonCode, a.Monitored = m.Decision, m.ReasonCode, true
	}
	if ev != nil {
		a.Session, a.HookPoint, a.Tool = ev.SessionID, ev.HookPoint, cmp.Or(ev.ToolNameNative, ev.ToolName)
	}
	e.recent.add(a)
	if r.Unbound != "" {
		e.findings.add(a) // raised to the approvers' inbox
	}
}

// Findings lists tenant's last results that answer no call the host was
// let run (RESULT_WITHOUT_ALLOW), newest first.
func (e *Engine) Findings(tenant string) []RecentAnswer {
	return slices.DeleteFunc(e.findings.list(), func(a RecentAnswer) bool { return a.Tenant != tenant })
}

// Status reports the engine's sessions, last answers and open approvals.
func (e *Engine) Status() Status {
	st := Status{Sessions: e.Sessions(), Recent: e.recent.list(), Pending: []PendingBrief{}, Findings: e.findings.list()}
	e.pending.mu.Lock()
	for _, p := range e.pending.byID {
		st.Pending = append(st.Pending, PendingBrief{Tenant: p.key.Tenant, Session: p.key.Session, ForSeq: p.forSeq,
			ToolNative: p.info.ToolNative, ReasonCode: p.info.ReasonCode, Expires: p.info.ExpiresUnixMs})
	}
	e.pending.mu.Unlock()
	slices.SortFunc(st.Pending, func(a, b PendingBrief) int { return cmp.Compare(a.Expires, b.Expires) })
	if e.fleet != nil {
		st.Fleet = &FleetStatus{Engine: e.fleet.ID(), Partitions: e.fleet.Partitions(), Owned: e.fleet.Owned()}
	}
	return st
}
