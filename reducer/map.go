package reducer

// Map returns the snapshot as the policy sees it: plain values keyed by
// its JSON member names, without a JSON round trip, and without the loop
// detector's working state (recent, no_progress, no_progress_trace), which
// the policy reads through loop_violation and loop_trace. A test holds it
// equal to the snapshot's JSON form less those members.
func (s Snapshot) Map() map[string]any {
	s.normalize()
	taint := make([]any, len(s.TaintSources))
	for i, t := range s.TaintSources {
		m := map[string]any{"seq": t.Seq, "hook_point": t.HookPoint, "kind": t.Kind, "reason": t.Reason}
		if t.Tool != "" {
			m["tool"] = t.Tool
		}
		taint[i] = m
	}
	findings := make([]any, len(s.DataFindings))
	for i, f := range s.DataFindings {
		findings[i] = map[string]any{"seq": f.Seq, "class": f.Class, "detector": f.Detector}
	}
	pending := pendingMaps(s.Pending)
	m := map[string]any{
		"tenant_id": s.TenantID, "session_id": s.SessionID, "seq": s.Seq, "events": s.Events,
		"steps_consumed": s.StepsConsumed, "tool_calls_consumed": s.ToolCallsConsumed, "started_ms": s.StartedMs,
		"last_ms": s.LastMs, "wall_time_ms": s.WallTimeMs, "output_bytes": s.OutputBytes,
		"is_tainted": s.IsTainted, "taint_kinds": s.TaintKinds, "taint_sources": taint, "sanitized_keys": s.SanitizedKeys,
		"loop_violation": s.LoopViolation, "loop_trace": s.LoopTrace, "data_classes": s.DataClasses,
		"data_findings": findings, "original_request": s.OriginalRequest, "egress_domains": s.EgressDomains,
		"denied_count": s.DeniedCount, "pending": pending, "parent_session_id": s.ParentSessionID,
		"permitted_tools": s.PermittedTools, "allowed_artifacts": s.AllowedArtifacts, "denied_artifacts": s.DeniedArtifacts,
	}
	if len(s.HostAsks) > 0 {
		m["host_asks"] = pendingMaps(s.HostAsks)
	}
	if s.Intent != nil {
		m["intent"] = map[string]any{"read_only": s.Intent.ReadOnly, "request": s.Intent.Request}
	}
	if len(s.Downloaded) > 0 {
		m["downloaded"] = s.Downloaded
	}
	if len(s.Written) > 0 {
		m["written"] = s.Written
	}
	if s.ShellDir != "" {
		m["shell_dir"] = s.ShellDir
	}
	if s.Inherited != nil {
		in := s.Inherited
		im := map[string]any{"parent_session_id": in.ParentSessionID, "known": in.Known, "parent_seq": in.ParentSeq}
		for k, v := range map[string]string{"parent_hash": in.ParentHash, "principal": in.Principal, "agent": in.Agent} {
			if v != "" {
				im[k] = v
			}
		}
		for k, v := range map[string][]string{"permitted_tools": in.PermittedTools, "taint_kinds": in.TaintKinds, "data_classes": in.DataClasses} {
			if len(v) > 0 {
				im[k] = v
			}
		}
		m["inherited"] = im
	}
	if len(s.Grants) > 0 {
		grants := make([]any, len(s.Grants))
		for i, g := range s.Grants {
			gm := map[string]any{"sub_agent_id": g.SubAgentID, "seq": g.Seq}
			if len(g.Tools) > 0 {
				gm["tools"] = g.Tools
			}
			if g.Denied {
				gm["denied"] = true
			}
			grants[i] = gm
		}
		m["grants"] = grants
	}
	return m
}

// pendingMaps is ps as their JSON reads.
func pendingMaps(ps []Pending) []any {
	out := make([]any, len(ps))
	for i, p := range ps {
		m := map[string]any{"for_seq": p.ForSeq, "hook_point": p.HookPoint, "aarm_decision": p.AARMDecision, "reason_code": p.ReasonCode}
		for k, v := range map[string]string{"turn_id": p.TurnID, "action": p.Action, "tool": p.Tool, "cwd": p.Cwd} {
			if v != "" {
				m[k] = v
			}
		}
		if len(p.Artifacts) > 0 {
			m["artifacts"] = p.Artifacts
		}
		if p.NoPrompt {
			m["no_prompt"] = true
		}
		if len(p.Outputs) > 0 {
			m["outputs"] = p.Outputs
		}
		out[i] = m
	}
	return out
}
