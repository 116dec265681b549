package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentledger/agentledger/adapter"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/elide"
	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/reducer"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/policy"
	"github.com/agentledger/agentledger/receipt"
)

// Request is one hook input as a transport received it. Every transport
// (HTTP, stdio, the host adapters, in-process callers) hands its input to
// Engine.Answer, which applies the one failure policy of the engine.
type Request struct {
	// Tenant the input belongs to; "" is the default tenant.
	Tenant string
	// Host names the adapter whose native input Body is (see Hosts); ""
	// means Body is an AARTS hook event.
	Host string
	// Body is the input, or its first bytes when Size says it was longer.
	Body []byte
	// Size is the length of the whole input when the transport read only
	// a prefix of it into Body; 0 means len(Body).
	Size int64
	// SHA256 is the hex SHA-256 of the whole input when Body is a prefix
	// (the transport hashed what it discarded); "" means the engine hashes
	// Body.
	SHA256 string
	// Truncated says the input went on past what the transport would read
	// at all: Size and SHA256 cover its first Size bytes.
	Truncated bool
	// Auth is who the transport authenticated the sender as: the identity
	// the receipts of its actions attest (AARM R6).
	Auth receipt.Authenticated
	// Observe says the sender runs on the engine's machine (the local
	// socket): the engine looks at the file system paths a call names and
	// records what it saw (see observe).
	Observe bool
	// AutoApprove is the adapter's documented opt-in to answer every allow
	// with the host's own allow, which skips the host's permission prompt.
	AutoApprove bool
	// Unattended is the hook's word that no one attends the host's run
	// (hookwire.Unattended).
	Unattended bool
	// HostAsks is the hook's word that the host prompts its user for an
	// ask (Copilot's interactive CLI); see Host.Asks.
	HostAsks bool
	// Prompts says the authenticated sender of AARTS events is a host its
	// deployment says prompts its user for an ask (a host token with
	// "prompts": true): its asks are closed by its own PostAskResolution,
	// not by an approver. Without it, an AARTS sender's ask waits for an
	// approver — the sender may be the agent itself.
	Prompts bool
	// Monitor is the hook's word that its host runs agentledger in monitor
	// mode (engine hook --monitor): the call is judged and recorded, not
	// enforced (see WithMonitor).
	Monitor bool
	// Gateway says the event comes from agentledger's MCP gateway in this
	// process (package mcpproxy): only it may name a session mcp-… and set
	// the members its tool pinning rests on (GatewayMembers).
	Gateway bool
	// Config, when set, is the configuration the request is decided under
	// instead of the engine's own (a local engine's hook requests).
	Config *Config
}

// Config is a configuration a request can be decided under: a local engine
// serves every hook's tenant, policy and manifest at once, each built once
// (ServerConfig.Configure). The engine's store, signing keys and limits
// are the same for all.
type Config struct {
	// Decider holds the policy and manifest, and the sealer the manifest
	// asks for.
	Decider *decide.Decider
	// FailOpen is the failure policy (see WithFailOpen).
	FailOpen bool
}

// Reason codes of answers that are not a policy's verdict.
const (
	// ReasonInputRejected: the engine could not accept the input (not
	// I-JSON, over a size or depth limit, not a valid event). The
	// rejection is recorded; a blocking hook point is answered deny.
	ReasonInputRejected = "INPUT_REJECTED"
	// ReasonEngineFailure: the engine could not decide and record a valid
	// event. The failure policy answers (deny, or allow under fail-open)
	// and the failure is recorded, durably before the answer is returned.
	ReasonEngineFailure = "ENGINE_FAILURE"
)

// RejectedSession is the session, one per tenant, that holds rejections of
// input in which no session id could be read.
const RejectedSession = hookwire.RejectedSession

