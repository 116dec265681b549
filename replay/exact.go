// Package replay re-runs recorded sessions and reports what changed.
//
// Exact replay takes a session's verified chain and, for every hook event,
// folds it with the current reducer and judges it with a candidate policy
// and manifest through the same decide.Decider that decides live traffic,
// then compares the snapshot hash and the verdict with what was recorded.
// Replayed verdicts are folded forward; recorded resolutions and engine
// failures are applied as recorded. Nothing reads the network or the clock.
package replay

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/canon"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/reducer"
	"github.com/agentledger/agentledger/seal"
)

// ModeExact names exact replay in reports.
const ModeExact = "exact"

// Exact replays one verified chain (one session, in seq order) with d and
// returns its report. An envelope that cannot be replayed (a payload the
// recorder should never have accepted) is reported as the session's fault.
func Exact(ctx context.Context, d *decide.Decider, chain []*ledger.Envelope) *SessionReport {
	r := &SessionReport{Mode: ModeExact, Diffs: []Diff{}}
	if len(chain) == 0 {
		return r
	}
	r.TenantID, r.SessionID = chain[0].TenantID(), chain[0].SessionID()
	x := &exact{d: d, r: r, replayed: decide.NewSession(r.TenantID, r.SessionID)}
	if err := x.run(ctx, chain); err != nil {
		r.Fault = err.Error()
	}
	r.Identical = r.Fault == "" && !changed(r)
	if !r.Identical && r.Fault == "" {
		r.Timeline = x.timeline()
	}
	r.RecordedPolicies = slices.Sorted(maps.Keys(x.policy))
	return r
}

// exact holds two tracks of one session. replayed folds the candidate's
// verdicts (what would have happened); recorded folds the recorded ones
// (what did happen). While no verdict has changed they are the same state,
// so the recorded track is only built (from the replayed one) when the
// first verdict changes. From then on, a later difference that the recorded track does not show
// follows from the earlier change (caused_by), and one it shows too is a
// change of its own.
type exact struct {
	d        *decide.Decider
	r        *SessionReport
	replayed *decide.Session
	recorded *decide.Session // nil while the tracks are one
	// shredded is the seq of the first step whose sealed values were
	// shredded, once there is one.
	shredded *uint64
	// answer is the recorded verdict at seq answerSeq, read ahead with
	// the hook event it answers.
	answer    *aarts.VerdictRecord
	answerSeq uint64
	// ahead is the recorded verdict that answers the open hook event,
	// read ahead by its members only (see ahead).
	ahead *ahead
	// aheadBuf is the members buffer read aheads reuse.
	aheadBuf []canon.Member
	// identity is the identity the session's receipts attested last.
	identity lastIdentity
	cause    *uint64 // seq of the latest verdict change, once there is one
	policy   map[string]bool
	// steps are the judged steps, kept cheaply (the tool is described
	// only if the session changed).
	steps []judged
}

// judged is one judged step: its event and the two verdicts.
type judged struct {
	env                   *ledger.Envelope
	recorded, replayed    string
	ruleBefore, ruleAfter string
}

// pending is a hook event replayed whose recorded verdict is still to come.
type pending struct {
	env      *ledger.Envelope
	before   decide.Session // the replayed track before the event
	step     *decide.Step   // on the replayed track
	baseline *decide.Step   // on the recorded track, when the tracks differ
}

