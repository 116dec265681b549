package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
)

// ModeLive names live replay in reports.
const ModeLive = "live"

// Config is what a live replay drives and where it records.
type Config struct {
	Model *Model
	// Tools, when set, re-executes every recorded tool call that was
	// allowed and that the MCP server offers.
	Tools *Tools
	// Engine records the live run as a new session (every event decided
	// with the candidate policy, as in production) and judges the
	// candidate model's planned calls.
	Engine *engine.Engine
	// Decider is the Engine's decider, used to judge planned calls on a
	// copy of the live session without recording them.
	Decider *decide.Decider
	// SessionID names the new session; its SessionStart links to the
	// original under "replay_of".
	SessionID string
	// Now is the live run's clock (event timestamps); time.Now if nil.
	Now func() time.Time
}

// Report is the outcome of one session's live replay.
type Report struct {
	TenantID       string  `json:"tenant_id"`
	SessionID      string  `json:"session_id"`
	LiveSessionID  string  `json:"live_session_id"`
	Mode           string  `json:"mode"`
	Model          string  `json:"model"`
	ModelSteps     int     `json:"model_steps"`
	AgreeingSteps  int     `json:"agreeing_steps"`
	AgreementRate  float64 `json:"agreement_rate"`
	FirstDivergent *uint64 `json:"first_divergence_seq"`
	// Steps compare each recorded model answer with the candidate's.
	Steps []ModelStep `json:"steps"`
	// ToolResults compare each re-executed tool call with its recorded result.
	ToolResults []ToolDiff `json:"tool_results"`
	// VerdictChanges are recorded tool calls the live run decided
	// differently.
	VerdictChanges []VerdictChange `json:"verdict_changes"`
	Recorded       Cost            `json:"recorded"`
	Candidate      Cost            `json:"candidate"`
}

// Cost is latency and tokens on one side.
type Cost struct {
	LatencyMs    int64 `json:"latency_ms"`
	PromptTokens int   `json:"prompt_tokens"`
	OutputTokens int   `json:"output_tokens"`
}

// ModelStep is one recorded PreLLMRequest with the recorded and the
// candidate's answer.
type ModelStep struct {
	Seq            uint64        `json:"seq"`
	RecordedCalls  []PlannedCall `json:"recorded_calls"`
	CandidateCalls []PlannedCall `json:"candidate_calls"`
	RecordedStop   string        `json:"recorded_stop"`
	CandidateStop  string        `json:"candidate_stop"`
	Agree          bool          `json:"agree"`
	// Judged is the policy's verdict on each candidate call, had it been
	// made at this point of the live session.
	Judged []JudgedCall `json:"judged"`
}

// JudgedCall is a candidate call and the verdict it would have had.
type JudgedCall struct {
	Call     PlannedCall `json:"call"`
	Decision string      `json:"decision"`
	Rule     string      `json:"rule"`
}

// ToolDiff is one re-executed tool call.
type ToolDiff struct {
	Seq      uint64 `json:"seq"`
	Tool     string `json:"tool"`
	Recorded string `json:"recorded"`
	Live     string `json:"live"`
	IsError  bool   `json:"is_error"`
	Same     bool   `json:"same"`
}

// VerdictChange is a recorded event the live run decided differently.
type VerdictChange struct {
	Seq      uint64 `json:"seq"`
	Hook     string `json:"hook_point"`
	Recorded string `json:"recorded"`
	Live     string `json:"live"`
	Rule     string `json:"rule"`
}

// stopOf maps chat completions finish reasons to the stop reasons hosts
// record, so that the two compare.
var stopOf = map[string]string{"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens", "function_call": "tool_use"}