// Rejection is the payload of a Rejected envelope.
type Rejection struct {
	// ID makes recording the rejection idempotent (it is spooled first).
	ID string `json:"id"`
	// Defect says what was wrong with the input, and where.
	Defect string `json:"defect"`
	// Host is the adapter the input came through ("" for AARTS input).
	Host string `json:"host,omitempty"`
	// HookPoint is the hook point (or the host's event name) as far as it
	// could be read from the input.
	HookPoint string `json:"hook_point,omitempty"`
	// SessionID is the session id as far as it could be read, when the
	// rejection is recorded in the tenant's rejected session instead.
	SessionID string `json:"session_id,omitempty"`
	SHA256    string `json:"sha256"`
	Length    int64  `json:"length"`
	// Truncated: the input went on past what the transport reads at all;
	// SHA256 and Length cover its first Length bytes.
	Truncated bool `json:"truncated,omitempty"`
	// Excerpt is the start of the input, as valid UTF-8, with recognizable
	// secrets redacted.
	Excerpt  string `json:"excerpt"`
	Answered string `json:"answered"`
}

// excerptBytes bounds a rejection's excerpt.
const excerptBytes = 256

// Answer decides one hook input and says what to answer the host. It never
// fails: input the engine cannot accept is answered deny at a blocking hook
// point (allow at a notification) and recorded as a Rejected envelope; an
// event the engine cannot decide and record is answered by the failure
// policy and recorded as an EngineFailure, durably before Answer returns.
// For a host adapter's input the answer carries the host's native output.
func (e *Engine) Answer(ctx context.Context, req Request) HookResponse {
	start := time.Now()
	if req.Tenant == "" {
		req.Tenant = ledger.DefaultTenant
	}
	var host *adapter.Host
	if req.Host != "" {
		if host = adapter.Named(req.Host); host == nil {
			return e.reject(ctx, req, nil, fmt.Errorf("unknown host %q", req.Host))
		}
	}
	if req.Size > int64(len(req.Body)) {
		return e.reject(ctx, req, host, fmt.Errorf("input is %d bytes, over the %d agentledger reads of one input", req.Size, MaxInput))
	}
	// The input must itself be I-JSON: a defect the host's JSON decoder
	// would paper over (a duplicate key, a lone surrogate) is a defect of
	// the input, not something to map around. Over the record's limit, its
	// longest strings are cut to an excerpt (fitInput) and the event says
	// what was cut.
	body, cuts, err := e.fitInput(req.Body, host != nil)
	if err != nil {
		return e.reject(ctx, req, host, err)
	}
	payload := body
	var native string
	if host == nil {
		if err := adapterOnly(body, req.Gateway); err != nil {
			return e.reject(ctx, req, host, err)
		}
		if req.Prompts {
			payload = withMember(payload, "host_prompts", true)
		}
	}
	if host != nil {
		m, err := host.Map(body, e.now(), req.AutoApprove)
		if err != nil {
			return e.reject(ctx, req, host, err)
		}
		native = m.Native
		if m.Event == nil {
			return HookResponse{Verdict: aarts.Verdict{Decision: aarts.Allow}, ReasonCode: "NOT_JUDGED", HostOutput: host.Render(native, req.Body, adapter.Answer{Decision: aarts.Allow})}
		}
		payload = hostMembers(host, native, body, m.Event, req.Unattended, req.HostAsks)
		if req.Observe {
			payload = observe(ctx, e.withSpawner(host, body, payload))
		}
	}
	payload = withCuts(payload, cuts)
	if !req.Gateway {
		payload = e.withGatewayPin(ctx, req.Tenant, payload)
	}
	// The event is validated and canonicalized once, when it is sealed:
	// what is not I-JSON, over a limit or not a valid event comes back as an
	// input error and is rejected below.
	ev, err := aarts.ParseEvent(payload)
	if err == nil && !req.Gateway && strings.HasPrefix(ev.SessionID, GatewaySessionPrefix) {
		err = &aarts.ValidationError{Field: "session_id", Msg: "sessions named " + GatewaySessionPrefix + "… are agentledger's MCP gateway's"}
	}
	if err == nil && len(cuts) > 0 {
		err = cutCommand(ev, len(req.Body))
	}
	if err != nil {
		if len(cuts) > 0 {
			err = fmt.Errorf("%w (input of %d bytes, over the limit of %d, its longest values cut)", err, len(req.Body), e.decider.Limits.Bytes())
		}
		return e.reject(ctx, req, host, err)
	}
	d, failOpen := e.decider, e.failOpen
	if req.Config != nil {
		d, failOpen = req.Config.Decider, req.Config.FailOpen
	}
	monitor := e.monitor || req.Monitor
	step, err := e.decideEvent(ctx, req.Tenant, req.Auth, ev, payload, d, monitor)
	e.report(req.Tenant, payload, step, start, time.Now(), err)
	var r HookResponse
	switch {
	case err == nil:
		r = ResponseOf(step)
	case decide.IsInputError(err):
		return e.reject(ctx, req, host, err)
	default:
		r = e.fail(req.Tenant, ev, payload, err, failOpen, monitor)
	}
	if host != nil {
		a := answerOf(r)
		if r.PendingID != "" && (r.HostAnswer == aarts.Deny || r.HostAnswer == aarts.HostAnswerDefer) {
			// No one in the host to ask: an approver may release the call,
			// which the agent may then send again.
			a.Reasons = append(slices.Clone(a.Reasons), "held for an approver as pending "+r.PendingID+"; once approved, the same call sent again runs once")
		}
		if r.AARMDecision == aarts.AARMDefer && r.HostAnswer == aarts.Ask {
			// The host's prompt is its one form of both: say a deferral
			// was meant.
			a.Reasons = append([]string{"deferred: this call waits for more context or a person's review"}, a.Reasons...)
		}
		r.HostOutput = host.Render(native, req.Body, a)
	}
	e.noteAnswer(req.Tenant, req.Host, ev, r)
	return r
}