func (x *exact) run(ctx context.Context, chain []*ledger.Envelope) error {
	var open *pending
	// settle closes a hook event whose verdict never came.
	settle := func() error {
		if open == nil {
			return nil
		}
		err := x.missingVerdict(open)
		open = nil
		return err
	}
	for i, env := range chain {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch {
		case aarts.IsHookPoint(env.EventType()):
			if err := settle(); err != nil {
				return err
			}
			// The recorded verdict that answers the event, read once: hook
			// takes what the engine knew from it, and the Verdict case
			// compares with it.
			var next *aarts.VerdictRecord
			x.answer, x.ahead = nil, nil
			if i+1 < len(chain) && chain[i+1].EventType() == ledger.EventVerdict {
				if a, ok := readAhead(chain[i+1].Payload(), chain[i+1].Seq(), x.aheadBuf); ok && !decodeEveryVerdict {
					x.aheadBuf = a.members
					if a.context.ForSeq == env.Seq() {
						next, x.ahead = &a.context, a
					}
				} else {
					var rec aarts.VerdictRecord
					if ledger.DecodeExact(chain[i+1].Payload(), &rec) == nil && rec.ForSeq == env.Seq() {
						next, x.answer, x.answerSeq = &rec, &rec, chain[i+1].Seq()
					}
				}
			}
			p, err := x.hook(ctx, env, next)
			if err != nil {
				return fmt.Errorf("seq %d (%s): %w", env.Seq(), env.EventType(), err)
			}
			open = p
		case env.EventType() == ledger.EventVerdict:
			var rec aarts.VerdictRecord
			if a := x.ahead; a != nil && a.seq == env.Seq() && open != nil && x.recorded == nil {
				// The replayed verdict is the recorded one again: nothing
				// more of the recorded one needs decoding.
				if digest, ok := a.same(open.step.Verdict.Payload()); ok {
					x.ahead = nil
					rec = open.step.Record
					rec.PolicyDigest, rec.Receipt = digest, a.context.Receipt
					x.noteStep(open, rec) // and no difference to compare
					open = nil
					continue
				}
			}
			if x.answer != nil && x.answerSeq == env.Seq() {
				rec = *x.answer
			} else if err := ledger.DecodeExact(env.Payload(), &rec); err != nil {
				return fmt.Errorf("seq %d (Verdict): %w", env.Seq(), err)
			}
			x.answer, x.ahead = nil, nil
			if n := len(x.r.ShreddedSteps); open == nil && n > 0 && x.r.ShreddedSteps[n-1] == rec.ForSeq {
				// The verdict of a shredded step stands as recorded.
				x.notePolicy(rec.PolicyDigest)
				if err := x.foldBoth(env); err != nil {
					return fmt.Errorf("seq %d (Verdict): %w", env.Seq(), err)
				}
				continue
			}
			if open == nil || rec.ForSeq != open.env.Seq() {
				return fmt.Errorf("seq %d (Verdict): it answers seq %d, which is not the hook event before it", env.Seq(), rec.ForSeq)
			}
			if err := x.compare(open, rec); err != nil {
				return fmt.Errorf("seq %d (Verdict): %w", env.Seq(), err)
			}
			if err := x.foldRecorded(env); err != nil {
				return fmt.Errorf("seq %d (Verdict): %w", env.Seq(), err)
			}
			open = nil
		default:
			if err := settle(); err != nil {
				return err
			}
			if err := x.foldBoth(env); err != nil {
				return fmt.Errorf("seq %d (%s): %w", env.Seq(), env.EventType(), err)
			}
		}
	}
	return settle()
}

// hook decides a recorded hook event on the replayed track, and on the
// recorded track too when the two have parted. What the engine knew that
// the event does not say — who the sender was authenticated as, what a
// sub-agent inherited — comes from the recorded verdict (next), so that
// the replay judges the event as the engine did.
func (x *exact) hook(ctx context.Context, env *ledger.Envelope, next *aarts.VerdictRecord) (*pending, error) {
	payload, shredded, err := x.d.Plaintext(env)
	if err != nil {
		return nil, err
	}
	if err := x.sameSeq(env); err != nil {
		return nil, err
	}
	if shredded {
		return nil, x.shreddedStep(env)
	}
	ev, err := aarts.ParseEvent(payload)
	if err != nil {
		return nil, err
	}
	auth, inherit, err := recordedContext(next, &x.identity)
	if err != nil {
		return nil, err
	}
	// A step recorded in monitor mode is replayed in monitor mode: its
	// verdict folds alike (nothing waits, no denial counts).
	monitor := next != nil && !next.IsEnforced()
	x.replayed.Auth, x.replayed.Inherit, x.replayed.Monitor = auth, inherit, monitor
	if x.recorded != nil {
		x.recorded.Auth, x.recorded.Inherit, x.recorded.Monitor = auth, inherit, monitor
	}
	p := &pending{env: env, before: *x.replayed}
	if p.step, err = x.d.DecideRecorded(ctx, x.replayed, ev, env, payload); err != nil {
		return nil, err
	}
	x.r.StepsReplayed++
	if x.recorded == nil {
		return p, nil
	}
	probe := *x.recorded
	if p.baseline, err = x.d.DecideRecorded(ctx, &probe, ev, env, payload); err != nil {
		return nil, err
	}
	// The recorded track takes the event now and the recorded verdict when
	// it comes.
	return p, x.foldRecorded(env)
}

