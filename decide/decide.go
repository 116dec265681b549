// Package decide is agentledger's decision step, pure: a hook event is
// validated, folded into its session's snapshot, evaluated by the policy,
// and answered with a sealed, signed verdict that is itself folded back
// into the session. It reads no clock, no network and no store: package
// engine records its steps in the ledger, and exact replay (package replay)
// re-runs them offline through the same code.
package decide

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/canon"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/reducer"
	"github.com/agentledger/agentledger/seal"
)

// Session is one session's state in the pipeline: its chain head and its
// snapshot. The zero value is not valid; use NewSession.
type Session struct {
	Head     ledger.Head
	Snapshot reducer.Snapshot
	Events   int // hook events decided so far
	// Recorded holds the ids of the EngineFailure and Rejected records in
	// the session, so that a spooled record is never appended twice (the
	// engine's bookkeeping).
	Recorded map[string]bool
	// Auth is who the engine authenticated as sending the session's
	// current event (the receipt's identity, AARM R6). The engine sets it
	// per request; it is never read from the event.
	Auth receipt.Authenticated
	// Inherit, set by the caller for a sub-agent session's first event
	// that names its parent (InheritanceFor), is folded in before the
	// event is judged and recorded in its verdict.
	Inherit *reducer.Inheritance
	// Monitor, set by the caller per event, judges and records the event
	// without enforcing its verdict (monitor mode): the verdict says
	// enforced false, the host is answered with no permission decision,
	// nothing waits for an approver and no approval is spent.
	Monitor bool
	// StreamSeq is the stream sequence of the last message of the session
	// this state has read or written: a catch-up reads from after it (the
	// engine's bookkeeping).
	StreamSeq uint64
}

// MarkRecorded notes that the record with id is in the session.
func (s *Session) MarkRecorded(id string) {
	if id == "" {
		return
	}
	if s.Recorded == nil {
		s.Recorded = map[string]bool{}
	}
	s.Recorded[id] = true
}

// NewSession returns the state of a session before its first event.
func NewSession(tenant, session string) *Session {
	return &Session{Snapshot: reducer.New(tenant, session)}
}

// Decider folds and judges events. It is safe for concurrent use across
// sessions; one session's events MUST be decided one at a time.
type Decider struct {
	Policy  *policy.Policy
	Reducer *reducer.Reducer
	Limits  ledger.Limits
	// Signer, when set, signs every record the engine writes and puts a
	// decision receipt into every verdict.
	Signer *receipt.Signer
	// Sealer, when set, seals the secrets (and what the manifest names)
	// in every hook event before it is recorded; the policy judges the
	// plaintext. Keys, when set, unseals recorded events for rebuilds and
	// replays (a Sealer's keys serve both).
	Sealer *seal.Sealer
	Keys   seal.KeyStore
}

// Stored returns payload as it is recorded for a session: sealed when the
// decider seals.
func (d *Decider) Stored(tenant, session string, payload []byte) ([]byte, error) {
	if d.Sealer == nil {
		return payload, nil
	}
	// The input is validated as sent, before the sealer re-encodes it:
	// sealing must not turn a duplicate member or a lone surrogate, which
	// an event without a secret is rejected for, into something valid. (A
	// payload the sealer returns as it is gets validated when it is
	// sealed into its envelope.)
	if d.Sealer.Reencodes(payload) {
		if _, err := ledger.Canonicalize(payload, d.Limits); err != nil {
			return nil, err
		}
	}
	out, _, err := d.Sealer.Seal(tenant, session, payload)
	return out, err
}

// keys is the key store that unseals recorded events, or nil.
func (d *Decider) keys() seal.KeyStore {
	if d.Keys != nil {
		return d.Keys
	}
	if d.Sealer != nil {
		return d.Sealer.Keys
	}
	return nil
}