// hostMembers adds to event, which host mapped from its input body (its
// event named native), what the engine knows of the host's run: a notice,
// which the host goes on from whatever the answer (host_waits false); an
// event where the host carries out no allow without new input
// (host_allows false);
// where no one attends it and the host can defer the call for its caller to resume,
// an ask is deferred (host_defers); where the host has no one to prompt,
// an ask is answered, and recorded, as deny (host_asks false).
func hostMembers(host *adapter.Host, native string, body, event []byte, unattended, hostAsks bool) []byte {
	switch {
	case host.Notice != nil && host.Notice(native):
		return withMember(event, "host_waits", false)
	case host.Allows != nil && !host.Allows(native):
		// Neither an allow nor an ask is the host's to carry out here.
		return withMember(withMember(event, "host_allows", false), "host_asks", false)
	case unattended && host.Defers != nil && host.Defers(native, body):
		return withMember(event, "host_defers", true)
	case unattended || host.Asks != nil && !host.Asks(native, hostAsks):
		return withMember(event, "host_asks", false)
	}
	return event
}

// adapterMembers are event members only a host adapter (or the engine,
// from what authenticated the sender) sets: which host adapter mapped the
// event, and what the host did or can do (it refused the call, it defers
// or asks, it prompts its user, it skips its own prompt, it reports a
// result with no call before it). A sender of AARTS events — which may be
// the agent itself — cannot claim them: an event that claimed a host's
// prompt could close its own ask.
var adapterMembers = []string{"adapter", "host_refused", "host_defers", "host_asks", "host_prompts", "host_waits", "host_allows", "auto_approve", "result_only", "spawn_session_id"}

// GatewayMembers are the members of the MCP gateway's events that its tool
// pinning rests on (what a server declared and how its tools stand) and
// that an approver of a change reads (the definitions and the scan's
// flags); no other sender may set them, and GatewaySessionPrefix names its sessions.
var GatewayMembers = []string{"tool_pins", "tool_changes", "tool_pin", "read_only_tools", "tool_definitions", "pinned_definitions", "tool_flags", "tool_flag_words"}

