package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/ledger"
)

// EvalLine is one line of `engine eval` output: the verdict on one event.
type EvalLine struct {
	SessionID     string   `json:"session_id"`
	Index         int      `json:"index"` // the event's position in its session, from 0
	HookPoint     string   `json:"hook_point"`
	Decision      string   `json:"decision"`
	AARMDecision  string   `json:"aarm_decision"`
	ReasonCode    string   `json:"reason_code"`
	MatchedRuleID string   `json:"matched_rule_id"`
	Reasons       []string `json:"reasons"`
	SnapshotHash  string   `json:"snapshot_hash"`
}

// LineOf returns the eval line of a step.
func LineOf(s *decide.Step) EvalLine {
	return EvalLine{
		SessionID: s.Event.SessionID, Index: s.Index, HookPoint: s.Event.HookPoint, Decision: s.Decision.Decision,
		AARMDecision: s.Decision.AARMDecision, ReasonCode: s.Decision.ReasonCode, MatchedRuleID: s.Decision.MatchedRuleID,
		Reasons: s.Decision.Reasons, SnapshotHash: s.SnapshotHash,
	}
}

// Eval reads NDJSON hook events of one or more sessions from r, decides each
// in order with d, and writes one EvalLine per event to w. Nothing is
// recorded. A bad line is an error naming the line, and then nothing is
// written.
func Eval(ctx context.Context, d *decide.Decider, tenant string, r io.Reader, w io.Writer) error {
	sessions := map[string]*decide.Session{}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	err := ledger.ReadLines(r, d.Limits, func(line []byte, n int) error {
		var probe struct {
			SessionID       string `json:"session_id"`
			ParentSessionID string `json:"parent_session_id"`
			SpawnSessionID  string `json:"spawn_session_id"`
		}
		if err := json.Unmarshal(line, &probe); err != nil || probe.SessionID == "" {
			return fmt.Errorf("line %d: %w", n, orMissing(err))
		}
		s := sessions[probe.SessionID]
		if s == nil {
			s = decide.NewSession(tenant, probe.SessionID)
			sessions[probe.SessionID] = s
		}
		s.Inherit = decide.InheritanceFor(probe.ParentSessionID, probe.SpawnSessionID, s, func(id string) *decide.Session { return sessions[id] })
		step, err := d.Decide(ctx, s, line)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		return enc.Encode(LineOf(step))
	})
	if err != nil {
		return err
	}
	_, err = w.Write(out.Bytes())
	return err
}

func orMissing(err error) error {
	if err != nil {
		return &ledger.InputError{Offset: -1, Msg: "not a JSON object: " + err.Error()}
	}
	return &ledger.InputError{Path: "$.session_id", Offset: -1, Msg: "missing session_id"}
}