// Plaintext returns a recorded hook event's payload as the engine judged
// it: unsealed, when it holds sealed values and the keys are at hand.
// shredded is true when a value's key was destroyed (the payload is then
// returned sealed).
func (d *Decider) Plaintext(env *ledger.Envelope) (payload []byte, shredded bool, err error) {
	payload = env.Payload()
	keys := d.keys()
	if keys == nil || !seal.Has(payload) || !aarts.IsHookPoint(env.EventType()) {
		return payload, false, nil
	}
	plain, err := seal.Unseal(payload, keys, env.TenantID(), env.SessionID())
	if errors.Is(err, seal.ErrShredded) {
		return payload, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("seq %d: unseal: %w", env.Seq(), err)
	}
	return plain, false, nil
}

// ApplyRecorded folds a recorded envelope into snap as the engine folded
// it when it judged it: a sealed hook event in its plaintext.
func (d *Decider) ApplyRecorded(snap reducer.Snapshot, env *ledger.Envelope) (reducer.Snapshot, error) {
	plain, shredded, err := d.Plaintext(env)
	if err != nil {
		return snap, err
	}
	if shredded {
		// What was shredded is folded as such: a string that says so. A
		// value sealed whole whose type that breaks is left out, and if
		// the event still does not read, only what says what it is stays:
		// a session whose keys were shredded goes on.
		for _, f := range []func(seal.Ref) (any, error){shreddedText, shreddedOut} {
			if p, err := seal.Transform(env.Payload(), f); err == nil {
				if ev, err := aarts.ParseEvent(p); err == nil {
					return d.Reducer.ApplyEvent(snap, env, ev)
				}
			}
		}
		ev, err := aarts.ParseEvent(seal.Identity(env.Payload()))
		if err != nil {
			return snap, err
		}
		return d.Reducer.ApplyEvent(snap, env, ev)
	}
	if !aarts.IsHookPoint(env.EventType()) || string(plain) == string(env.Payload()) {
		return d.Reducer.Apply(snap, env)
	}
	ev, err := aarts.ParseEvent(plain)
	if err != nil {
		return snap, err
	}
	return d.Reducer.ApplyEvent(snap, env, ev)
}

func shreddedText(r seal.Ref) (any, error) { return "‹shredded: " + r.Kind + "›", nil }

func shreddedOut(r seal.Ref) (any, error) {
	if r.JSON {
		return nil, nil
	}
	return shreddedText(r)
}

// RecordSigner is d's signer as a ledger.RecordSigner, nil when d does
// not sign.
func (d *Decider) RecordSigner() ledger.RecordSigner {
	if d.Signer == nil {
		return nil
	}
	return d.Signer
}

// NewDecider returns a Decider for p, with a reducer that knows p's
// manifest.
func NewDecider(p *policy.Policy) *Decider {
	return &Decider{Policy: p, Reducer: reducer.NewReducer(reducer.Config{Manifest: p.Manifest()})}
}

// Step is the outcome of deciding one hook event: the sealed event, the
// snapshot it was judged on, the decision, and the sealed verdict.
type Step struct {
	Index        int
	Event        *aarts.Event
	Envelope     *ledger.Envelope
	SnapshotHash string
	Decision     *policy.Decision
	Verdict      *ledger.Envelope
	Record       aarts.VerdictRecord
	// PendingID, for an ask (STEP_UP, DEFER) recorded by an Engine, is the
	// unguessable id that resolves it.
	PendingID string
	// Engine, in a fleet, is the member that decided and recorded the step.
	Engine string
}

// recordedVerdict is the verdict of dec as it is recorded and answered:
// its reasons and artifacts, which may quote what the event carried (a
// token used as a host name, a password inside SQL), with every secret and
// piece of personal data redacted. A redacted artifact matches no call, so
// an allow_always resolution of it grants nothing.
func recordedVerdict(dec *policy.Decision) aarts.Verdict {
	v := dec.Verdict()
	v.Reasons = detect.RedactAll(v.Reasons)
	v.Artifacts = detect.RedactAll(v.Artifacts)
	return v
}