// GatewaySessionPrefix begins the name of every session of the MCP
// gateway.
const GatewaySessionPrefix = "mcp-"

// adapterOnly refuses an AARTS event that claims an adapter's member, or,
// from another sender than the gateway, a gateway's member.
func adapterOnly(body []byte, gateway bool) error {
	claims := func(m string) bool {
		if !bytes.Contains(body, []byte(m)) {
			return false
		}
		var members map[string]json.RawMessage
		return json.Unmarshal(body, &members) == nil && members[m] != nil
	}
	for _, m := range adapterMembers {
		if claims(m) {
			return &aarts.ValidationError{Field: m, Msg: "set only by agentledger's host adapters, not by a sender of AARTS events"}
		}
	}
	for _, m := range GatewayMembers {
		if !gateway && claims(m) {
			return &aarts.ValidationError{Field: m, Msg: "set only by agentledger's MCP gateway, not by a sender of AARTS events"}
		}
	}
	return nil
}

// MaxInput is the most of one hook input agentledger reads: an input up to
// it is recorded (its longest values cut to fit the record's limit, see
// fitInput), one over it is rejected with its length and digest.
const MaxInput = hookwire.MaxInput

// fitInput fits an input under the record's size limit: over half of it,
// the longest string values are cut to their first elide.DefaultKeep bytes
// (the event then grows by the host mapping and the engine's own members).
// A host's input, and any input that is cut, is first checked to be I-JSON
// within the depth limit (an AARTS event that is not cut is checked when it
// is sealed). It returns the input to map and what was cut.
func (e *Engine) fitInput(body []byte, check bool) ([]byte, []elide.Cut, error) {
	lim := e.decider.Limits
	if check || len(body) > lim.Bytes()/2 {
		whole := lim
		whole.MaxBytes = max(lim.Bytes(), len(body))
		if _, err := ledger.Canonicalize(body, whole); err != nil {
			return nil, nil, err
		}
	}
	out, cuts, err := elide.Fit(body, lim.Bytes()/2, elide.DefaultKeep, func(v string) []string {
		var labels []string
		for _, d := range reducer.DetectWhole(v) {
			labels = append(labels, d.Label())
		}
		return labels
	})
	if err != nil {
		return nil, nil, fmt.Errorf("input is %d bytes, over the limit of %d: %w", len(body), lim.Bytes(), err)
	}
	return out, cuts, nil
}

// cutCommand refuses a call whose input was cut when what it runs or
// sends is in its input (a command line, code, an install, an MCP call's
// arguments): what would run cannot be read, so it is oversized input,
// denied. Content written to a file, a
// result, a prompt can be cut and judged on what is read.
func cutCommand(ev *aarts.Event, size int) error {
	if ev.HookPoint != "PreToolUse" {
		return nil
	}
	switch ev.ToolName {
	case aarts.ToolShell, aarts.ToolCodeExec, aarts.ToolPackageInstall:
		return fmt.Errorf("the %s input is %d bytes: what it would run cannot be read whole", ev.ToolName, size)
	case aarts.ToolMCPCall, aarts.ToolMCPResource:
		// An MCP call's arguments are what it sends; any of them may name
		// what it reaches (a path, a URL).
		return fmt.Errorf("the %s input is %d bytes: what it would send cannot be read whole", ev.ToolName, size)
	}
	return nil
}

// withCuts records in the event what fitInput cut of its input.
func withCuts(event []byte, cuts []elide.Cut) []byte {
	if len(cuts) == 0 {
		return event
	}
	return withMember(event, elide.Member, cuts)
}