// shreddedStep takes a hook event whose sealed values were shredded: it
// cannot be judged again, so both tracks fold it as recorded (sealed) and
// its recorded verdict after it; it is reported as shredded, not as a
// difference.
func (x *exact) shreddedStep(env *ledger.Envelope) error {
	x.r.ShreddedSteps = append(x.r.ShreddedSteps, env.Seq())
	if x.shredded == nil {
		seq := env.Seq()
		x.shredded = &seq
	}
	return x.foldBoth(env)
}

// recordedContext reads, from the recorded verdict rec that answers a hook
// event (nil: none), the identity its receipt attests and what the session
// inherited.
func recordedContext(rec *aarts.VerdictRecord, last *lastIdentity) (receipt.Authenticated, *reducer.Inheritance, error) {
	if rec == nil {
		return receipt.Authenticated{}, nil, nil
	}
	var auth receipt.Authenticated
	// Receipts before version 2 attested the event's own identity claim:
	// those sessions were judged unauthenticated.
	if id, ok := receiptIdentity(rec.Receipt, last); ok {
		auth = receipt.Authenticated{Principal: id.Principal, Service: id.Service, Agent: id.Agent, Scope: id.Scope, By: id.AuthenticatedBy}
		if auth.By == "none" {
			auth.By = ""
		}
	}
	if len(rec.Inherited) == 0 {
		return auth, nil, nil
	}
	var in reducer.Inheritance
	if err := ledger.DecodeExact(rec.Inherited, &in); err != nil {
		return auth, nil, fmt.Errorf("seq %d (Verdict): inherited: %w", rec.ForSeq+1, err)
	}
	return auth, &in, nil
}

// part builds the recorded track when p's verdict is the first to change:
// until then it was the replayed track, as it stood before p's event.
func (x *exact) part(p *pending) error {
	if x.recorded != nil {
		return nil
	}
	s := p.before
	x.recorded = &s
	return x.foldRecorded(p.env)
}

// sameSeq checks that the replayed chain is where the recorded one is, so
// that seqs in the report mean the recorded seqs.
func (x *exact) sameSeq(env *ledger.Envelope) error {
	if next := x.replayed.Head.Seq + 1; x.replayed.Head.IsEmpty() && env.Seq() != 0 || !x.replayed.Head.IsEmpty() && next != env.Seq() {
		return fmt.Errorf("replayed chain is at seq %d, recorded envelope is seq %d", x.replayed.Head.Seq, env.Seq())
	}
	return nil
}

// foldBoth applies a recorded envelope that is neither a hook event nor a
// verdict (a resolution, an engine failure, a sanitizer registration) to
// both tracks as it was recorded.
func (x *exact) foldBoth(env *ledger.Envelope) error {
	if err := x.sameSeq(env); err != nil {
		return err
	}
	if err := x.fold(x.replayed, env); err != nil {
		return err
	}
	return x.foldRecorded(env)
}

// foldRecorded folds env into the recorded track, once it exists.
func (x *exact) foldRecorded(env *ledger.Envelope) error {
	if x.recorded == nil {
		return nil
	}
	return x.fold(x.recorded, env)
}

