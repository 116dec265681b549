package replay

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
)

// Diff is one difference between a recorded step and its replay.
type Diff struct {
	Seq       uint64 `json:"seq"`
	HookPoint string `json:"hook_point"`
	// Field is a verdict field (decision, aarm_decision, reason_code,
	// matched_rule_id, constraints, directives), snapshot_hash (the
	// reducer folds the session differently), or verdict (the recorded
	// event has no verdict to compare with).
	Field      string `json:"field"`
	Recorded   any    `json:"recorded"`
	Replayed   any    `json:"replayed"`
	RuleBefore string `json:"rule_before"`
	RuleAfter  string `json:"rule_after"`
	// CausedBy, when set, is the seq of an earlier changed verdict this
	// difference follows from: with the recorded verdicts folded instead,
	// the candidate gives the recorded value here.
	CausedBy *uint64 `json:"caused_by,omitempty"`
	// Tool is the step's tool call, for people reading the report.
	Tool string `json:"tool,omitempty"`
	// Expected is set when an --expect entry accepts this difference.
	Expected bool `json:"expected,omitempty"`
	// Shredded is set on a snapshot difference that follows a step whose
	// sealed values were shredded (CausedBy names it): the snapshot the
	// engine folded held what can no longer be read. It never fails a
	// gate.
	Shredded bool `json:"shredded,omitempty"`
}

// Transition is the decision change of a decision diff, such as
// "allow→deny"; empty for other fields.
func (d Diff) Transition() string {
	if d.Field != "decision" {
		return ""
	}
	return fmt.Sprintf("%v→%v", orNone(d.Recorded), orNone(d.Replayed))
}

func orNone(v any) any {
	if v == nil {
		return "none"
	}
	return v
}

// strictness orders AARTS decisions: allow < ask < deny.
var strictness = map[string]int{aarts.Allow: 0, aarts.Ask: 1, aarts.Deny: 2}

// Loosening reports whether d moves a decision toward allow.
func (d Diff) Loosening() bool {
	r, ok1 := d.Recorded.(string)
	p, ok2 := d.Replayed.(string)
	return d.Field == "decision" && ok1 && ok2 && strictness[p] < strictness[r]
}

// Tightening reports whether d moves a decision away from allow.
func (d Diff) Tightening() bool {
	r, ok1 := d.Recorded.(string)
	p, ok2 := d.Replayed.(string)
	return d.Field == "decision" && ok1 && ok2 && strictness[p] > strictness[r]
}

// SessionReport is the DiffReport of one session.
type SessionReport struct {
	TenantID      string `json:"tenant_id"`
	SessionID     string `json:"session_id"`
	Mode          string `json:"mode"`
	StepsReplayed int    `json:"steps_replayed"`
	Identical     bool   `json:"identical"`
	Diffs         []Diff `json:"diffs"`
	// Fault, when set, is why the session could not be replayed (its chain
	// does not verify, or a recorded payload cannot be read). A faulty
	// session always fails the gate.
	Fault string `json:"fault,omitempty"`
	// Faults are the same, typed: kind, seq and where.
	Faults []*ledger.ChainError `json:"faults,omitempty"`
	// Source is the bundle file or store the session came from.
	Source string `json:"source,omitempty"`
	// RecordedPolicies are the policy digests of the recorded verdicts.
	RecordedPolicies []string `json:"recorded_policies,omitempty"`
	// ShreddedSteps are the seqs of hook events whose sealed values were
	// shredded: they cannot be judged again, so their recorded verdicts
	// stand, uncompared; everything else is compared.
	ShreddedSteps []uint64 `json:"shredded_steps,omitempty"`
	// WouldBlock are the steps recorded in monitor mode (not enforced)
	// that the replayed policy denies or asks about: what enforcing it
	// would have blocked.
	WouldBlock []Block `json:"would_block,omitempty"`
	// Timeline, for a changed session only, is every judged step with its
	// recorded and replayed decision: the context of each difference.
	Timeline []Step `json:"timeline,omitempty"`
}