// withMember sets an engine member of an event (an agentledger extension).
func withMember(event []byte, key string, value any) []byte {
	var ev map[string]any
	d := json.NewDecoder(bytes.NewReader(event))
	d.UseNumber()
	if d.Decode(&ev) != nil {
		return event // not an object: validation rejects it
	}
	ev[key] = value
	out, err := json.Marshal(ev)
	if err != nil {
		return event
	}
	return out
}

// sessionIDValid checks that an envelope can carry the session id.
func sessionIDValid(tenant, session string) error { return ledger.ValidKey(tenant, session) }

// fail applies the failure policy to an event that could not be decided
// and recorded (failureAnswer; in monitor mode no decision), and records
// the failure durably before the answer is returned.
func (e *Engine) fail(tenant string, ev *aarts.Event, payload []byte, cause error, failOpen, monitor bool) HookResponse {
	r := failureAnswer(failOpen, "the engine could not decide and record this event: "+cause.Error())
	switch {
	case monitor:
		r = MonitorFailureResponse(cause)
	case !blocking(ev.HookPoint):
		r.Decision, r.AARMDecision, r.HostAnswer = aarts.Allow, aarts.AARMAllow, "" // a notification: the host does not wait
	case r.Decision == aarts.Ask:
		// The ask reaches the host in its own form, as a policy's would.
		r.HostAnswer = decide.HostAnswer(ev, &policy.Decision{Decision: aarts.Ask, AARMDecision: aarts.AARMStepUp})
	}
	answer := r.Decision
	if r.HostAnswer != "" {
		answer = r.HostAnswer
	}
	e.noteFailure(ledger.SessionKey{Tenant: tenant, Session: ev.SessionID}, payload, answer, cause)
	return r
}

// failureAnswer is the failure policy's answer, the same on every
// transport and at every host: deny; or, under fail-open, an ask (STEP_UP)
// — the AARTS API answers ask, and each host's hook gives the host's own
// form of an ask (its prompt where it prompts its user; where no one can
// be prompted, a deny). Never an allow: an engine that fails (or is made
// to fail) never lets through what it did not judge.
func failureAnswer(failOpen bool, reason string) HookResponse {
	r := HookResponse{
		Verdict: aarts.Verdict{Decision: aarts.Deny, Category: "engine_failure", Severity: "critical", Source: "failure_policy",
			Reasons: []string{detect.RedactJSONText(reason)}},
		AARMDecision: aarts.AARMDeny, ReasonCode: ReasonEngineFailure,
	}
	if failOpen {
		r.Decision, r.AARMDecision = aarts.Ask, aarts.AARMStepUp
	}
	return r
}

// FailureResponse is the answer of the failure policy when no engine
// could be reached at all (an adapter whose engine is down): deny, or an
// ask when failOpen (failureAnswer) — answered deny where no one attends
// the host's run (unattended: the hook's word), as the engine answers it.
func FailureResponse(failOpen, unattended bool, cause error) HookResponse {
	r := failureAnswer(failOpen, "the security engine could not be reached: "+cause.Error())
	if r.Decision == aarts.Ask && unattended {
		r.HostAnswer = aarts.Deny
	}
	return r
}

// MonitorFailureResponse is the answer to a call no engine could decide in
// monitor mode, which never decides: allow with host answer "none", so
// the host decides as it would alone (the failure is recorded).
func MonitorFailureResponse(cause error) HookResponse {
	r := failureAnswer(false, "the engine could not decide this event (monitor mode: the host decides): "+cause.Error())
	r.Decision, r.AARMDecision, r.HostAnswer = aarts.Allow, aarts.AARMAllow, aarts.HostAnswerNone
	return r
}

// blocking reports whether the host waits for the verdict of a hook point
// (AARTS §6.3: Required and Recommended) rather than only notifying.
// Unknown hook points count as blocking: bad input is never waved through.
func blocking(hookPoint string) bool {
	return hookPoint != "SessionEnd" && hookPoint != "PostAskResolution" && hookPoint != aarts.HookHostLifecycle
}