// Decide judges one hook event of session s and advances s: the event and
// its verdict are sealed onto s's chain and folded into its snapshot. The
// event's own timestamp is the envelope time (what offline evaluation
// wants; a recording engine stamps its own clock with DecideEvent). A bad
// event returns an *aarts.ValidationError or *ledger.InputError and leaves
// s unchanged.
func (d *Decider) Decide(ctx context.Context, s *Session, payload []byte) (*Step, error) {
	ev, err := aarts.ParseEvent(payload)
	if err != nil {
		return nil, err
	}
	return d.DecideEvent(ctx, s, ev, payload, ev.Time)
}

// DecideEvent is Decide for an event the caller already parsed from
// payload, stamped at: the envelope time of the event and its verdict and
// the time the policy is evaluated at. A recording engine passes its own
// receive time; exact replay passes the recorded envelope time.
func (d *Decider) DecideEvent(ctx context.Context, s *Session, ev *aarts.Event, payload []byte, at time.Time) (*Step, error) {
	return d.decide(ctx, s, ev, payload, at, nil)
}

// DecideRecorded is DecideEvent for a hook event as it was recorded in rec
// (exact replay): stamped at rec's time, and, when payload is rec's own
// payload and nothing is sealed, sealed from rec without validating or
// canonicalizing its payload again (a recorded envelope's payload is
// canonical).
func (d *Decider) DecideRecorded(ctx context.Context, s *Session, ev *aarts.Event, rec *ledger.Envelope, payload []byte) (*Step, error) {
	return d.decide(ctx, s, ev, payload, time.UnixMilli(rec.TsUnixMs()), rec)
}

