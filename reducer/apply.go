package reducer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/elide"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/manifest"
)

// Config tunes a Reducer. The zero Config is the default.
type Config struct {
	// Manifest supplies data labels for tools and paths and the secret
	// paths whose reading marks the session SECRET. Optional.
	Manifest *manifest.Manifest
}

// Loop detector thresholds.
const (
	// Window is how many recent tool calls the loop detector keeps.
	Window = 16
	// IdenticalCalls is how often the same call (tool and canonical
	// input) within the window is a loop.
	IdenticalCalls = 3
	// NoProgressResults is how many consecutive tool results that were
	// all seen before within the window is a loop.
	NoProgressResults = 6
	// maxFindings bounds DataFindings.
	maxFindings = 64
	// maxTaintSources bounds TaintSources.
	maxTaintSources = 8
	// maxPending bounds Pending.
	maxPending = 64
	// maxWritten bounds Snapshot.Written; past it, the set is "*" (any
	// file may have been written by the session).
	maxWritten = 256
)

// Loop violation kinds.
const (
	LoopIdenticalCall     = "identical_call"
	LoopNoProgress        = "no_progress"
	LoopRepeatingSequence = "repeating_sequence"
)

// Reducer folds envelopes into snapshots. It is immutable and safe for
// concurrent use.
type Reducer struct {
	cfg Config
}

// NewReducer returns a Reducer with cfg.
func NewReducer(cfg Config) *Reducer { return &Reducer{cfg: cfg} }

var defaultReducer = NewReducer(Config{})

// Apply folds e into s with the default configuration.
func Apply(s Snapshot, e *ledger.Envelope) (Snapshot, error) { return defaultReducer.Apply(s, e) }

// Apply folds one envelope into s and returns the new snapshot; s is not
// changed. The envelope must be the next of s's session (seq s.Seq+1).
func (r *Reducer) Apply(s Snapshot, e *ledger.Envelope) (Snapshot, error) {
	return r.apply(s, e, nil, nil)
}

// ApplyEvent is Apply for a hook event envelope whose payload the caller
// has already parsed into ev (it MUST be e's payload): it spares parsing
// the event twice.
func (r *Reducer) ApplyEvent(s Snapshot, e *ledger.Envelope, ev *aarts.Event) (Snapshot, error) {
	return r.apply(s, e, ev, nil)
}

// ApplyVerdict is Apply for a Verdict envelope whose record the caller
// built and sealed as e (v MUST be e's payload, less its signature): the
// engine folds the verdict it just wrote without reading it back.
func (r *Reducer) ApplyVerdict(s Snapshot, e *ledger.Envelope, v *aarts.VerdictRecord) (Snapshot, error) {
	if e.EventType() != ledger.EventVerdict {
		return s, fmt.Errorf("reducer: ApplyVerdict of a %s", e.EventType())
	}
	return r.apply(s, e, nil, v)
}

func (r *Reducer) apply(s Snapshot, e *ledger.Envelope, ev *aarts.Event, vr *aarts.VerdictRecord) (Snapshot, error) {
	if s.Seq >= 0 && (e.TenantID() != s.TenantID || e.SessionID() != s.SessionID) {
		return s, fmt.Errorf("reducer: envelope of %s folded into %s/%s", e.Key(), s.TenantID, s.SessionID)
	}
	if int64(e.Seq()) != s.Seq+1 {
		return s, fmt.Errorf("reducer: %s seq %d folded after seq %d", e.Key(), e.Seq(), s.Seq)
	}
	n := s.clone()
	n.TenantID, n.SessionID = e.TenantID(), e.SessionID()
	n.Seq = int64(e.Seq())
	n.Events++
	if n.Events == 1 {
		n.StartedMs = e.TsUnixMs()
	}
	if e.TsUnixMs() > n.LastMs {
		n.LastMs = e.TsUnixMs()
	}
	n.WallTimeMs = n.LastMs - n.StartedMs
	var err error
	switch e.EventType() {
	case ledger.EventVerdict:
		if vr == nil {
			vr = new(aarts.VerdictRecord)
			err = decodeStrict(e.Payload(), vr)
		}
		if err == nil {
			err = n.foldVerdict(vr)
		}
		if err == nil {
			n.trackCall(vr, e)
		}
	case ledger.EventResolution:
		err = n.foldResolution(e)
	case ledger.EventEngineFailure, ledger.EventCheckpoint, ledger.EventRejected, ledger.EventReveal, ledger.EventShred:
	default:
		err = r.foldHook(&n, e, ev)
	}
	if err != nil {
		return s, fmt.Errorf("reducer: %s seq %d (%s): %w", e.Key(), e.Seq(), e.EventType(), err)
	}
	return n, nil
}