// fold re-seals env's event onto s's chain and folds it into s's snapshot
// (a sealed hook event in its plaintext, when the keys are at hand).
func (x *exact) fold(s *decide.Session, env *ledger.Envelope) error {
	payload, _, err := x.d.Plaintext(env)
	if err != nil {
		return err
	}
	var e *ledger.Envelope
	if string(payload) == string(env.Payload()) {
		e, err = ledger.DraftOf(env, x.d.Limits).Seal(s.Head)
	} else {
		e, err = ledger.Seal(s.Head, ledger.Event{TenantID: env.TenantID(), SessionID: env.SessionID(), EventType: env.EventType(),
			TsUnixMs: env.TsUnixMs(), Payload: payload}, x.d.Limits)
	}
	if err != nil {
		return err
	}
	snap, err := x.d.Reducer.Apply(s.Snapshot, e)
	if err != nil {
		return err
	}
	s.Head, s.Snapshot = e.Head(), snap
	return nil
}

// compare sets the replayed verdict of p beside the recorded one, field by
// field.
func (x *exact) compare(p *pending, rec aarts.VerdictRecord) error {
	got := p.step.Record
	x.noteStep(p, rec)
	before, after := rec.Verdict.MatchedRuleID, got.Verdict.MatchedRuleID
	changed := false
	for _, f := range verdictFields {
		rv, gv := f.value(rec), f.value(got)
		if equal(rv, gv) {
			continue
		}
		d := Diff{Seq: p.env.Seq(), HookPoint: rec.HookPoint, Field: f.name, Recorded: rv, Replayed: gv,
			RuleBefore: before, RuleAfter: after, Tool: toolOf(p.env)}
		// The recorded track judged by the candidate gives the recorded
		// value: the difference follows from the earlier change alone.
		if p.baseline != nil && equal(f.value(p.baseline.Record), rv) {
			d.CausedBy = x.cause
		}
		x.r.Diffs = append(x.r.Diffs, d)
		changed = true
	}
	if rec.SnapshotHash != got.SnapshotHash {
		d := Diff{Seq: p.env.Seq(), HookPoint: rec.HookPoint, Field: "snapshot_hash", Recorded: rec.SnapshotHash, Replayed: got.SnapshotHash,
			RuleBefore: before, RuleAfter: after, Tool: toolOf(p.env)}
		if p.baseline != nil && p.baseline.SnapshotHash == rec.SnapshotHash {
			d.CausedBy = x.cause
		}
		if x.shredded != nil && d.CausedBy == nil {
			d.CausedBy, d.Shredded = x.shredded, true
		}
		x.r.Diffs = append(x.r.Diffs, d)
	}
	if !changed {
		return nil
	}
	seq := p.env.Seq()
	x.cause = &seq
	return x.part(p)
}

// noteStep notes the step p, whose recorded verdict is rec: the policy
// that recorded it, the step, and what it would have blocked if it was
// recorded in monitor mode.
func (x *exact) noteStep(p *pending, rec aarts.VerdictRecord) {
	got := p.step.Record
	x.notePolicy(rec.PolicyDigest)
	if !rec.IsEnforced() && (got.Verdict.Decision != aarts.Allow || got.AARMDecision == aarts.AARMStepUp || got.AARMDecision == aarts.AARMDefer) {
		// Recorded in monitor mode: what enforcing the candidate policy
		// would have done here.
		x.r.WouldBlock = append(x.r.WouldBlock, Block{Seq: p.env.Seq(), HookPoint: rec.HookPoint, Decision: got.Verdict.Decision,
			AARMDecision: got.AARMDecision, Rule: got.Verdict.MatchedRuleID, Tool: toolOf(p.env)})
	}
	x.steps = append(x.steps, judged{env: p.env, recorded: rec.Verdict.Decision, replayed: got.Verdict.Decision,
		ruleBefore: rec.Verdict.MatchedRuleID, ruleAfter: got.Verdict.MatchedRuleID})
}