func (d *Decider) decide(ctx context.Context, s *Session, ev *aarts.Event, payload []byte, at time.Time, rec *ledger.Envelope) (*Step, error) {
	var err error
	tenant, session := s.Snapshot.TenantID, s.Snapshot.SessionID
	if ev.SessionID != session {
		return nil, &aarts.ValidationError{HookPoint: ev.HookPoint, Field: "session_id", Msg: fmt.Sprintf("%q does not belong to session %q", ev.SessionID, session)}
	}
	if ev.HookPoint == "PostAskResolution" {
		if err := reducer.MatchAskResolution(s.Snapshot, ev, AskerIn(s.Auth, s.Snapshot)); err != nil {
			return nil, &aarts.ValidationError{HookPoint: ev.HookPoint, Field: "turn_id", Msg: err.Error()}
		}
	}
	env, err := d.sealEvent(s, ev, payload, at, rec)
	if err != nil {
		return nil, err
	}
	snap, err := d.Reducer.ApplyEvent(s.Snapshot, env, ev)
	if err != nil {
		return nil, err
	}
	var inherited json.RawMessage
	if in := s.Inherit; in != nil && snap.NeedsInheritance() {
		snap = d.Reducer.Inherit(snap, *in)
		if inherited, err = json.Marshal(in); err != nil {
			return nil, err
		}
	}
	auth := inheritedAuth(s.Auth, snap.Inherited)
	asker := AskerOf(auth)
	dec, err := d.Policy.Evaluate(ctx, policy.Input{Event: ev.Raw, Action: action.Of(ev), Snapshot: snap.Map(), Identity: auth.Map()}, at)
	if err != nil {
		return nil, err
	}
	monitor := s.Monitor
	digest := ActionDigest(ev, env)
	var released uint64
	// An approval releases the same call in the same place, asked again as
	// a call: never a host's request for more (Codex's PermissionRequest).
	if rel, ok := snap.ReleaseFor(digest, ev.NativeTool(), ev.Cwd, asker, env.TsUnixMs()); ok && dec.Decision == aarts.Ask && !monitor &&
		ev.HookPoint == "PreToolUse" && ev.Field("permission_request") == nil {
		dec, released = releasedDecision(dec, rel), rel.Seq
	}
	// A tool result must be the outcome of a call the host was let run.
	call, bound, unbound := s.Snapshot.BindResult(ev)
	if unbound != "" {
		dec = unboundDecision(dec, unbound)
	}
	step := &Step{Index: s.Events, Event: ev, Envelope: env, SnapshotHash: snap.Hash(), Decision: dec}
	step.Record = aarts.VerdictRecord{
		ForSeq: env.Seq(), ForHash: env.Hash(), HookPoint: ev.HookPoint, Verdict: recordedVerdict(dec),
		AARMDecision: dec.AARMDecision, ReasonCode: dec.ReasonCode, Constraints: dec.Constraints,
		PolicyDigest: dec.PolicyDigest, SnapshotHash: step.SnapshotHash, HostAnswer: HostAnswer(ev, dec),
		ActionSHA256: digest, Inherited: inherited, ReleasedBy: released,
	}
	if bound {
		// The outcome of a judged call: bound to the verdict that let it
		// run (AARM R5.5).
		step.Record.Completes, step.Record.OutcomeSHA256 = &call, OutcomeDigest(env)
	}
	step.Record.Unbound = unbound
	if reducer.EndsTurn(ev.HookPoint) {
		step.Record.Unreported = snap.UnreportedCalls()
	}
	if step.Record.HostAnswer == aarts.Ask || dec.Decision == aarts.Ask {
		step.Record.TurnID = ev.TurnID // what a PostAskResolution must name
	}
	if (dec.Decision == aarts.Ask || dec.AARMDecision == aarts.AARMStepUp || dec.AARMDecision == aarts.AARMDefer) &&
		(dec.Decision == aarts.Allow || step.Record.HostAnswer != aarts.HostAnswerNone) {
		// Who can close the ask: the host's own prompt, or an approver
		// (none where the host went on without waiting).
		step.Record.AskOwner, step.Record.AskedBy = aarts.AskOwnerApprover, asker
		if step.Record.HostAnswer == aarts.Ask {
			step.Record.AskOwner = aarts.AskOwnerHost
		}
	}
	if monitor {
		// Judged and recorded, not enforced: the host decides alone.
		enforced := false
		step.Record.Enforced, step.Record.HostAnswer, step.Record.TurnID = &enforced, aarts.HostAnswerNone, ""
		step.Record.AskOwner, step.Record.AskedBy = "", ""
	}
	if d.Signer != nil {
		if step.Record.Receipt, err = d.receipt(ev, env, step, auth, at); err != nil {
			return nil, fmt.Errorf("receipt: %w", err)
		}
	}
	draft, err := ledger.PrepareRecord(ledger.Event{TenantID: tenant, SessionID: session, EventType: ledger.EventVerdict,
		TsUnixMs: at.UnixMilli(), Signer: d.RecordSigner()}, &step.Record, d.Limits)
	if err != nil {
		return nil, fmt.Errorf("verdict: %w", err)
	}
	venv, err := draft.Seal(env.Head())
	if err != nil {
		return nil, fmt.Errorf("verdict: %w", err)
	}
	after, err := d.Reducer.ApplyVerdict(snap, venv, &step.Record)
	if err != nil {
		return nil, fmt.Errorf("verdict: %w", err)
	}
	step.Verdict = venv
	s.Head, s.Snapshot, s.Inherit = venv.Head(), after, nil
	s.Events++
	return step, nil
}

// sealEvent seals hook event ev, sent as payload, onto s's chain at time
// at: from rec, the envelope it was recorded in, when rec holds the same
// event.
func (d *Decider) sealEvent(s *Session, ev *aarts.Event, payload []byte, at time.Time, rec *ledger.Envelope) (*ledger.Envelope, error) {
	head, tenant, session := s.Head, s.Snapshot.TenantID, s.Snapshot.SessionID
	if rec != nil && d.Sealer == nil && rec.TenantID() == tenant && rec.SessionID() == session && rec.EventType() == ev.HookPoint &&
		rec.TsUnixMs() == at.UnixMilli() && bytes.Equal(rec.Payload(), payload) {
		draft, err := ledger.PrepareFrom(rec, d.Limits)
		if err != nil {
			return nil, err
		}
		return draft.Seal(head)
	}
	stored, err := d.Stored(tenant, session, payload)
	if err != nil {
		return nil, err
	}
	return ledger.Seal(head, ledger.Event{TenantID: tenant, SessionID: session, EventType: ev.HookPoint,
		TsUnixMs: at.UnixMilli(), Payload: stored}, d.Limits)
}