// clone copies s deeply enough that appending to n never writes into s.
func (s Snapshot) clone() Snapshot {
	n := s
	n.TaintKinds = slices.Clone(s.TaintKinds)
	n.TaintSources = slices.Clone(s.TaintSources)
	n.SanitizedKeys = slices.Clone(s.SanitizedKeys)
	n.LoopTrace = slices.Clone(s.LoopTrace)
	n.DataClasses = slices.Clone(s.DataClasses)
	n.DataFindings = slices.Clone(s.DataFindings)
	n.EgressDomains = slices.Clone(s.EgressDomains)
	n.Downloaded = slices.Clone(s.Downloaded)
	n.Written = slices.Clone(s.Written)
	n.Pending = slices.Clone(s.Pending)
	n.HostAsks = slices.Clone(s.HostAsks)
	n.Released = slices.Clone(s.Released)
	n.Calls = slices.Clone(s.Calls)
	n.Refused = slices.Clone(s.Refused)
	n.PermittedTools = slices.Clone(s.PermittedTools)
	n.Grants = slices.Clone(s.Grants)
	n.AllowedArtifacts = slices.Clone(s.AllowedArtifacts)
	n.DeniedArtifacts = slices.Clone(s.DeniedArtifacts)
	n.Recent = slices.Clone(s.Recent)
	n.NoProgressTrace = slices.Clone(s.NoProgressTrace)
	return n
}

