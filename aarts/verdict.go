package aarts

import (
	"encoding/json"
	"slices"

	"github.com/agentledger/agentledger/ledger"
)

// AARTS decisions (§6.6).
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"
)

// AARM decisions: what the engine decided, of which the AARTS decision is
// what the host enforces (MODIFY → allow with directives; STEP_UP and DEFER
// → ask until resolved).
const (
	AARMAllow  = "ALLOW"
	AARMDeny   = "DENY"
	AARMModify = "MODIFY"
	AARMStepUp = "STEP_UP"
	AARMDefer  = "DEFER"
)

// AARTSFor maps an AARM decision to the AARTS decision a host enforces.
func AARTSFor(aarm string) string {
	switch aarm {
	case AARMAllow, AARMModify:
		return Allow
	case AARMStepUp, AARMDefer:
		return Ask
	}
	return Deny
}

// Strictness orders decisions for merging: deny > ask > allow.
func Strictness(decision string) int {
	switch decision {
	case Deny:
		return 2
	case Ask:
		return 1
	}
	return 0
}

// HostAnswerNone is the host answer that gives no permission decision, so
// that the host's own permission flow decides.
const HostAnswerNone = "none"

// Who can close an ask (VerdictRecord.AskOwner).
const (
	// AskOwnerHost: the host prompted its user, and reports the answer.
	AskOwnerHost = "host"
	// AskOwnerApprover: no one in the host was asked; an approver's
	// resolution (or the ask's timeout) closes it.
	AskOwnerApprover = "approver"
)

// How a tool result fails to answer a call it was let run
// (VerdictRecord.Unbound).
const (
	// ResultUnknownCall: the session has no call the result names.
	ResultUnknownCall = "unknown_call"
	// ResultDeniedCall: the call was answered deny (or deferred): the host
	// ran something it was told not to, or reports what did not happen.
	ResultDeniedCall = "denied_call"
	// ResultAskedCall: the call still waits for an approver.
	ResultAskedCall = "asked_call"
	// ResultInputDiffers: the result carries another input than the call
	// it names was judged (and let run) with.
	ResultInputDiffers = "input_differs"
)

// ReasonResultWithoutAllow is the reason code of a tool result that
// answers no call the host was let run (VerdictRecord.Unbound).
const ReasonResultWithoutAllow = "RESULT_WITHOUT_ALLOW"

// HostAnswerDefer is the host answer that defers an ask: the host stops
// the call and ends the run so that its caller can resume it once someone
// has decided (Claude Code's "defer" in print mode; AARM DEFER).
const HostAnswerDefer = "defer"

// Resolutions a user may give an ask (§6.6), and the engine's own timeout.
var Resolutions = []string{"approved", "denied", "allow_always", "allow_similar", "deny_always", "deny_similar", "timeout"}

// IsResolution reports whether r is in Resolutions.
func IsResolution(r string) bool { return slices.Contains(Resolutions, r) }

// Verdict is the AARTS verdict (§6.5).
type Verdict struct {
	Decision             string         `json:"decision"`
	Category             string         `json:"category"`
	Severity             string         `json:"severity"`
	Confidence           *float64       `json:"confidence,omitempty"`
	Source               string         `json:"source"`
	Artifacts            []string       `json:"artifacts,omitempty"`
	MatchedRuleID        string         `json:"matched_rule_id,omitempty"`
	Reasons              []string       `json:"reasons,omitempty"`
	Directives           map[string]any `json:"directives,omitempty"`
	SuggestedResolutions []string       `json:"suggested_resolutions,omitempty"`
}