// ReasonApproved is the reason code of a call an approver approved after
// it was asked about, sent again and allowed once (AARM R4.3).
const ReasonApproved = "APPROVED"

// releasedDecision is dec, an ask, turned into the allow an approver gave
// the same action in the Resolution rel: explicit (the user's own answer),
// once. Only an ask is released: what the policy now denies stays denied.
func releasedDecision(dec *policy.Decision, rel reducer.Release) *policy.Decision {
	d := *dec
	d.Decision, d.AARMDecision, d.ReasonCode, d.MatchedRuleID = aarts.Allow, aarts.AARMAllow, ReasonApproved, ReasonApproved
	d.Category, d.Severity, d.Source, d.Explicit, d.Directives = "none", "info", "human_approval", true, nil
	d.Reasons = []string{fmt.Sprintf("approved by an approver (resolution at seq %d of the ask at seq %d); allowed once", rel.Seq, rel.ForSeq)}
	return &d
}

// AskerOf names the identity auth in an ask (VerdictRecord.AskedBy): how
// it was authenticated, and the principal and agent it acts for.
func AskerOf(auth receipt.Authenticated) string {
	var parts []string
	for _, p := range [][2]string{{"", auth.By}, {"principal=", auth.Principal}, {"agent=", auth.Agent}} {
		if p[1] != "" {
			parts = append(parts, p[0]+p[1])
		}
	}
	return strings.Join(parts, ";")
}

// AskerIn is AskerOf the identity auth sending the next event of a session
// whose snapshot is snap (a sub-agent's session asks as the identity its
// parent acted for, when auth names no principal).
func AskerIn(auth receipt.Authenticated, snap reducer.Snapshot) string {
	return AskerOf(inheritedAuth(auth, snap.Inherited))
}

// unboundDecision is dec for a tool result that answers no call the host
// was let run (how: unbound, see reducer.BindResult): never a plain
// allow. A policy's deny stands (with what it withholds); anything else
// becomes a deny RESULT_WITHOUT_ALLOW, which withholds the result from
// the model where the host can, and is raised as a finding.
func unboundDecision(dec *policy.Decision, unbound string) *policy.Decision {
	why := map[string]string{
		aarts.ResultUnknownCall:  "no call of the session was judged with this turn and input: a result for a call agentledger never allowed",
		aarts.ResultDeniedCall:   "the call was answered deny: the host ran what it was told not to run, or reports what did not happen",
		aarts.ResultAskedCall:    "the call still waits for an approver: the host ran it without an approval",
		aarts.ResultInputDiffers: "the result carries another input than the call it names was judged with",
	}[unbound]
	d := *dec
	d.Reasons = append(slices.Clone(dec.Reasons), "result without an allow ("+unbound+"): "+why)
	if dec.Decision == aarts.Deny {
		return &d
	}
	d.Decision, d.AARMDecision, d.ReasonCode, d.MatchedRuleID = aarts.Deny, aarts.AARMDeny, aarts.ReasonResultWithoutAllow, aarts.ReasonResultWithoutAllow
	d.Category, d.Severity, d.Source, d.Explicit, d.Directives = "result_binding", "high", "engine", false, nil
	return &d
}

// guardedHosts are the hosts with a permission flow of their own, which an
// adapter must never switch off: their users are prompted for what the host
// itself finds worth asking about.
var guardedHosts = map[string]bool{"claude-code": true, "cursor": true, "copilot": true, "gemini-cli": true, "codex": true, "qwen-code": true, "droid": true, "opencode": true, "kilo": true, "cline": true}