func (r *Reducer) foldHook(n *Snapshot, e *ledger.Envelope, ev *aarts.Event) error {
	if ev == nil {
		var err error
		if ev, err = aarts.ParseEvent(e.Payload()); err != nil {
			return err
		}
	}
	if ev.HookPoint != e.EventType() {
		return fmt.Errorf("payload hook_point %q differs from event_type", ev.HookPoint)
	}
	seq := e.Seq()
	switch ev.HookPoint {
	case "SessionStart":
		if p := ev.ParentSessionID; p != "" {
			n.ParentSessionID = p
		}
		if tools, ok := ev.Field("permitted_tools").([]any); ok {
			var claimed []string
			for _, t := range tools {
				if s, ok := t.(string); ok {
					claimed = addSorted(claimed, s)
				}
			}
			// A sub-agent's own claim only narrows what its parent granted.
			if in := n.Inherited; in != nil && in.PermittedTools != nil {
				claimed = narrow(claimed, in.PermittedTools)
			}
			n.PermittedTools = claimed
		}
	case "PreUserInput":
		if n.OriginalRequest == "" {
			n.OriginalRequest = ev.String("raw_input")
		}
		// What the user asks now is what later calls answer to.
		in := IntentOf(ev.String("raw_input"))
		n.Intent = &in
		// The user speaking again ends a loop: detection restarts afresh.
		n.clearLoop()
	case "PreLLMRequest":
		n.StepsConsumed++
	case "PreSubAgentSpawn":
		n.StepsConsumed++
		if id := ev.String("sub_agent_id"); id != "" {
			// The newest spawns are kept: a long session's old grants
			// were inherited long ago.
			if len(n.Grants) >= maxGrants {
				n.Grants = slices.Delete(n.Grants, 0, len(n.Grants)-maxGrants+1)
			}
			n.Grants = append(n.Grants, Grant{SubAgentID: id, Seq: seq})
		}
	case "PreToolUse":
		n.lastTurn, n.lastTool, n.lastCwd, n.lastKeys = ev.TurnID, ev.NativeTool(), ev.Cwd, InputKeys(ev.NativeTool(), ev.ToolInput)
		n.StepsConsumed++
		n.ToolCallsConsumed++
		if ev.IsSubAgent && ev.ParentSessionID != "" {
			n.ParentSessionID = ev.ParentSessionID
		}
		a := action.Of(ev)
		n.recordCall(seq, ev.NativeTool(), inputFingerprint(ev), a != nil && (len(a.WritePaths) > 0 || len(a.MayWrite) > 0))
		if content, ok := ev.Field("read_content").(string); ok {
			// What a host is about to hand the agent (Cursor's
			// beforeReadFile): classified before the agent sees it.
			n.classify(seq, content)
		}
		n.lastOutputs = nil
		if a != nil {
			n.lastOutputs = outputsOf(a)
			if a.EndDir != "" && (a.Tool == aarts.ToolShell || a.Tool == aarts.ToolPackageInstall) {
				n.ShellDir = a.EndDir
			}
			for _, p := range a.WritePaths {
				if len(n.Written) >= maxWritten {
					n.Written = []string{"*"}
				}
				if !slices.Equal(n.Written, []string{"*"}) {
					n.Written = addSorted(n.Written, p)
				}
			}
		}
	case "PostToolUse":
		// The result closes the call it is the outcome of (a result that
		// answers none is judged as such: BindResult).
		if call, bound, _ := n.BindResult(ev); bound {
			n.Calls = slices.DeleteFunc(n.Calls, func(c CallRef) bool { return c.EventSeq == call.EventSeq })
		}
		result := ev.Field("tool_result")
		text := textOf(result)
		n.OutputBytes += int64(len(text))
		a := *action.Of(ev)
		if len(a.WritePaths) > 0 {
			n.recordWrite(seq, ev)
		}
		kind := TaintLocal
		switch {
		case a.Tool == aarts.ToolWebRequest || a.Tool == aarts.ToolBrowser || len(a.Hosts) > 0:
			kind = TaintWeb
		case a.Tool == aarts.ToolMCPCall:
			kind = TaintMCP
		}
		n.taint(seq, ev.HookPoint, a.Tool, kind, "tool result")
		for _, h := range a.Hosts {
			if a.Tool == aarts.ToolWebRequest || a.Tool == aarts.ToolShell || a.Tool == aarts.ToolBrowser || a.Tool == aarts.ToolMCPCall || a.Tool == aarts.ToolPackageInstall {
				n.EgressDomains = addSorted(n.EgressDomains, h)
			}
		}
		for _, d := range a.Downloads {
			if len(n.Downloaded) < maxPending {
				n.Downloaded = addSorted(n.Downloaded, d)
			}
		}
		found := len(n.DataFindings)
		n.classify(seq, text)
		n.classifyCuts(seq, ev.Field(elide.Member))
		labelled := r.label(n, seq, ev.NativeTool(), a)
		if len(n.DataFindings) == found && !labelled && r.unlabeledSensitive() && readsData[a.Tool] && text != "" {
			n.addFinding(seq, ClassUnclassified, "unlabeled")
		}
		n.recordResult(seq, ev.NativeTool(), text)
	case "PreMemoryRead":
		n.taint(seq, ev.HookPoint, "", TaintMemory, "memory read")
		n.classify(seq, textOf(ev.Field("retrieved_content")))
	case "PostSubAgentResult":
		n.taint(seq, ev.HookPoint, aarts.ToolDelegate, TaintSubAgent, "sub-agent result")
		n.classify(seq, textOf(ev.Field("result")))
	case aarts.HookSanitized:
		n.SanitizedKeys = addSorted(n.SanitizedKeys, ev.SanitizerKey)
	case "PostAskResolution":
		n.foldAskResolution(ev)
	case "SessionEnd":
		reason := ev.String("reason")
		if ev.Field("error") == nil && reason != "error" && reason != "crash" {
			n.IsTainted = false
			n.TaintKinds = nil
			n.TaintSources = nil
		}
	}
	return nil
}

