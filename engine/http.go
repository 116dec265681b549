package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/agentledger/agentledger/adapter"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/receipt"
)

// ID and Version identify this engine in the AARTS version check.
const (
	ID      = "agentledger"
	Version = "0.1.0"
)

// ServerConfig configures the HTTP API.
type ServerConfig struct {
	Engine *Engine
	Store  *store.Store
	Tokens *Tokens
	// Insecure lets requests without a token act as Tenant. For local
	// experiments, and for a Unix socket whose file permissions are the
	// authentication.
	Insecure bool
	// Tenant of requests without a token under Insecure. Default
	// "default".
	Tenant string
	// LocalIdentity is the identity of requests without a token under
	// Insecure (LocalIdentity() for the engine's Unix socket).
	LocalIdentity receipt.Authenticated
	// LocalRole is the role of requests without a token under Insecure:
	// "" may do everything (--insecure-dev); RoleHost for the engine's
	// Unix socket, which the agent's own processes can reach, so that an
	// agent can never approve its own ask through it.
	LocalRole string
	// Observe says the callers run on this machine (the local socket):
	// the engine records what it sees of the paths their calls name.
	Observe bool
	// Binary, for the local engine, is the identity of its own program
	// (hookwire.BinaryIdentity): a hook that would start another one is
	// answered 409 and Stale is called, which stops the engine.
	Binary string
	Stale  func()
	// Configure, for the local engine, builds (or finds cached) the
	// configuration a hook's request names (hookwire.HeaderConfig): its
	// tenant, policy and manifest. Requests without one are decided by
	// Engine's own.
	Configure func(ctx context.Context, c hookwire.Config) (*Config, error)
	// Configured, with Configure, counts the configurations built.
	Configured func() int
	// Timeout bounds one decision, recording included. Default 5s.
	Timeout time.Duration
	// MaxBody bounds a request body. Default 1 MiB plus 4 KiB.
	MaxBody int64
}

// Handler returns the engine's HTTP API.
func Handler(cfg ServerConfig) http.Handler {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = ledger.DefaultMaxBytes + 4096
	}
	s := &server{cfg: cfg, metrics: newMetrics(), started: time.Now()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/version", s.version)
	mux.HandleFunc("POST /v1/hooks", s.auth(s.hooks, RoleHost))
	mux.HandleFunc("POST /v1/hooks/{host}", s.auth(s.hooks, RoleHost))
	mux.HandleFunc("POST /v1/hooks/{host}/native", s.auth(s.nativeHooks, RoleHost))
	mux.HandleFunc("POST /v1/resolutions", s.auth(s.resolutions, RoleApprover))
	mux.HandleFunc("GET /v1/pending", s.auth(s.pendingList, RoleApprover, RoleAuditor))
	mux.HandleFunc("GET /v1/pending/{id}", s.auth(s.pendingOne, RoleApprover, RoleAuditor, RoleHost))
	mux.HandleFunc("GET /v1/sessions/{id}/snapshot", s.auth(s.snapshot, RoleHost, RoleAuditor, RoleApprover))
	mux.HandleFunc("GET /v1/sessions/{id}/verify", s.auth(s.verify, RoleHost, RoleAuditor, RoleApprover))
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /v1/status", s.auth(s.status, RoleHost, RoleAuditor, RoleApprover))
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		s.metrics.serve(w, r)
		st := s.cfg.Engine.Sessions()
		fmt.Fprintln(w, "# HELP agentledger_sessions_live Sessions held in memory (bounded by --max-sessions).")
		fmt.Fprintln(w, "# TYPE agentledger_sessions_live gauge")
		fmt.Fprintf(w, "agentledger_sessions_live %d\n", st.Live)
		fmt.Fprintln(w, "# HELP agentledger_sessions_evicted_total Idle sessions let go of (rebuilt from the ledger when next used).")
		fmt.Fprintln(w, "# TYPE agentledger_sessions_evicted_total counter")
		fmt.Fprintf(w, "agentledger_sessions_evicted_total %d\n", st.Evicted)
		if f := s.cfg.Engine.Fleet(); f != nil {
			f.WriteMetrics(w)
		}
	})
	return mux
}

// NewHTTPServer returns an http.Server for h with timeouts that keep slow
// or stalled clients from holding connections.
func NewHTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      20 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

type server struct {
	cfg     ServerConfig
	metrics *metrics
	started time.Time
}