// HostAnswer is what a host is answered for a decision on ev, when ev came
// through the adapter of a host with its own permission flow (the event's
// "adapter" extension, set by the adapter's mapping and so recorded). An
// allow that rests on no explicit allow (dec.Explicit) is answered with no
// decision (aarts.HostAnswerNone), so the host's own guard still applies:
// agentledger never leaves the user less protected than the host alone
// would. The event's auto_approve extension (the adapter's documented
// opt-in) answers every allow as an allow. An ask is the host's to resolve
// in its own prompt. Other events get "": the decision is the answer.
func HostAnswer(ev *aarts.Event, dec *policy.Decision) string {
	if !guardedHosts[ev.String("adapter")] {
		if dec.Decision == aarts.Ask && ev.Field("host_prompts") == true {
			return aarts.Ask // an AARTS host its deployment says prompts its user
		}
		return ""
	}
	if ev.Field("host_waits") == false {
		// An event the host does not wait on: it goes on whatever the
		// answer, and is given none.
		return aarts.HostAnswerNone
	}
	if dec.Decision == aarts.Ask && ev.Field("host_defers") == true {
		// No one attends the run. A deferral waits for the run's caller,
		// who resumes it; a step-up waits for an approver, whose approval
		// lets the call run once when the agent sends it again.
		if dec.AARMDecision == aarts.AARMDefer {
			return aarts.HostAnswerDefer
		}
		return aarts.Deny
	}
	if dec.Decision == aarts.Ask && ev.Field("host_asks") == false {
		return aarts.Deny // no one to prompt: the host is answered deny
	}
	if dec.Decision == aarts.Allow && ev.Field("host_allows") == false {
		// The host takes an allow only with the input to run (Codex at
		// PreToolUse): an explicit rewrite is one; a rewrite the user
		// would have to approve is refused (the host cannot ask); any
		// other allow gives it no decision.
		switch {
		case RewrittenInput(dec.Directives) == nil:
			return aarts.HostAnswerNone
		case dec.Explicit:
			return aarts.Allow
		}
		return aarts.Deny
	}
	if dec.Decision != aarts.Allow || dec.Explicit {
		return dec.Decision
	}
	if a := action.Of(ev); ev.Field("auto_approve") == true && (a == nil || len(a.Caveats) == 0) {
		return dec.Decision // the documented opt-in, for what the engine could read whole
	}
	if RewrittenInput(dec.Directives) != nil {
		// A rewrite the host must apply: the user sees the rewritten call
		// in the host's own prompt (an explicit allow runs it directly).
		return aarts.Ask
	}
	return aarts.HostAnswerNone
}

// RewrittenInput is the tool input a MODIFY verdict's directives replace
// the call's input with (directive "tool_input"), or nil.
func RewrittenInput(directives map[string]any) map[string]any {
	in, _ := directives["tool_input"].(map[string]any)
	return in
}

// IsInputError reports whether err is the fault of the event rather than
// of the engine.
func IsInputError(err error) bool {
	var ve *aarts.ValidationError
	return errors.As(err, &ve) || errors.Is(err, ledger.ErrInvalidInput)
}

// receipt writes the decision receipt of a step (AARM R5); the verdict's
// signature covers it. Its identity is the authenticated one (auth), never
// the event's own identity block: a claim that differs is flagged, as is
// what authentication did not establish (AARM R6).
func (d *Decider) receipt(ev *aarts.Event, env *ledger.Envelope, step *Step, auth receipt.Authenticated, at time.Time) (json.RawMessage, error) {
	r := receipt.Receipt{
		V:            receipt.Version,
		Action:       receipt.Action{HookPoint: ev.HookPoint, ToolNative: ev.NativeTool(), ParamsSHA256: step.Record.ActionSHA256, TsUnixMs: at.UnixMilli()},
		Context:      receipt.Context{EventHash: env.Hash(), EventSeq: env.Seq(), SnapshotHash: step.SnapshotHash},
		Identity:     auth.Identity(env.TenantID(), env.SessionID()),
		Decision:     receipt.Decision{AARTS: step.Decision.Decision, AARM: step.Decision.AARMDecision, ReasonCode: step.Decision.ReasonCode},
		PolicyDigest: step.Decision.PolicyDigest,
	}
	if c := step.Record.Completes; c != nil {
		r.Outcome = &receipt.Outcome{Completes: c.VerdictHash, CompletesSeq: c.VerdictSeq, ResultSHA256: step.Record.OutcomeSHA256,
			Failed: ev.Field("tool_failed") == true}
	}
	if a := action.Of(ev); a != nil {
		r.Action.Tool = a.Tool
	}
	if id, ok := ev.Field("identity").(map[string]any); ok {
		for _, k := range []string{"principal", "agent", "service", "scope"} {
			if claim, _ := id[k].(string); claim != "" && claim != auth.Field(k) {
				r.Identity.Flagged = append(r.Identity.Flagged, "claim_differs")
				break
			}
		}
	}
	return json.Marshal(r)
}