// reject records input the engine cannot accept and answers it as
// rejected: deny, with the seq of its Rejected record (once recorded). A
// host adapter's notification event, which the host does not wait on, is
// answered with the host's no-op (the record is what matters).
// --fail-open never changes this answer.
func (e *Engine) reject(ctx context.Context, req Request, host *adapter.Host, defect error) HookResponse {
	probe := hookwire.Probe(req.Body)
	rej := newRejection(req.Body, req.SHA256, req.Size, req.Truncated, defect.Error())
	rej.HookPoint = probe.HookPoint
	isBlocking := blocking(probe.HookPoint)
	if host != nil {
		rej.Host = host.Name
		rej.HookPoint = probe.HostEvent
		isBlocking = host.Blocking(probe.HostEvent)
	}
	rej.Answered = aarts.Allow
	switch {
	case e.monitor || req.Monitor:
		rej.Answered = aarts.HostAnswerNone // monitor mode: the host decides alone
	case isBlocking || host == nil:
		// An AARTS sender is told its event was rejected whatever the
		// hook point: an answer of allow would read as accepted.
		rej.Answered = aarts.Deny
	}
	key := ledger.SessionKey{Tenant: req.Tenant, Session: probe.SessionID}
	if probe.SessionID == "" || sessionIDValid(req.Tenant, probe.SessionID) != nil {
		rej.SessionID = RejectedSessionNote(probe.SessionID)
		key.Session = RejectedSession
	}
	seq, recorded := e.recordRejection(ctx, key, &rej)
	r := HookResponse{
		Verdict: aarts.Verdict{Decision: rej.Answered, Category: "input_validation", Severity: "critical", Source: "input_validation",
			Reasons: []string{"agentledger rejected this input: " + rej.Defect}},
		AARMDecision: aarmOf(rej.Answered), ReasonCode: ReasonInputRejected,
	}
	if recorded {
		r.Seq, r.Rejected = seq, true
	}
	if rej.Answered == aarts.HostAnswerNone {
		r.Decision, r.AARMDecision, r.HostAnswer = aarts.Allow, aarts.AARMAllow, aarts.HostAnswerNone
	}
	if host != nil {
		r.HostOutput = host.Render(probe.HostEvent, req.Body, answerOf(r))
	}
	e.noteAnswer(req.Tenant, req.Host, &aarts.Event{SessionID: key.Session, HookPoint: rej.HookPoint}, r)
	return r
}

// newRejection describes input that could not be accepted: its digest
// (sum, or computed from body), length (size, or body's), excerpt, and the
// defect.
func newRejection(body []byte, sum string, size int64, truncated bool, defect string) Rejection {
	// A defect may quote the value it found wrong: it is redacted as the
	// excerpt is, since the record keeps it for good.
	rej := Rejection{Defect: detect.RedactJSONText(defect), SHA256: sum, Length: max(size, int64(len(body))), Excerpt: excerpt(body), Truncated: truncated}
	if rej.SHA256 == "" {
		h := sha256.Sum256(body)
		rej.SHA256 = hex.EncodeToString(h[:])
	}
	return rej
}

// RecordRejected records a message a transport refused before it became
// an event (a malformed JSON-RPC message an MCP client sent the gateway,
// say) as a Rejected envelope of session k: via names the transport
// (the Rejection's host), where what the message was for as far as it
// could be read (a method), body the message as received (its first bytes
// when truncated: it went on past what the transport reads), defect what
// was wrong. The sender was refused (answered deny).
func (e *Engine) RecordRejected(ctx context.Context, k ledger.SessionKey, via, where string, body []byte, truncated bool, defect string) {
	rej := newRejection(body, "", 0, truncated, defect)
	rej.Host, rej.HookPoint, rej.Answered = via, where, aarts.Deny
	if sessionIDValid(k.Tenant, k.Session) != nil {
		rej.SessionID = RejectedSessionNote(k.Session)
		k.Session = RejectedSession
	}
	e.recordRejection(ctx, k, &rej)
	e.noteAnswer(k.Tenant, via, &aarts.Event{SessionID: k.Session, HookPoint: where}, HookResponse{Verdict: aarts.Verdict{Decision: aarts.Deny}, ReasonCode: ReasonInputRejected})
}