// Run re-drives one verified recorded chain: its model requests go to the
// candidate model, its allowed tool calls to the MCP server, and the live
// run is recorded as cfg.SessionID.
func Run(ctx context.Context, cfg Config, chain []*ledger.Envelope) (*Report, error) {
	if len(chain) == 0 {
		return nil, errors.New("empty session")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	tenant, orig := chain[0].TenantID(), chain[0].SessionID()
	r := &Report{TenantID: tenant, SessionID: orig, LiveSessionID: cfg.SessionID, Mode: ModeLive, Model: cfg.Model.Name,
		Steps: []ModelStep{}, ToolResults: []ToolDiff{}, VerdictChanges: []VerdictChange{}}
	x := &run{cfg: cfg, r: r, tenant: tenant, verdicts: map[uint64]aarts.VerdictRecord{}}
	var events []*ledger.Envelope
	for _, e := range chain {
		switch {
		case e.EventType() == ledger.EventVerdict:
			var v aarts.VerdictRecord
			if err := ledger.DecodeExact(e.Payload(), &v); err != nil {
				return nil, fmt.Errorf("seq %d: %w", e.Seq(), err)
			}
			x.verdicts[v.ForSeq] = v
		case aarts.IsHookPoint(e.EventType()):
			events = append(events, e)
		}
	}
	for i, e := range events {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ev, err := aarts.ParseEvent(e.Payload())
		if err != nil {
			return nil, fmt.Errorf("seq %d: %w", e.Seq(), err)
		}
		switch ev.HookPoint {
		case "SessionStart":
			ev.Raw["replay_of"] = map[string]any{"tenant_id": tenant, "session_id": orig, "head_hash": chain[len(chain)-1].Hash(),
				"mode": ModeLive, "model": cfg.Model.Name}
			err = x.record(ctx, e, ev.Raw)
		case "PreLLMRequest":
			err = x.model(ctx, e, ev, events[i+1:])
		case "PostLLMResponse":
			// Answered live by the step of its request.
		case "PreToolUse":
			err = x.tool(ctx, e, ev, events[i+1:])
		case "PostToolUse":
			// Recorded by the step of its PreToolUse.
		default:
			err = x.record(ctx, e, ev.Raw)
		}
		if err != nil {
			return nil, fmt.Errorf("seq %d (%s): %w", e.Seq(), ev.HookPoint, err)
		}
	}
	if r.ModelSteps > 0 {
		r.AgreementRate = float64(r.AgreeingSteps) / float64(r.ModelSteps)
	}
	return r, nil
}

type run struct {
	cfg      Config
	r        *Report
	tenant   string
	verdicts map[uint64]aarts.VerdictRecord
}

// record decides and records one event of the live session: the recorded
// event's fields, under the live session id and the live clock.
func (x *run) record(ctx context.Context, e *ledger.Envelope, raw map[string]any) error {
	_, err := x.decide(ctx, e, raw)
	return err
}

// decide records raw in the live session and, when the recording has a
// counterpart (rec, the recorded envelope of the same event; nil when the
// live event has none), notes a verdict that differs from the recorded one.
func (x *run) decide(ctx context.Context, rec *ledger.Envelope, raw map[string]any) (*decide.Step, error) {
	ev := maps.Clone(raw)
	ev["session_id"] = x.cfg.SessionID
	ev["timestamp"] = x.cfg.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	step, err := x.cfg.Engine.Decide(ctx, x.tenant, payload)
	if err != nil {
		return nil, fmt.Errorf("record live event: %w", err)
	}
	if rec == nil {
		return step, nil
	}
	if v, ok := x.verdicts[rec.Seq()]; ok && v.Verdict.Decision != step.Record.Verdict.Decision {
		x.r.VerdictChanges = append(x.r.VerdictChanges, VerdictChange{Seq: rec.Seq(), Hook: v.HookPoint,
			Recorded: v.Verdict.Decision, Live: step.Record.Verdict.Decision, Rule: step.Record.Verdict.MatchedRuleID})
	}
	return step, nil
}

// model sends a recorded request to the candidate and compares its answer
// with the recorded one (the next PostLLMResponse before another request).
func (x *run) model(ctx context.Context, e *ledger.Envelope, ev *aarts.Event, rest []*ledger.Envelope) error {
	req := maps.Clone(ev.Raw)
	req["model_id"] = x.cfg.Model.Name
	if err := x.record(ctx, e, req); err != nil {
		return err
	}
	messages, err := messagesOf(ev.Raw["full_prompt"])
	if err != nil {
		return fmt.Errorf("full_prompt: %w", err)
	}
	tools, _ := ev.Raw["tools"].([]any)
	c, err := x.cfg.Model.Complete(ctx, messages, tools)
	if err != nil {
		return err
	}
	step := ModelStep{Seq: e.Seq(), CandidateCalls: Normalize(c.ToolCalls), CandidateStop: stopOf[c.FinishReason], Judged: []JudgedCall{}}
	if step.CandidateStop == "" {
		step.CandidateStop = c.FinishReason
	}
	x.r.Candidate.LatencyMs += c.Latency.Milliseconds()
	x.r.Candidate.PromptTokens += c.PromptTokens
	x.r.Candidate.OutputTokens += c.OutputTokens
	var recorded *ledger.Envelope
	for _, n := range rest {
		if n.EventType() == "PreLLMRequest" {
			break
		}
		if n.EventType() == "PostLLMResponse" {
			recorded = n
			break
		}
	}
	step.RecordedCalls = []PlannedCall{}
	if recorded != nil {
		var resp struct {
			StopReason     string `json:"stop_reason"`
			PlannedActions []struct {
				ToolName  string `json:"tool_name"`
				ToolInput any    `json:"tool_input"`
			} `json:"planned_actions"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(recorded.Payload(), &resp); err != nil {
			return fmt.Errorf("recorded PostLLMResponse seq %d: %w", recorded.Seq(), err)
		}
		step.RecordedStop = resp.StopReason
		calls := make([]ToolCall, len(resp.PlannedActions))
		for i, a := range resp.PlannedActions {
			args, _ := json.Marshal(a.ToolInput)
			calls[i].Function.Name, calls[i].Function.Arguments = a.ToolName, string(args)
		}
		step.RecordedCalls = Normalize(calls)
		x.r.Recorded.LatencyMs += recorded.TsUnixMs() - e.TsUnixMs()
		x.r.Recorded.PromptTokens += resp.Usage.PromptTokens
		x.r.Recorded.OutputTokens += resp.Usage.OutputTokens
	}
	step.Agree = step.RecordedStop == step.CandidateStop && len(step.RecordedCalls) == len(step.CandidateCalls)
	for i := 0; step.Agree && i < len(step.RecordedCalls); i++ {
		step.Agree = step.RecordedCalls[i] == step.CandidateCalls[i]
	}
	// Would the candidate's calls have been allowed here? Each is judged
	// on a copy of the live session; nothing is recorded.
	key := ledger.SessionKey{Tenant: x.tenant, Session: x.cfg.SessionID}
	for _, call := range step.CandidateCalls {
		s, err := x.cfg.Engine.Snapshot(ctx, key)
		if err != nil {
			return err
		}
		payload, err := preToolUse(ev, x.cfg.SessionID, call, x.cfg.Now())
		if err != nil {
			return err
		}
		d, err := x.cfg.Decider.Decide(ctx, &s, payload)
		if err != nil {
			return fmt.Errorf("judge planned call %s: %w", call.Name, err)
		}
		step.Judged = append(step.Judged, JudgedCall{Call: call, Decision: d.Record.Verdict.Decision, Rule: d.Record.Verdict.MatchedRuleID})
	}
	// The live session records the candidate's answer.
	planned := make([]any, len(step.CandidateCalls))
	for i, call := range step.CandidateCalls {
		var args any
		json.Unmarshal([]byte(call.Arguments), &args)
		planned[i] = map[string]any{"tool_name": call.Name, "tool_input": args}
	}
	resp := map[string]any{"hook_point": "PostLLMResponse", "host_id": ev.HostID, "aarts_version": ev.AARTSVersion,
		"turn_id": ev.Raw["turn_id"], "response_text": c.Content, "stop_reason": step.CandidateStop, "planned_actions": planned,
		"usage": map[string]any{"prompt_tokens": c.PromptTokens, "output_tokens": c.OutputTokens}}
	if ev.Cwd != "" {
		resp["cwd"] = ev.Cwd
	}
	if _, err := x.decide(ctx, recorded, resp); err != nil {
		return err
	}
	x.r.ModelSteps++
	if step.Agree {
		x.r.AgreeingSteps++
	} else if x.r.FirstDivergent == nil {
		seq := e.Seq()
		x.r.FirstDivergent = &seq
	}
	x.r.Steps = append(x.r.Steps, step)
	return nil
}

// tool records a recorded tool call in the live session and, when it was
// allowed on record and is allowed live, executes it again on the MCP
// server and compares the result with the recorded PostToolUse.
func (x *run) tool(ctx context.Context, e *ledger.Envelope, ev *aarts.Event, rest []*ledger.Envelope) error {
	step, err := x.decide(ctx, e, ev.Raw)
	if err != nil {
		return err
	}
	var post *aarts.Event
	var postEnv *ledger.Envelope
	for _, n := range rest {
		if n.EventType() == "PreToolUse" {
			break
		}
		if n.EventType() == "PostToolUse" {
			if post, err = aarts.ParseEvent(n.Payload()); err != nil {
				return fmt.Errorf("seq %d: %w", n.Seq(), err)
			}
			postEnv = n
			break
		}
	}
	rec, recorded := x.verdicts[e.Seq()]
	name := aarts.MCPTool(ev.NativeTool())
	if x.cfg.Tools == nil || name == "" || !recorded || rec.Verdict.Decision != aarts.Allow || step.Record.Verdict.Decision != aarts.Allow {
		if post != nil {
			return x.record(ctx, postEnv, post.Raw)
		}
		return nil
	}
	args, _ := ev.ToolInput.(map[string]any)
	res, err := x.cfg.Tools.Call(ctx, name, args)
	if err != nil {
		return err
	}
	d := ToolDiff{Seq: e.Seq(), Tool: ev.NativeTool(), Live: res.Text, IsError: res.IsError}
	out := maps.Clone(ev.Raw)
	out["hook_point"] = "PostToolUse"
	out["tool_result"] = res.Text
	if post != nil {
		d.Recorded = textOf(post.Raw["tool_result"])
	}
	d.Same = post != nil && d.Recorded == d.Live
	x.r.ToolResults = append(x.r.ToolResults, d)
	// A PostToolUse the recording lacks is recorded live with no
	// counterpart to compare with.
	_, err = x.decide(ctx, postEnv, out)
	return err
}

func textOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// messagesOf reads a recorded full_prompt: a string (one user message) or
// an array of chat messages.
func messagesOf(v any) ([]Message, error) {
	switch p := v.(type) {
	case string:
		return []Message{{Role: "user", Content: p}}, nil
	case []any:
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		var ms []Message
		if err := json.Unmarshal(raw, &ms); err != nil {
			return nil, err
		}
		return ms, nil
	}
	return nil, fmt.Errorf("want a string or an array of messages, got %T", v)
}

// preToolUse builds the PreToolUse event a planned call would have raised.
func preToolUse(req *aarts.Event, session string, call PlannedCall, at time.Time) ([]byte, error) {
	var args any
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		args = map[string]any{"arguments": call.Arguments}
	}
	tool := aarts.Canonical(call.Name)
	ev := map[string]any{"hook_point": "PreToolUse", "session_id": session, "timestamp": at.UTC().Format("2006-01-02T15:04:05.000Z"),
		"host_id": req.HostID, "aarts_version": req.AARTSVersion, "turn_id": req.Raw["turn_id"], "tool_name": tool,
		"tool_name_native": call.Name, "tool_input": args, "artifacts": []any{}}
	if req.Cwd != "" {
		ev["cwd"] = req.Cwd
	}
	return json.Marshal(ev)
}