type apiError struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, apiError{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func (s *server) body(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", s.cfg.MaxBody))
		} else {
			writeError(w, http.StatusBadRequest, "reading body: "+err.Error())
		}
		return nil, false
	}
	return b, true
}

func (s *server) version(w http.ResponseWriter, r *http.Request) {
	b, ok := s.body(w, r)
	if !ok {
		return
	}
	var req struct {
		AARTSVersion string `json:"aarts_version"`
	}
	if err := json.Unmarshal(b, &req); err != nil || req.AARTSVersion == "" {
		writeError(w, http.StatusBadRequest, `want {"aarts_version": "0.1"}`)
		return
	}
	writeJSON(w, http.StatusOK, versionAnswer(req.AARTSVersion))
}

// HookResponse is the answer to a hook event: the AARTS verdict, with the
// AARM decision and what the engine recorded.
type HookResponse struct {
	aarts.Verdict
	AARMDecision string         `json:"aarm_decision"`
	ReasonCode   string         `json:"reason_code"`
	Constraints  map[string]any `json:"constraints,omitempty"`
	// Seq is the seq of the recorded event; of its Rejected record when
	// the event was rejected (Rejected true).
	Seq         uint64 `json:"seq"`
	Rejected    bool   `json:"rejected,omitempty"`
	EventHash   string `json:"event_hash"`
	VerdictHash string `json:"verdict_hash"`
	// PendingID resolves an ask through POST /v1/resolutions; unresolved,
	// it times out to a recorded deny.
	PendingID string `json:"pending_id,omitempty"`
	// Engine, in a fleet, is the member that decided and recorded the
	// call (the owner of its session's partition).
	Engine string `json:"engine,omitempty"`
	// HostAnswer is what a host with its own permission flow is answered
	// (see aarts.VerdictRecord.HostAnswer).
	HostAnswer string `json:"host_answer,omitempty"`
	// AskOwner, for an ask, says who closes it: the host's own prompt or
	// an approver (aarts.VerdictRecord.AskOwner).
	AskOwner string `json:"ask_owner,omitempty"`
	// Unbound, for a tool result that answers no call the host was let
	// run, says how (aarts.VerdictRecord.Unbound): the answer is
	// RESULT_WITHOUT_ALLOW.
	Unbound string `json:"unbound,omitempty"`
	// Withheld, for a denied tool result (PostToolUse), is what the model
	// may see instead: the result's shape, none of what was denied (see
	// withheld).
	Withheld json.RawMessage `json:"withheld,omitempty"`
	// HostOutput, for input that came through a host adapter, is the
	// host's native answer.
	HostOutput json.RawMessage `json:"host_output,omitempty"`
	// Monitored, in monitor mode, is the verdict as judged and recorded
	// (enforced false); the answer itself is allow, with host answer
	// "none": the caller decides as it would without agentledger.
	Monitored *Monitored `json:"monitored,omitempty"`
}

// Monitored is a verdict judged and recorded in monitor mode, not
// enforced.
type Monitored struct {
	Decision      string   `json:"decision"`
	AARMDecision  string   `json:"aarm_decision"`
	ReasonCode    string   `json:"reason_code"`
	MatchedRuleID string   `json:"matched_rule_id,omitempty"`
	Reasons       []string `json:"reasons,omitempty"`
}

// ReasonMonitored is the reason code of an answer in monitor mode.
const ReasonMonitored = "MONITORED"

// ResponseOf returns the answer for a recorded step.
func ResponseOf(st *decide.Step) HookResponse {
	r := HookResponse{Verdict: st.Record.Verdict, AARMDecision: st.Record.AARMDecision, ReasonCode: st.Record.ReasonCode,
		Constraints: st.Record.Constraints, Seq: st.Envelope.Seq(), EventHash: st.Envelope.Hash(), VerdictHash: st.Verdict.Hash(),
		PendingID: st.PendingID, Engine: st.Engine, HostAnswer: st.Record.HostAnswer, Withheld: withheld(st), Unbound: st.Record.Unbound, AskOwner: st.Record.AskOwner}
	if !st.Record.IsEnforced() {
		v := st.Record.Verdict
		r.Monitored = &Monitored{Decision: v.Decision, AARMDecision: st.Record.AARMDecision, ReasonCode: st.Record.ReasonCode,
			MatchedRuleID: v.MatchedRuleID, Reasons: v.Reasons}
		r.Verdict = aarts.Verdict{Decision: aarts.Allow, Category: v.Category, Severity: v.Severity, Source: v.Source,
			Reasons: []string{"monitor mode: agentledger records this call and does not decide it (it would have been " + v.Decision + ")"}}
		r.AARMDecision, r.ReasonCode, r.Constraints, r.Withheld = aarts.AARMAllow, ReasonMonitored, nil, nil
	}
	return r
}