// Step is one judged step of a changed session.
type Step struct {
	Seq        uint64 `json:"seq"`
	HookPoint  string `json:"hook_point"`
	Tool       string `json:"tool,omitempty"`
	Recorded   string `json:"recorded"` // the recorded decision; empty when none was recorded
	Replayed   string `json:"replayed"`
	RuleBefore string `json:"rule_before,omitempty"`
	RuleAfter  string `json:"rule_after,omitempty"`
	// Changed is set when the step has a difference.
	Changed bool `json:"changed,omitempty"`
}

// Block is a monitored step enforcement would have stopped: its replayed
// decision and rule.
type Block struct {
	Seq          uint64 `json:"seq"`
	HookPoint    string `json:"hook_point"`
	Decision     string `json:"decision"`
	AARMDecision string `json:"aarm_decision"`
	Rule         string `json:"rule,omitempty"`
	Tool         string `json:"tool,omitempty"`
}

// Summary sums a run.
type Summary struct {
	Sessions    int            `json:"sessions"`
	Steps       int            `json:"steps"`
	Identical   int            `json:"identical_sessions"`
	Changed     int            `json:"changed_sessions"`
	Faulty      int            `json:"faulty_sessions"`
	Diffs       int            `json:"diffs"`
	Transitions map[string]int `json:"transitions"`
	Rules       map[string]int `json:"rules"`
	// WouldBlock counts, by decision, the monitored steps enforcement
	// would have stopped; WouldBlockRules by rule.
	WouldBlock      map[string]int `json:"would_block,omitempty"`
	WouldBlockRules map[string]int `json:"would_block_rules,omitempty"`
	// PolicyBefore are the digests the recorded verdicts name; PolicyAfter
	// is the candidate's.
	PolicyBefore []string `json:"policy_before"`
	PolicyAfter  string   `json:"policy_after"`
}

// Report is the outcome of a replay run: its summary, every session's
// DiffReport (sorted by tenant and session), and the gate's verdict.
type Report struct {
	Summary  Summary          `json:"summary"`
	Sessions []*SessionReport `json:"sessions"`
	Gate     GateResult       `json:"gate"`
}

// GateResult says whether a run passed its gate, and why not.
type GateResult struct {
	FailOn string `json:"fail_on"`
	Passed bool   `json:"passed"`
	// Failures are the reasons the gate failed, one line each.
	Failures []string `json:"failures"`
	// Unmet are expected differences that did not happen.
	Unmet []Expectation `json:"unmet_expectations"`
}

// changed reports whether r has a difference that is not a shredded one.
func changed(r *SessionReport) bool {
	return slices.ContainsFunc(r.Diffs, func(d Diff) bool { return !d.Shredded })
}

// NewReport sorts sessions, sums them and records the candidate's digest.
func NewReport(sessions []*SessionReport, policyAfter string) *Report {
	slices.SortFunc(sessions, func(a, b *SessionReport) int {
		return cmp.Or(cmp.Compare(a.TenantID, b.TenantID), cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(a.Source, b.Source))
	})
	s := Summary{Sessions: len(sessions), Transitions: map[string]int{}, Rules: map[string]int{}, PolicyBefore: []string{}, PolicyAfter: policyAfter}
	before := map[string]bool{}
	for _, r := range sessions {
		s.Steps += r.StepsReplayed
		switch {
		case r.Fault != "":
			s.Faulty++
		case r.Identical:
			s.Identical++
		case !changed(r):
			s.Identical++ // only shredded steps differ
		default:
			s.Changed++
		}
		for _, p := range r.RecordedPolicies {
			before[p] = true
		}
		for _, blk := range r.WouldBlock {
			if s.WouldBlock == nil {
				s.WouldBlock, s.WouldBlockRules = map[string]int{}, map[string]int{}
			}
			s.WouldBlock[blk.Decision]++
			s.WouldBlockRules[cmp.Or(blk.Rule, "none")]++
		}
		s.Diffs += len(r.Diffs)
		for _, d := range r.Diffs {
			if t := d.Transition(); t != "" {
				s.Transitions[t]++
				s.Rules[cmp.Or(d.RuleAfter, d.RuleBefore, "none")]++
			}
		}
	}
	s.PolicyBefore = slices.Sorted(maps.Keys(before))
	return &Report{Summary: s, Sessions: sessions}
}