// RejectedSessionNote is how a session id that could not be used is kept
// in a rejection: cut to 128 bytes of valid UTF-8.
func RejectedSessionNote(id string) string {
	id = strings.ToValidUTF8(id, "\uFFFD")
	if len(id) > 128 {
		id = strings.ToValidUTF8(id[:128], "")
	}
	return id
}

// ProbeHostEvent is the host event a host's input names
// (hook_event_name), as far as it can be read.
func ProbeHostEvent(input []byte) string { return hookwire.Probe(input).HostEvent }

// excerpt is the start of b as valid UTF-8 with recognizable secrets
// redacted.
func excerpt(b []byte) string {
	// Secrets are taken out of the decoded text before it is cut: a cut
	// first would leave part of a secret no pattern recognizes, and a JSON
	// escape (\/, \u0040) would carry one past the patterns.
	window := b[:min(len(b), excerptWindow)]
	s := detect.RedactJSONText(strings.ToValidUTF8(string(window), "\uFFFD"))
	if len(s) > excerptBytes {
		cut := excerptBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// excerptWindow is how much of a rejected input is read for its excerpt:
// enough that redaction, which shortens what it replaces, still leaves
// the excerpt's bytes whole.
const excerptWindow = 64 << 10

// recordRejection records a rejection in its session: spooled durably
// first, then appended at once (a rejection is rare, and its record is the
// point), and says at which seq. If the store cannot take it now, the
// spool keeps it until the session's next event or the engine's next
// start (recorded false).
func (e *Engine) recordRejection(ctx context.Context, k ledger.SessionKey, rej *Rejection) (seq uint64, recorded bool) {
	rej.ID = newPendingID()
	raw, err := json.Marshal(rej)
	if err != nil {
		return 0, false
	}
	e.queue(k, spooled{ID: rej.ID, Tenant: k.Tenant, Session: k.Session, EventType: ledger.EventRejected, AtMs: e.now().UnixMilli(), Payload: raw})
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	seq, recorded, err = e.flushFinding(ctx, k, rej.ID)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		e.warn(fmt.Errorf("record rejection in %s (kept in the spool): %w", k, err))
	}
	return seq, recorded
}

func aarmOf(decision string) string {
	if decision == aarts.Allow {
		return aarts.AARMAllow
	}
	return aarts.AARMDeny
}

// HostOutput is the line a hook of host prints for r: the host output the
// engine rendered, or, when r has none (no engine could be reached), r
// rendered for the host event named in input (as far as it can be read).
func HostOutput(host string, input []byte, r HookResponse) []byte {
	out := r.HostOutput
	if h := adapter.Named(host); len(out) == 0 && h != nil {
		out = h.Render(ProbeHostEvent(input), input, answerOf(r))
	}
	if len(out) == 0 {
		out = []byte("{}")
	}
	return append(bytes.Clone(out), '\n')
}

// answerOf is r as a host renderer reads it.
func answerOf(r HookResponse) adapter.Answer {
	if r.Monitored != nil {
		// Monitor mode: no permission decision, no rewrite, nothing
		// withheld — the host decides as it would alone.
		return adapter.Answer{Decision: aarts.Allow, HostAnswer: aarts.HostAnswerNone, ReasonCode: r.ReasonCode}
	}
	return adapter.Answer{Decision: r.Decision, HostAnswer: r.HostAnswer, Reasons: r.Reasons, ReasonCode: r.ReasonCode,
		Rewrite: decide.RewrittenInput(r.Directives), Withheld: r.Withheld}
}
