// Command broken is a deliberately broken AARTS adapter, for the
// conformance suite's own tests (TestBrokenAdapters): agentledger's
// built-in adapter with one trick, named by its argument, of those an
// audit found a loose suite credits. The suite must refuse each the level
// it claims.
//
//	constant-provenance  is_sub_agent false on every PreToolUse, sub-agent or not
//	drop-sub-agents      a sub-agent's call mapped as the main agent's
//	empty-tool-input     every tool event with tool_input {}
//	drop-fields          every event stripped to the members AARTS requires
//	wrong-hook-point     a tool result (PostToolUse) sent as a call (PreToolUse)
//	deny-for-ask         every ask answered as a deny
//
// It speaks the suite's adapter protocol: one request on stdin, one
// result on stdout.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/agentledger/agentledger/conformance"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "broken:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: broken TRICK")
	}
	trick := args[0]
	var req conformance.Request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		return err
	}
	switch trick {
	case "drop-sub-agents":
		req.Input = without(req.Input, "agent_id", "agent_type", "subagent_id")
	case "deny-for-ask":
		if req.Verdict.Decision == "ask" {
			req.Verdict.Decision, req.Verdict.HostAnswer, req.Verdict.PendingID = "deny", "deny", ""
		}
	}
	res, err := conformance.Builtin{}.Run(context.Background(), req)
	if err != nil {
		return err
	}
	var ev map[string]any
	if json.Unmarshal(res.Event, &ev) == nil && ev != nil {
		switch trick {
		case "constant-provenance":
			if ev["hook_point"] == "PreToolUse" {
				if parent, ok := ev["parent_session_id"]; ok {
					ev["session_id"] = parent
				}
				delete(ev, "parent_session_id")
				ev["is_sub_agent"] = false
			}
		case "empty-tool-input":
			if _, ok := ev["tool_input"]; ok {
				ev["tool_input"] = map[string]any{}
			}
		case "drop-fields":
			for k := range ev {
				if !slices.Contains(required, k) {
					delete(ev, k)
				}
			}
		case "wrong-hook-point":
			if ev["hook_point"] == "PostToolUse" {
				ev["hook_point"] = "PreToolUse"
				delete(ev, "tool_result")
			}
		case "drop-sub-agents", "deny-for-ask":
		default:
			return fmt.Errorf("no trick %q", trick)
		}
		if res.Event, err = json.Marshal(ev); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// required are the event members some AARTS hook point requires.
var required = []string{"session_id", "timestamp", "host_id", "aarts_version", "hook_point", "turn_id", "tool_name",
	"tool_name_native", "tool_input", "artifacts", "tool_result", "raw_input", "full_prompt", "response_text",
	"context_before", "output_text", "sub_agent_id", "delegated_task", "result", "original_value", "modified_value",
	"was_modified", "modifier_chain", "host_event"}

// without is a JSON object input without the members names.
func without(input json.RawMessage, names ...string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil || !slices.ContainsFunc(names, func(n string) bool { _, ok := m[n]; return ok }) {
		return input
	}
	for _, n := range names {
		delete(m, n)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return input
	}
	return out
}