// inheritedAuth is auth, or, when it names no principal and the session is
// a sub-agent's, the identity its parent acted for (AARM R6).
func inheritedAuth(auth receipt.Authenticated, in *reducer.Inheritance) receipt.Authenticated {
	if auth.Principal != "" || in == nil || in.Principal == "" {
		return auth
	}
	auth.Principal, auth.Agent = in.Principal, cmp.Or(auth.Agent, in.Agent)
	auth.By = strings.TrimPrefix(auth.By+",parent:"+in.ParentSessionID, ",")
	return auth
}

// InheritanceFor is what the session s inherits from the parent session
// id that its next event names (parent_session_id), or nil: no parent, or
// s has inherited already. spawnID, when not "" or id, is the session the
// host reported the spawn in (spawn_session_id: a sub-agent another
// sub-agent started), whose grant bounds the child with the parent's own
// ceiling (reducer.SpawnedElsewhere). lookup finds a session's state in
// the same tenant (nil: unknown).
func InheritanceFor(id, spawnID string, s *Session, lookup func(id string) *Session) *reducer.Inheritance {
	if id == "" || id == s.Snapshot.SessionID || !s.Snapshot.NeedsInheritance() {
		return nil
	}
	of := func(id string, p *Session) reducer.Inheritance {
		if p == nil {
			return reducer.InheritanceOf(id, nil, "", s.Snapshot.SessionID, "", "")
		}
		return reducer.InheritanceOf(id, &p.Snapshot, p.Head.Hash, s.Snapshot.SessionID, p.Auth.Principal, p.Auth.Agent)
	}
	if spawnID == "" || spawnID == id || spawnID == s.Snapshot.SessionID {
		in := of(id, lookup(id))
		return &in
	}
	in := of(spawnID, lookup(spawnID))
	if p := lookup(id); p != nil {
		in = reducer.SpawnedElsewhere(in, id, &p.Snapshot, p.Head.Hash, p.Auth.Principal, p.Auth.Agent)
	} else {
		in = reducer.SpawnedElsewhere(in, id, nil, "", "", "")
	}
	return &in
}

// OutcomeDigest is the SHA-256 of the result a recorded PostToolUse env
// carries (its canonical tool_result as recorded, sealed values sealed).
func OutcomeDigest(env *ledger.Envelope) string {
	v, ok := member(env.Payload(), "tool_result")
	if !ok {
		return receipt.ParamsDigest([]byte("null"))
	}
	return receipt.ParamsDigest(v)
}

// member returns the value of the top-level member name of a recorded
// payload. A sealed payload is canonical, and its members are found
// without decoding it; any other is decoded.
func member(payload []byte, name string) (json.RawMessage, bool) {
	var buf [24]canon.Member
	if ms, err := canon.AppendMembers(buf[:0], payload); err == nil {
		var v json.RawMessage
		for _, m := range ms {
			if string(m.Key) == name {
				v = m.Value // the last, as a decoder takes it
			}
		}
		return v, v != nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(payload, &members) != nil || members[name] == nil {
		return nil, false
	}
	return members[name], true
}

// ActionDigest names the action of event ev, recorded as env: the SHA-256
// of its canonical tool input as recorded (sealed values sealed, so that
// the digest of a shredded value can never be tested against guesses), or
// of the whole recorded event when it has none. A receipt records it; a
// resolution must name it; an auditor recomputes it from the ledger.
func ActionDigest(ev *aarts.Event, env *ledger.Envelope) string {
	params := []byte(env.Payload())
	if ev.ToolInput != nil {
		if v, ok := member(params, "tool_input"); ok {
			params = v
		}
	}
	return receipt.ParamsDigest(params)
}