// hookBodyCap bounds how much of an oversized hook body is read (and
// hashed) before the connection is given up on; the rejection then records
// the length and hash of what was read, marked truncated.
const hookBodyCap = MaxInput + 1<<20

// hooks answers an AARTS hook event (POST /v1/hooks) or a host's native
// hook input (POST /v1/hooks/{host}). Every input gets an answer: the
// engine's one failure policy decides what to answer input it cannot take.
func (s *server) hooks(w http.ResponseWriter, r *http.Request) {
	if resp, ok := s.answer(w, r); ok {
		writeJSON(w, http.StatusOK, resp)
	}
}

// nativeHooks answers a host's native input with the host's own answer
// (POST /v1/hooks/{host}/native): what a host's HTTP hook reads.
func (s *server) nativeHooks(w http.ResponseWriter, r *http.Request) {
	if adapter.Named(r.PathValue("host")) == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown host %q", r.PathValue("host")))
		return
	}
	resp, ok := s.answer(w, r)
	if !ok {
		return
	}
	out := resp.HostOutput
	if len(out) == 0 {
		out = json.RawMessage("{}")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(append(bytes.Clone(out), '\n'))
}

// answer decides one hook request; on a request it cannot take it writes
// the error and returns false.
func (s *server) answer(w http.ResponseWriter, r *http.Request) (HookResponse, bool) {
	start := time.Now()
	if got := r.Header.Get(hookwire.HeaderBinary); s.cfg.Binary != "" && got != "" && got != s.cfg.Binary {
		writeError(w, http.StatusConflict, "this engine runs another program; it stops, start the new one")
		if s.cfg.Stale != nil {
			s.cfg.Stale()
		}
		return HookResponse{}, false
	}
	req := Request{Tenant: tenantOf(r), Auth: principalOf(r).Identity, Prompts: principalOf(r).Prompts, Host: r.PathValue("host"), AutoApprove: r.Header.Get(HeaderAutoApprove) == "1",
		HostAsks: r.Header.Get(hookwire.HeaderHostAsks) == "1", Unattended: r.Header.Get(hookwire.HeaderUnattended) == "1", Observe: s.cfg.Observe,
		Monitor: r.Header.Get(hookwire.HeaderMonitor) == "1"}
	if h := r.Header.Get(hookwire.HeaderConfig); h != "" && s.cfg.Configure != nil {
		c, err := hookwire.ParseConfig(h)
		switch {
		case err != nil:
		case c.Tenant != "" && s.cfg.Tokens != nil && c.Tenant != req.Tenant:
			err = fmt.Errorf("tenant %q: the token is the tenant %q's", c.Tenant, req.Tenant)
		case c.Tenant != "":
			err = sessionIDValid(c.Tenant, "s")
		}
		if err == nil {
			req.Config, err = s.cfg.Configure(r.Context(), c)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "configuration: "+err.Error())
			return HookResponse{}, false
		}
		req.Tenant = cmp.Or(c.Tenant, req.Tenant)
	}
	var err error
	if req.Body, req.Size, req.SHA256, req.Truncated, err = hookwire.ReadBounded(r.Body, MaxInput, hookBodyCap); err != nil {
		writeError(w, http.StatusBadRequest, "reading body: "+err.Error())
		return HookResponse{}, false
	}
	if n, err := strconv.ParseInt(r.Header.Get(HeaderInputSize), 10, 64); err == nil && n > req.Size {
		// A hook that read more of the host's input than it sent.
		req.Size, req.SHA256 = n, r.Header.Get(HeaderInputSHA256)
		req.Truncated = r.Header.Get(HeaderInputTruncated) == "1"
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	resp := s.cfg.Engine.Answer(ctx, req)
	switch resp.ReasonCode {
	case ReasonEngineFailure:
		s.metrics.appendErrors.Add(1)
	case ReasonInputRejected:
		s.metrics.observe("rejected", time.Since(start))
	default:
		s.metrics.observe(resp.Decision, time.Since(start))
	}
	return resp, true
}

// Headers of the hook API (see hookwire).
const (
	HeaderAutoApprove    = hookwire.HeaderAutoApprove
	HeaderInputSize      = hookwire.HeaderInputSize
	HeaderInputSHA256    = hookwire.HeaderInputSHA256
	HeaderInputTruncated = hookwire.HeaderInputTruncated
)