func (n *Snapshot) taint(seq uint64, hook, tool, kind, reason string) {
	n.IsTainted = true
	n.TaintKinds = addSorted(n.TaintKinds, kind)
	n.TaintSources = append(n.TaintSources, TaintSource{Seq: seq, HookPoint: hook, Tool: tool, Kind: kind, Reason: reason})
	if len(n.TaintSources) > maxTaintSources {
		n.TaintSources = n.TaintSources[len(n.TaintSources)-maxTaintSources:]
	}
}

// label adds the manifest's data labels for the tool and paths of a result,
// and SECRET when a secret path was read.
// readsData are the tools whose results are data read from somewhere
// (a file, a database, an MCP server): unlabelled, it is unclassified.
var readsData = map[string]bool{aarts.ToolFileRead: true, aarts.ToolDatabase: true, aarts.ToolMCPCall: true}

// unlabeledSensitive reports whether the manifest treats unlabelled data
// as sensitive (the default, as AARM R2 asks; "public" opts out).
func (r *Reducer) unlabeledSensitive() bool {
	return r.cfg.Manifest != nil && r.cfg.Manifest.DataLabels.Unlabeled != manifest.UnlabeledPublic
}

// label adds the classes the manifest's labels give a tool result and
// reports whether any label matched (a label of a non-sensitive class,
// such as PUBLIC or INTERNAL, classifies data too).
func (r *Reducer) label(n *Snapshot, seq uint64, native string, a action.Analysis) bool {
	m := r.cfg.Manifest
	if m == nil {
		return false
	}
	labelled := false
	for _, g := range sortedKeys(m.DataLabels.Tools) {
		if manifest.MatchGlob(g, native, false) || manifest.MatchGlob(g, a.Tool, false) {
			labelled = true
			for _, c := range m.DataLabels.Tools[g] {
				n.addFinding(seq, c, "label:tool")
			}
		}
	}
	for _, p := range a.Paths {
		for _, g := range sortedKeys(m.DataLabels.Paths) {
			if manifest.MatchGlob(g, p, true) {
				labelled = true
				for _, c := range m.DataLabels.Paths[g] {
					n.addFinding(seq, c, "label:path")
				}
			}
		}
		if m.SecretPath(p) {
			labelled = true
			n.addFinding(seq, ClassSecret, "secret_path")
		}
	}
	return labelled
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (n *Snapshot) addFinding(seq uint64, class, detector string) {
	n.DataClasses = addSorted(n.DataClasses, class)
	f := Finding{Seq: seq, Class: class, Detector: detector}
	if !slices.Contains(n.DataFindings, f) {
		n.DataFindings = append(n.DataFindings, f)
		if len(n.DataFindings) > maxFindings {
			n.DataFindings = n.DataFindings[len(n.DataFindings)-maxFindings:]
		}
	}
}

func (n *Snapshot) classify(seq uint64, text string) {
	for _, d := range Detect(text) {
		n.addFinding(seq, d.Class, d.Detector)
	}
}

// classifyCuts adds what the engine found in the values it cut from a
// result to fit the record (their elided member's found labels): data cut
// from the record still counts (a secret in the tail of a long output).
func (n *Snapshot) classifyCuts(seq uint64, cuts any) {
	list, _ := cuts.([]any)
	for _, c := range list {
		m, _ := c.(map[string]any)
		found, _ := m["found"].([]any)
		for _, f := range found {
			label, _ := f.(string)
			if class, detector, ok := strings.Cut(label, ":"); ok && class != "" && detector != "" {
				n.addFinding(seq, class, detector)
			}
		}
	}
}

func (n *Snapshot) foldVerdict(v *aarts.VerdictRecord) error {
	// A verdict folds as judged whether or not it was enforced (monitor
	// mode): the snapshot is what enforcing would have made it, and a
	// monitored deny never widens what later, enforced calls may do.
	if v.Verdict.Decision == aarts.Deny {
		n.DeniedCount++
	}
	for _, u := range v.Unreported {
		for i := range n.Calls {
			if n.Calls[i].EventSeq == u.EventSeq {
				n.Calls[i].Unreported = true
			}
		}
	}
	if v.ReleasedBy != 0 {
		n.Released = slices.DeleteFunc(n.Released, func(r Release) bool { return r.Seq == v.ReleasedBy })
	}
	if len(v.Inherited) > 0 && n.NeedsInheritance() {
		var in Inheritance
		if err := ledger.DecodeExact(v.Inherited, &in); err != nil {
			return fmt.Errorf("inherited: %w", err)
		}
		n.inherit(in)
	}
	if v.HookPoint == "PreSubAgentSpawn" {
		for i := range n.Grants {
			if g := &n.Grants[i]; g.Seq == v.ForSeq {
				g.Denied = v.Verdict.Decision == aarts.Deny
				if tools, ok := v.Verdict.Directives["permitted_tools"].([]any); ok {
					g.Tools = []string{}
					for _, t := range tools {
						if s, ok := t.(string); ok {
							g.Tools = addSorted(g.Tools, s)
						}
					}
				}
			}
		}
	}
	if !v.IsEnforced() {
		return nil // monitor mode: no one was asked, so nothing waits
	}
	if v.HostAnswer == aarts.HostAnswerNone && v.Verdict.Decision != aarts.Allow {
		// An event the host does not wait on (it went on whatever the
		// answer): nothing waits for an approval.
		return nil
	}
	if v.Verdict.Decision == aarts.Ask || v.AARMDecision == aarts.AARMStepUp || v.AARMDecision == aarts.AARMDefer {
		p := Pending{ForSeq: v.ForSeq, HookPoint: v.HookPoint, AARMDecision: v.AARMDecision,
			ReasonCode: v.ReasonCode, Artifacts: v.Verdict.Artifacts, Action: v.ActionSHA256, TurnID: v.TurnID,
			NoPrompt: v.HostAnswer == aarts.Deny || v.HostAnswer == aarts.HostAnswerDefer, AskedBy: v.AskedBy}
		if v.HookPoint == "PreToolUse" {
			p.Outputs, p.Tool, p.Cwd = n.lastOutputs, n.lastTool, n.lastCwd
		}
		if v.HostAnswer == aarts.Ask {
			n.HostAsks = append(n.HostAsks, p)
			if len(n.HostAsks) > maxPending {
				n.HostAsks = n.HostAsks[len(n.HostAsks)-maxPending:]
			}
			return nil
		}
		n.Pending = append(n.Pending, p)
		if len(n.Pending) > maxPending {
			n.Pending = n.Pending[len(n.Pending)-maxPending:]
		}
	}
	return nil
}

// maxOutputs bounds what is kept of one call's outputs.
const maxOutputs = 32

// outputsOf is what a call would produce that a later call could use: the
// files it writes or downloads, sorted, at most maxOutputs.
func outputsOf(a *action.Analysis) []string {
	var out []string
	for _, p := range slices.Concat(a.WritePaths, a.Downloads) {
		if len(out) < maxOutputs {
			out = addSorted(out, p)
		}
	}
	return out
}

// trackCall notes a PreToolUse the verdict v (recorded as e) lets the host
// run, or leaves to its user, so that the call's result can name it; or,
// when v tells the host not to run it, that it was refused.
func (n *Snapshot) trackCall(v *aarts.VerdictRecord, e *ledger.Envelope) {
	if v.HookPoint != "PreToolUse" {
		return
	}
	c := CallRef{Turn: n.lastTurn, EventSeq: v.ForSeq, VerdictSeq: e.Seq(), Input: n.lastKeys, verdictHash: e.Hash()}
	if in, ok := v.Verdict.Directives["tool_input"].(map[string]any); ok {
		c.Rewritten = InputKeys(n.lastTool, in)
	}
	// The same call refused again is one refusal; once it may run (sent
	// again after its approval) it is refused no more. Calls the host may
	// run are each kept, the same call twice too: a host that names no
	// call (Copilot, Gemini CLI) runs identical calls side by side, each
	// with a result of its own.
	same := func(o CallRef) bool { return o.Turn == c.Turn && maps.Equal(o.Input, c.Input) }
	n.Refused = slices.DeleteFunc(n.Refused, same)
	list := &n.Calls
	if v.IsEnforced() && (v.Verdict.Decision == aarts.Deny || v.HostAnswer == aarts.Deny || v.HostAnswer == aarts.HostAnswerDefer || v.AskOwner == aarts.AskOwnerApprover) {
		// It does not run now: told not to, or waiting for an approver,
		// whose approval lets it run when sent again (a monitored call
		// may run).
		list = &n.Refused
	}
	if len(*list) >= maxCalls {
		*list = slices.Delete(*list, 0, len(*list)-maxCalls+1)
	}
	*list = append(*list, c)
}

func (n *Snapshot) foldResolution(e *ledger.Envelope) error {
	var r aarts.ResolutionRecord
	if err := decodeStrict(e.Payload(), &r); err != nil {
		return err
	}
	if !aarts.IsResolution(r.Resolution) {
		return fmt.Errorf("resolution %q: want one of %s", r.Resolution, strings.Join(aarts.Resolutions, ", "))
	}
	// An approver's resolution closes an approver's ask; the host's
	// (inferred from what it reported) only an ask its host prompted for:
	// a host never turns a deny into an approval.
	open := &n.Pending
	if r.Source == "host" {
		open = &n.HostAsks
	}
	i := slices.IndexFunc(*open, func(p Pending) bool { return p.ForSeq == r.ForSeq })
	var p Pending
	if i >= 0 {
		p = (*open)[i]
		*open = slices.Delete(*open, i, i+1)
	}
	if i < 0 {
		return nil // answers nothing open: changes nothing
	}
	n.resolve(r.Resolution, p.ReasonCode, p.Artifacts) // the scope is the engine's own verdict
	if r.Resolution == "approved" && r.Source != "host" && p.HookPoint == "PreToolUse" && p.Action != "" {
		// An approver's approval of a call the host did not run (it was
		// answered deny, or deferred): the call may now run, once.
		if len(n.Released) >= maxReleased {
			n.Released = slices.Delete(n.Released, 0, len(n.Released)-maxReleased+1)
		}
		n.Released = append(n.Released, Release{Action: p.Action, Tool: p.Tool, Cwd: p.Cwd, Seq: e.Seq(), AtMs: e.TsUnixMs(), ForSeq: p.ForSeq, AskedBy: p.AskedBy})
	}
	return nil
}

// foldAskResolution applies a host's PostAskResolution to the ask it
// answers (MatchAskResolution); one that answers none changes nothing
// (the engine records such an event as Rejected, never as a hook event).
// A host event never widens what is allowed: allow_always and
// allow_similar close the ask as approved. Its scope is the engine's own
// recorded verdict, never what the event claims.
func (n *Snapshot) foldAskResolution(ev *aarts.Event) {
	open, i := n.matchAsk(ev)
	if open == nil {
		return
	}
	p := (*open)[i]
	*open = slices.Delete(*open, i, i+1)
	resolution := ev.String("resolution")
	if resolution == "allow_always" || resolution == "allow_similar" {
		resolution = "approved"
	}
	n.resolve(resolution, p.ReasonCode, p.Artifacts)
}

// ErrNoOpenAsk is the fault of a resolution that answers no ask the engine
// recorded in the session and that is still open.
var ErrNoOpenAsk = errors.New("no open ask of the engine matches this resolution")

// ErrApproversAsk is the fault of a host's resolution of an ask that
// waits for an approver: no host event closes it.
var ErrApproversAsk = errors.New("the ask waits for an approver: only an approver's resolution closes it")

// ErrOtherAsker is the fault of a host's resolution sent by another
// identity than the one whose ask it closes.
var ErrOtherAsker = errors.New("the ask was asked by another identity: only its own host closes it")

// MatchAskResolution checks that a PostAskResolution, sent by the
// identity asker, answers an ask of the host's own prompt that the engine
// recorded in s and that is still open: same hook point and turn, asked
// by asker, and, when the event names it (action_sha256), the same
// action. An ask that waits for an approver is ErrApproversAsk.
func MatchAskResolution(s Snapshot, ev *aarts.Event, asker string) error {
	where := fmt.Sprintf("(original_hook_point %q, turn_id %q)", ev.String("original_hook_point"), ev.TurnID)
	_, i := s.matchAsk(ev)
	switch {
	case i >= 0 && s.HostAsks[i].AskedBy != asker:
		return fmt.Errorf("%w %s", ErrOtherAsker, where)
	case i >= 0:
		return nil
	case slices.ContainsFunc(s.Pending, func(p Pending) bool { return askAnswers(p, ev) }):
		return fmt.Errorf("%w %s", ErrApproversAsk, where)
	}
	return fmt.Errorf("%w %s", ErrNoOpenAsk, where)
}

// matchAsk finds the open ask of the host's own prompt that ev answers:
// the list it is in and its index, or nil. An ask that waits for an
// approver is never a host event's to close.
func (n *Snapshot) matchAsk(ev *aarts.Event) (*[]Pending, int) {
	for i := len(n.HostAsks) - 1; i >= 0; i-- {
		if askAnswers(n.HostAsks[i], ev) {
			return &n.HostAsks, i
		}
	}
	return nil, -1
}

// askAnswers reports whether the PostAskResolution ev names the ask p:
// same hook point and turn, and, when ev names it, the same action.
func askAnswers(p Pending, ev *aarts.Event) bool {
	digest := ev.String("action_sha256")
	return ev.TurnID != "" && p.HookPoint == ev.String("original_hook_point") && p.TurnID == ev.TurnID && (digest == "" || digest == p.Action)
}

// resolve applies a resolution: a denial or a timeout counts as a denied
// action; *_always and *_similar remember the artifacts for the session;
// approving a loop verdict clears the loop.
func (n *Snapshot) resolve(resolution, reasonCode string, artifacts []string) {
	switch resolution {
	case "denied", "timeout":
		n.DeniedCount++ // the action did not happen
	case "allow_always", "allow_similar":
		if !widenable[reasonCode] {
			break // an ask that stands for a deny is approved once, never widened
		}
		for _, a := range artifacts {
			n.AllowedArtifacts = addSorted(n.AllowedArtifacts, a)
		}
	case "deny_always", "deny_similar":
		n.DeniedCount++
		for _, a := range artifacts {
			n.DeniedArtifacts = addSorted(n.DeniedArtifacts, a)
		}
	}
	if reasonCode == "LOOP_DETECTED" && (resolution == "approved" || strings.HasPrefix(resolution, "allow_")) {
		n.clearLoop()
	}
}

// widenable are the reason codes of asks that are asks by nature (a tool
// that needs approval, an ask rule, an undeclared MCP server, a loop, a
// call the host would not have asked about): allow_always of one
// remembers its artifacts for the session. Every other ask stands for a
// deny the sensitivity turned into an ask (a forbidden command, egress,
// secrets, exfiltration, a destructive target, self-protection), and is
// approved once, never widened.
var widenable = map[string]bool{"APPROVAL_REQUIRED": true, "RULE_ASK": true, "MCP_UNDECLARED": true, "LOOP_DETECTED": true, "HOST_WILL_NOT_ASK": true}

// decodeStrict reads one of agentledger's own records with exact key
// matching (ledger.DecodeExact).
func decodeStrict(p []byte, v any) error { return ledger.DecodeExact(p, v) }

// addSorted inserts s into a sorted set.
func addSorted(set []string, s string) []string {
	i, found := slices.BinarySearch(set, s)
	if found {
		return set
	}
	return slices.Insert(set, i, s)
}

// textOf renders a result or content value as text for inspection: strings
// as they are, anything else as its JSON.
func textOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