// Fail-on settings of the gate.
const (
	FailOnAny        = "any"
	FailOnLoosening  = "loosening"
	FailOnTightening = "tightening"
	FailOnNone       = "none"
)

// CheckFailOn reports whether failOn is a gate setting.
func CheckFailOn(failOn string) error {
	switch failOn {
	case FailOnAny, FailOnLoosening, FailOnTightening, FailOnNone:
		return nil
	}
	return fmt.Errorf("--fail-on %q: want any, loosening, tightening or none", failOn)
}

// Expectation is one accepted difference: this session's step at seq may
// change field to value.
type Expectation struct {
	TenantID  string `json:"tenant_id,omitempty"`
	SessionID string `json:"session_id"`
	Seq       uint64 `json:"seq"`
	Field     string `json:"field"`
	Value     any    `json:"value"`
}

// ReadExpectations reads an --expect file: a JSON array of expectations,
// or one expectation per line (NDJSON). An entry without session_id or
// field is an error naming its position.
func ReadExpectations(r io.Reader) ([]Expectation, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var out []Expectation
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("expect file: %w", err)
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '[' {
		return nil, fmt.Errorf("expect file: want a JSON array of {session_id, seq, field, value}")
	}
	for i := 0; dec.More(); i++ {
		var e Expectation
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("expect file: entry %d: %w", i, err)
		}
		if e.SessionID == "" || e.Field == "" {
			return nil, fmt.Errorf("expect file: entry %d: session_id and field are required", i)
		}
		out = append(out, e)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("expect file: %w", err)
	}
	return out, nil
}

func (e Expectation) matches(r *SessionReport, d Diff) bool {
	return (e.TenantID == "" || e.TenantID == r.TenantID) && e.SessionID == r.SessionID && e.Seq == d.Seq &&
		e.Field == d.Field && equal(normalValue(e.Value), normalValue(d.Replayed))
}

// normalValue returns v as JSON reads it back.
func normalValue(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(raw, &out) != nil {
		return v
	}
	return out
}

// ApplyGate marks expected differences and decides whether the run passes
// failOn. Faulty sessions and expectations that did not happen always fail
// it; other differences fail it as failOn says.
func (rep *Report) ApplyGate(failOn string, expect []Expectation) error {
	if err := CheckFailOn(failOn); err != nil {
		return err
	}
	g := GateResult{FailOn: failOn, Failures: []string{}, Unmet: []Expectation{}}
	met := make([]bool, len(expect))
	for _, r := range rep.Sessions {
		if r.Fault != "" {
			g.Failures = append(g.Failures, fmt.Sprintf("%s/%s: faulty: %s", r.TenantID, r.SessionID, r.Fault))
			continue
		}
		for i := range r.Diffs {
			d := &r.Diffs[i]
			for j, e := range expect {
				if e.matches(r, *d) {
					d.Expected, met[j] = true, true
				}
			}
			if d.Expected || d.Shredded || !fails(failOn, *d) {
				continue
			}
			g.Failures = append(g.Failures, fmt.Sprintf("%s/%s seq %d %s: %s %v → %v (%s)", r.TenantID, r.SessionID, d.Seq, d.HookPoint,
				d.Field, orNone(d.Recorded), orNone(d.Replayed), cmp.Or(d.RuleAfter, d.RuleBefore, "no rule")))
		}
	}
	for j, e := range expect {
		if !met[j] {
			g.Unmet = append(g.Unmet, e)
			g.Failures = append(g.Failures, fmt.Sprintf("%s seq %d: expected %s to become %v, which did not happen", e.SessionID, e.Seq, e.Field, e.Value))
		}
	}
	g.Passed = len(g.Failures) == 0
	rep.Gate = g
	return nil
}

func fails(failOn string, d Diff) bool {
	switch failOn {
	case FailOnAny:
		return true
	case FailOnLoosening:
		return d.Loosening()
	case FailOnTightening:
		return d.Tightening()
	}
	return false
}