// VerdictRecord is the payload of a Verdict envelope: the verdict for the
// hook event at for_seq, with what produced it.
type VerdictRecord struct {
	ForSeq       uint64         `json:"for_seq"`
	ForHash      string         `json:"for_hash"`
	HookPoint    string         `json:"hook_point"`
	Verdict      Verdict        `json:"verdict"`
	AARMDecision string         `json:"aarm_decision"`
	ReasonCode   string         `json:"reason_code"`
	Constraints  map[string]any `json:"constraints,omitempty"`
	PolicyDigest string         `json:"policy_digest"`
	SnapshotHash string         `json:"snapshot_hash"`
	// HostAnswer, for an event of a host that has a permission flow of its
	// own, is what the host was answered: the decision, or "none" for an
	// allow that rests on no explicit allow (no permission decision is
	// given, so the host's own guard still applies).
	HostAnswer string `json:"host_answer,omitempty"`
	// ActionSHA256 names the judged action: the SHA-256 of the canonical
	// tool input (of the whole event when it has none). A resolution of
	// this verdict's ask must name the same action.
	ActionSHA256 string `json:"action_sha256,omitempty"`
	// AskOwner, on an enforced ask (STEP_UP, DEFER), says who can close
	// it: AskOwnerHost when the host prompts its user (the host reports
	// the answer: its PostAskResolution, or its report of the asked call),
	// AskOwnerApprover for every other ask (an approver's Resolution, or
	// its timeout). AskedBy is the identity that asked (AskerOf): only
	// its host closes a host's ask, and an approval releases the call
	// only to it.
	AskOwner string `json:"ask_owner,omitempty"`
	AskedBy  string `json:"asked_by,omitempty"`
	// Unbound, in the verdict of a tool result (PostToolUse) that answers
	// no call the host was let run, says how (ResultUnknownCall, ...):
	// the verdict is RESULT_WITHOUT_ALLOW, never a plain allow.
	Unbound string `json:"unbound,omitempty"`
	// TurnID, for an ask the host resolves itself (HostAnswer "ask"), is
	// the asked call's turn (Claude Code's tool_use_id): the host's later
	// report of that call tells how the ask was resolved.
	TurnID string `json:"turn_id,omitempty"`
	// Inherited, in the verdict of a sub-agent session's first event that
	// names its parent, is what the session inherited (the reducer's
	// Inheritance): the ceiling it was judged under from then on.
	Inherited json.RawMessage `json:"inherited,omitempty"`
	// Enforced is false in monitor mode: the verdict was judged and
	// recorded, and the host was answered as if agentledger were not
	// there (no permission decision). Absent: enforced.
	Enforced *bool `json:"enforced,omitempty"`
	// ReleasedBy, in the verdict of a call an approver approved after it
	// was asked about (AARM R4.3), is the seq of that approval's
	// Resolution: the call is allowed once, as the approved one.
	ReleasedBy uint64 `json:"released_by,omitempty"`
	// Completes, in the verdict of a PostToolUse, names the verdict (and
	// so the receipt) of the PreToolUse whose call this is the outcome of
	// (AARM R5.5); OutcomeSHA256 is the SHA-256 of the recorded result
	// (its canonical tool_result, sealed values sealed).
	Completes     *CallRef `json:"completes,omitempty"`
	OutcomeSHA256 string   `json:"outcome_sha256,omitempty"`
	// Unreported, in the verdict of an event that ends a turn (output
	// delivered, the session's end), names the calls the host was let run
	// whose outcome it has not reported by then (a call the host refused
	// on its own, a command still running): open calls the turn closes as
	// "outcome not reported by the host". A result reported later still
	// completes its call.
	Unreported []CallRef `json:"unreported,omitempty"`
	// Receipt is the decision receipt of this verdict (AARM R5), when the
	// engine signs; package receipt defines and checks it.
	Receipt json.RawMessage `json:"receipt,omitempty"`
	// Sig is the record's signature (ledger.SignedRecord), added where
	// the record is sealed.
	Sig *ledger.RecordSig `json:"sig,omitempty"`
}

// ResolutionRecord is the payload of a Resolution envelope: how a pending
// ask, STEP_UP or DEFER verdict was resolved.
type ResolutionRecord struct {
	ForSeq     uint64   `json:"for_seq"`
	Resolution string   `json:"resolution"`
	Artifacts  []string `json:"artifacts,omitempty"`
	Scope      string   `json:"scope,omitempty"` // session or tenant
	// By is who resolved it, as authenticated (the approver token's
	// principal, or its name); "host" or "engine" for those sources.
	By string `json:"by,omitempty"`
	// AuthenticatedBy says how By was established ("token:<name>",
	// "unix:uid=<n>").
	AuthenticatedBy string `json:"authenticated_by,omitempty"`
	// Source says who resolved it: "engine" (through the engine's
	// resolution API, or its timeout) when empty, or "host" for an ask the
	// host resolved in its own prompt, inferred from what the host reported
	// next (the asked call ran: approved).
	Source string `json:"source,omitempty"`
	// ActionSHA256 names the exact action resolved: the params digest of
	// the ask's receipt (the SHA-256 of its canonical tool input). A
	// resolution for another action is refused.
	ActionSHA256 string `json:"action_sha256,omitempty"`
	// Sig is the record's signature (ledger.SignedRecord).
	Sig *ledger.RecordSig `json:"sig,omitempty"`
}

// IsEnforced reports whether the verdict was enforced (not monitor mode).
func (v VerdictRecord) IsEnforced() bool { return v.Enforced == nil || *v.Enforced }

// CallRef names a judged call in its session's record: the PreToolUse
// event and the verdict (with its receipt) that let it run.
type CallRef struct {
	EventSeq    uint64 `json:"event_seq"`
	VerdictSeq  uint64 `json:"verdict_seq"`
	VerdictHash string `json:"verdict_hash"`
}