// missingVerdict reports a recorded hook event that has no verdict after
// it (a crash between the event and its verdict, or a chain not written by
// the engine): its replayed verdict has nothing to be compared with.
func (x *exact) missingVerdict(p *pending) error {
	got := p.step.Record
	x.steps = append(x.steps, judged{env: p.env, replayed: got.Verdict.Decision, ruleAfter: got.Verdict.MatchedRuleID})
	x.r.Diffs = append(x.r.Diffs, Diff{Seq: p.env.Seq(), HookPoint: p.env.EventType(), Field: "verdict",
		Recorded: nil, Replayed: got.Verdict.Decision, RuleAfter: got.Verdict.MatchedRuleID, Tool: toolOf(p.env)})
	seq := p.env.Seq()
	x.cause = &seq
	if err := x.part(p); err != nil {
		return err
	}
	// The chain goes on as recorded, without the verdict the candidate
	// gave: the replayed track takes the event alone.
	s := p.before
	if err := x.fold(&s, p.env); err != nil {
		return err
	}
	*x.replayed = s
	return nil
}

// timeline describes the judged steps for a changed session's report.
func (x *exact) timeline() []Step {
	changed := map[uint64]bool{}
	for _, d := range x.r.Diffs {
		if !d.Shredded {
			changed[d.Seq] = true
		}
	}
	out := make([]Step, 0, len(x.steps))
	for _, j := range x.steps {
		out = append(out, Step{Seq: j.env.Seq(), HookPoint: j.env.EventType(), Tool: toolOf(j.env), Recorded: j.recorded, Replayed: j.replayed,
			RuleBefore: j.ruleBefore, RuleAfter: j.ruleAfter, Changed: changed[j.env.Seq()]})
	}
	return out
}

func (x *exact) notePolicy(digest string) {
	if x.policy == nil {
		x.policy = map[string]bool{}
	}
	x.policy[digest] = true
}

// verdictFields are the parts of a verdict exact replay compares, in the
// order diffs report them.
var verdictFields = []struct {
	name  string
	value func(aarts.VerdictRecord) any
}{
	{"decision", func(v aarts.VerdictRecord) any { return v.Verdict.Decision }},
	{"aarm_decision", func(v aarts.VerdictRecord) any { return v.AARMDecision }},
	{"reason_code", func(v aarts.VerdictRecord) any { return v.ReasonCode }},
	{"matched_rule_id", func(v aarts.VerdictRecord) any { return v.Verdict.MatchedRuleID }},
	{"constraints", func(v aarts.VerdictRecord) any { return normal(v.Constraints) }},
	{"directives", func(v aarts.VerdictRecord) any { return redacted(normal(v.Verdict.Directives)) }},
}

// normal returns m as it reads back from JSON, so that a recorded value
// and a freshly computed one compare alike (numbers as float64, empty as
// absent).
func normal(m map[string]any) any {
	if len(m) == 0 {
		return nil
	}
	return normalValue(m)
}

func equal(a, b any) bool { return reflect.DeepEqual(a, b) }

// redacted is v with every string redacted (detect.Redact): directives
// may carry a rewritten tool input, which a report must not show in the
// clear. Both sides of a comparison are redacted alike.
func redacted(v any) any {
	switch x := v.(type) {
	case string:
		return detect.Redact(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = redacted(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, y := range x {
			out[k] = redacted(y)
		}
		return out
	}
	return v
}

// toolOf describes a step's tool call for reports: the native tool name
// and, for a shell call, its command.
//
// It reads the recorded event, sealed values shown as sealed: a report
// never carries what the ledger keeps sealed.
func toolOf(env *ledger.Envelope) string {
	ev, err := aarts.ParseEvent(seal.Render(env.Payload()))
	if err != nil || ev.NativeTool() == "" {
		return ""
	}
	if m, ok := ev.ToolInput.(map[string]any); ok {
		for _, k := range []string{"command", "file_path", "path", "url", "query"} {
			if s, ok := m[k].(string); ok && s != "" {
				// As recorded, and redacted: a recording made before
				// sealing, or without it, holds the values in the clear.
				return ev.NativeTool() + ": " + detect.Redact(s)
			}
		}
	}
	return ev.NativeTool()
}