// ResolutionRequest answers an ask, STEP_UP or DEFER. ActionSHA256 is the
// pending approval's (GET /v1/pending): a resolution names the action it
// approves. Who resolved it is the approver token's identity, never a
// member of the request.
type ResolutionRequest struct {
	PendingID    string `json:"pending_id"`
	Resolution   string `json:"resolution"`
	ActionSHA256 string `json:"action_sha256"`
}

func (s *server) resolutions(w http.ResponseWriter, r *http.Request) {
	b, ok := s.body(w, r)
	if !ok {
		return
	}
	var req ResolutionRequest
	if err := ledger.DecodeExact(b, &req); err != nil || req.PendingID == "" || req.ActionSHA256 == "" {
		msg := `want {"pending_id": "...", "resolution": "approved|denied|allow_always|allow_similar|deny_always|deny_similar", "action_sha256": "<from GET /v1/pending>"}`
		if err != nil {
			msg += ": " + err.Error()
		}
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	if req.Resolution == "timeout" {
		writeError(w, http.StatusBadRequest, "timeout is the engine's own resolution")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	res, err := s.cfg.Engine.Resolve(ctx, tenantOf(r), req.PendingID, req.Resolution, req.ActionSHA256, principalOf(r).Identity)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, res)
	case errors.Is(err, ErrWrongAction):
		writeError(w, http.StatusConflict, err.Error())
	case decide.IsInputError(err):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, ErrNoPending):
		writeError(w, http.StatusNotFound, err.Error())
	default:
		writeError(w, http.StatusServiceUnavailable, err.Error())
	}
}

// pendingList lists the tenant's open approvals with their action context.
func (s *server) pendingList(w http.ResponseWriter, r *http.Request) {
	list := s.cfg.Engine.Pending(r.Context(), tenantOf(r))
	if list == nil {
		list = []PendingApproval{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"pending": list})
}

// maxPendingWait bounds a long poll on one approval.
const maxPendingWait = 60 * time.Second

// pendingOne answers how one approval stands, waiting (?wait=DURATION, at
// most a minute; 25s by default) for an open one to be resolved. The id is
// the capability: whoever was answered with it (the host, for its own
// session's call) may wait on it, as may approvers and auditors.
func (s *server) pendingOne(w http.ResponseWriter, r *http.Request) {
	wait := 25 * time.Second
	if q := r.URL.Query().Get("wait"); q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("wait %q: want a duration such as 30s", q))
			return
		}
		wait = min(d, maxPendingWait)
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + 10*time.Second))
	st, err := s.cfg.Engine.WaitPending(r.Context(), tenantOf(r), r.PathValue("id"), wait)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, st)
	case errors.Is(err, ErrNoPending):
		writeError(w, http.StatusNotFound, err.Error())
	default:
		writeError(w, http.StatusServiceUnavailable, err.Error())
	}
}

func (s *server) snapshot(w http.ResponseWriter, r *http.Request) {
	k := ledger.SessionKey{Tenant: tenantOf(r), Session: r.PathValue("id")}
	sess, err := s.cfg.Engine.Snapshot(r.Context(), k)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if sess.Snapshot.Seq < 0 {
		writeError(w, http.StatusNotFound, "no session "+k.Session)
		return
	}
	shown, err := s.cfg.Engine.ShownSnapshot(sess.Snapshot)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Snapshot-Hash", sess.Snapshot.Hash())
	w.Write(shown)
	w.Write([]byte("\n"))
}

func (s *server) verify(w http.ResponseWriter, r *http.Request) {
	k := ledger.SessionKey{Tenant: tenantOf(r), Session: r.PathValue("id")}
	rep, err := s.cfg.Store.Verify(r.Context(), store.Filter{Tenant: k.Tenant, Session: k.Session}, ledger.Deep, nil)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if rep.Envelopes == 0 {
		writeError(w, http.StatusNotFound, "no session "+k.Session)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// status reports the engine's state (Engine.Status) and its process.
func (s *server) status(w http.ResponseWriter, r *http.Request) {
	st := s.cfg.Engine.Status()
	st.PID, st.Started = os.Getpid(), s.started
	if s.cfg.Configured != nil {
		st.Configs = s.cfg.Configured()
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.cfg.Store.Sessions(ctx, store.Filter{Tenant: "healthz-probe"}); err != nil {
		writeError(w, http.StatusServiceUnavailable, "store: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
