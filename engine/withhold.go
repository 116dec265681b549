package engine

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agentledger/agentledger/adapter"
	"github.com/agentledger/agentledger/reducer"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/seal"
)

// What a deny withholds stays withheld. A tool result (PostToolUse) the
// engine denies has already been produced; hosts that let a hook replace
// the result the model sees (Claude Code's updatedToolOutput and
// updatedMCPToolOutput, Cursor's updated_mcp_tool_output for MCP tools,
// Copilot's modifiedResult; Gemini CLI's AfterTool replaces it with the
// deny's reason) are given the withheld form instead. It keeps the
// result's shape — a host validates it against the tool's output schema and
// falls back to the original on a mismatch — and none of what was denied:
// for a secret, the result as recorded (every secret sealed, shown by its
// kind) and redacted once more; for anything else, every string replaced by
// a notice.

// withheld returns the withheld form of a denied tool result, or nil when
// st is not one.
func withheld(st *decide.Step) json.RawMessage {
	if st == nil || st.Event.HookPoint != "PostToolUse" || st.Record.Verdict.Decision == aarts.Allow {
		return nil
	}
	var ev map[string]any
	if err := json.Unmarshal(seal.Render(st.Envelope.Payload()), &ev); err != nil {
		return nil
	}
	result, ok := ev["tool_result"]
	if !ok {
		return nil
	}
	if st.Record.ReasonCode == "SECRET_IN_RESULT" {
		result = Redact(result)
	} else {
		result = replaceStrings(result, adapter.WithheldNotice+strings.TrimPrefix(adapter.Reason(answerOf(HookResponse{Verdict: st.Record.Verdict, ReasonCode: st.Record.ReasonCode})), "agentledger: "))
	}
	b, err := json.Marshal(result)
	if err != nil {
		return nil
	}
	return b
}

// replaceStrings returns v with every string replaced by s (numbers,
// booleans and the shape kept).
func replaceStrings(v any, s string) any {
	switch x := v.(type) {
	case string:
		return s
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = replaceStrings(e, s)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = replaceStrings(e, s)
		}
		return out
	}
	return v
}

// shown is v as the engine shows it outside the record (the snapshot and
// pending APIs): every string with the values the sealing policy seals
// shown as ‹sealed:kind› and every other secret or piece of personal data
// the detectors find as ‹redacted:kind›. v is not changed.
func (e *Engine) shown(v any) any {
	var p seal.Policy
	if e.decider.Sealer != nil {
		p = e.decider.Sealer.Policy
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return p.Redact(x)
		case []any:
			out := make([]any, len(x))
			for i := range x {
				out[i] = walk(x[i])
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, y := range x {
				out[k] = walk(y)
			}
			return out
		}
		return v
	}
	return walk(v)
}

// ShownSnapshot is a session's snapshot as GET /v1/sessions/{id}/snapshot
// shows it (shown): the request it quotes, the files and artifacts it
// lists, with nothing sealed or secret in the clear. Plaintext is only
// for an auditor's recorded reveal (ledger show --reveal).
func (e *Engine) ShownSnapshot(s reducer.Snapshot) ([]byte, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(s.Canonical()))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if e.decider.Sealer != nil && e.decider.Sealer.Policy.SealsField("", "", "raw_input") {
		// The request is the user input the manifest seals whole.
		m, _ := v.(map[string]any)
		if r, _ := m["original_request"].(string); r != "" {
			m["original_request"] = "‹sealed: field:raw_input›"
		}
		if in, ok := m["intent"].(map[string]any); ok {
			if r, _ := in["request"].(string); r != "" {
				in["request"] = "‹sealed: field:raw_input›"
			}
		}
	}
	return json.Marshal(e.shown(v))
}
