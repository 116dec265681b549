# Rules for tool calls (PreToolUse).
package agentledger.policy

import rego.v1

is_tool_call if hook == "PreToolUse"

# 1. Forbidden actions, agentledger's own files, manifest deny rules.

command_lines := {c | some c in object.get(action, "command_lines", [])}

forbidden_any := concat("|", [p.re | some p in forbidden_command_patterns])

signals contains sig(1, "FORBIDDEN", "deny", "DENY", "tool_execution", "critical", sprintf("forbidden: %s (%s)", [p.reason, c]), [c], 1) if {
	is_tool_call
	some c in command_lines
	regex.match(forbidden_any, c)
	some p in forbidden_command_patterns
	regex.match(p.re, c)
}

signals contains sig(1, "FORBIDDEN", "deny", "DENY", "tool_execution", "critical", sprintf("forbidden: recursive delete of %s", [t]), [c], 1) if {
	is_tool_call
	some cmd in action.commands
	cmd.binary == "rm"
	c := concat(" ", cmd.argv)
	regex.match(`\s-(-recursive|[a-zA-Z]*[rR][a-zA-Z]*)(\s|$)`, c)
	some t in array.slice(cmd.argv, 1, count(cmd.argv))
	t in dangerous_rm_targets
}

signals contains sig(1, "FORBIDDEN", "deny", "DENY", "tool_execution", "critical", sprintf("forbidden: %s", [p.reason]), [q], 1) if {
	is_tool_call
	some q in action.sql
	some p in forbidden_sql_patterns
	regex.match(p.re, q)
}

signals contains sig(1, "FORBIDDEN", "deny", "DENY", "tool_execution", "critical", "forbidden: downloaded code piped into an interpreter", action.urls, 1) if {
	is_tool_call
	action.piped_to_shell
}

signals contains sig(1, "FORBIDDEN", "deny", "DENY", "tool_execution", "critical", sprintf("forbidden (%s): %s", [f.id, f.reason]), [s], 1) if {
	is_tool_call
	some f in m.forbidden
	f.tool == tool
	some s in all_subjects
	regex.match(f.match, s)
}

signals contains sig(1.1, "PROTECTED_PATH", "deny", "DENY", "persistence", "critical", sprintf("%s is agentledger's or the host's own configuration", [p]), [p], 1) if {
	is_tool_call
	some p in action.write_paths
	glob_any(protected_globs | {g | some g in m.protected}, p)
}

signals contains sig(1.2, "RULE_DENY", "deny", "DENY", "tool_execution", "critical", sprintf("denied by rule %s", [r]), [], 1) if {
	is_tool_call
	some r in rules_matching("deny")
}

allowed_by_rule if count(rules_matching("allow")) > 0

# 2. The tool must be declared.

signals contains sig(2, "PERMISSION_UNDECLARED", "deny", "DENY", "tool_execution", "warning", sprintf("tool %s (%s) is not declared in manifest %s", [native, tool, m.name]), [native], 1) if {
	is_tool_call
	not facts.tool_declared
}

signals contains sig(2, "PERMISSION_UNDECLARED", "deny", "DENY", "privilege_escalation", "critical", sprintf("sub-agent may use only %v, not %s", [snap.permitted_tools, tool]), [native], 1) if {
	is_tool_call
	count(snap.permitted_tools) > 0
	not tool in snap.permitted_tools
}

# 3. Egress: hosts come from the engine's reading of the input.

# Tools that reach the network with what their input names; a URL inside
# the content of a file write is not egress.
network_tools := {"web_request", "shell", "browser", "mcp_call", "package_install", "code_exec", "database"}

signals contains sig(3, "EGRESS_DENY", "deny", "DENY", "network_egress", "critical", sprintf("%s is not an allowed network domain", [h]), [h], 1) if {
	is_tool_call
	tool in network_tools
	some h in facts.hosts_denied
	not h in snap.allowed_artifacts
}

# 4. Budgets.

budget_hooks := {"PreToolUse", "PreLLMRequest", "PreSubAgentSpawn"}

signals contains sig(4, "BUDGET_EXCEEDED", "deny", "DENY", "resource_abuse", "warning", sprintf("steps %v exceed the budget of %v", [snap.steps_consumed, budgets.max_steps]), [], 1) if {
	hook in budget_hooks
	snap.steps_consumed > budgets.max_steps
}

signals contains sig(4, "BUDGET_EXCEEDED", "deny", "DENY", "resource_abuse", "warning", sprintf("tool calls %v exceed the budget of %v", [snap.tool_calls_consumed, budgets.max_tool_calls]), [], 1) if {
	hook in budget_hooks
	snap.tool_calls_consumed > budgets.max_tool_calls
}

signals contains sig(4, "BUDGET_EXCEEDED", "deny", "DENY", "resource_abuse", "warning", sprintf("wall time (ms) %v exceeds the budget of %v", [snap.wall_time_ms, budgets.max_wall_time_ms]), [], 1) if {
	hook in budget_hooks
	snap.wall_time_ms > budgets.max_wall_time_ms
}

# 5. Loops.

signals contains sig(5, "LOOP_DETECTED", "ask", "STEP_UP", "resource_abuse", "warning", sprintf("loop detected (%s) at seqs %v", [snap.loop_violation, snap.loop_trace]), [], 1) if {
	hook in {"PreToolUse", "PreLLMRequest"}
	snap.loop_violation != ""
}

# 6. Taint: untrusted content may not drive high-risk sinks, unless the
# content was sanitized under the key the call carries.

# Local tool output taints the session for the record; only content from
# outside (the web, MCP servers, memory, sub-agents) blocks sinks.

sanitized if {
	k := input.event.sanitizer_key
	k in snap.sanitized_keys
}

external_taint := concat(", ", [k | some k in snap.taint_kinds; k != "local"])

signals contains sig(6, "TAINTED_TO_HIGH_RISK", "deny", "DENY", "prompt_injection", "critical", sprintf("session is tainted by %s content and %s is a high-risk sink", [external_taint, tool]), [], 0.8) if {
	is_tool_call
	external_taint != ""
	tool in high_risk_sinks
	not sanitized
}

signals contains sig(6, "TAINTED_TO_HIGH_RISK", "ask", "STEP_UP", "prompt_injection", "warning", sprintf("session is tainted by %s content and %s can persist it", [external_taint, tool]), [], 0.6) if {
	is_tool_call
	external_taint != ""
	tool in medium_risk_sinks
	not sanitized
}

# 7. Binaries.

signals contains sig(7, "EXEC_DENY", "deny", "DENY", "tool_execution", "warning", sprintf("binary %s is not allowed", [b]), [b], 1) if {
	is_tool_call
	tool in {"shell", "package_install", "code_exec"}
	some b in facts.binaries_denied
	not allowed_by_rule
}

# 8. Files, secrets, packages.

signals contains sig(8, "FS_DENY", "deny", "DENY", "persistence", "critical", sprintf("write to %s is outside the write roots", [p]), [p], 1) if {
	is_tool_call
	some p in facts.writes_outside
}

signals contains sig(8, "FS_DENY", "deny", "DENY", "data_exfiltration", "warning", sprintf("read of %s is outside the read roots", [p]), [p], 1) if {
	is_tool_call
	some p in facts.reads_outside
}

signals contains sig(8, "SECRET_ACCESS", "deny", "DENY", "data_exfiltration", "critical", sprintf("%s holds secrets", [p]), [p], 1) if {
	is_tool_call
	some p in facts.secret_paths
}

signals contains sig(8, "SECRET_ACCESS", "deny", "DENY", "data_exfiltration", "critical", sprintf("command reads secret variable %s", [v]), [v], 1) if {
	is_tool_call
	some v in object.get(action, "secret_env_refs", [])
}

signals contains sig(8, "PACKAGE_SUSPECT", "deny", "DENY", "supply_chain", "critical", sprintf("package %s:%s looks like %s", [p.manager, p.name, p.suspect]), [concat(":", [p.manager, p.name])], 0.75) if {
	is_tool_call
	some p in action.packages
	p.suspect != ""
}

# 9. Composition: sensitive data read earlier, now an external send.

sends_out if {
	tool == "web_request"
	method := upper(object.get(input.event.tool_input, "method", "GET"))
	method in {"POST", "PUT", "PATCH"}
}

sends_out if {
	some cmd in action.commands
	cmd.binary in {"curl", "wget", "nc", "ncat", "scp", "rsync", "sftp"}
	some a in cmd.argv
	a in {"-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "-F", "--form", "-T", "--upload-file", "--post-file", "--post-data", "-X"}
}

sends_out if {
	tool == "mcp_call"
	count(action.urls) > 0
}

signals contains sig(9, "DATA_EXFILTRATION", "deny", "DENY", "data_exfiltration", "critical", sprintf("session read %s data and this call sends data out", [concat(", ", sort(classes))]), action.hosts, 0.9) if {
	is_tool_call
	classes := {c | some c in snap.data_classes; c in sensitive_classes}
	count(classes) > 0
	sends_out
}

# 10. Approval.

signals contains sig(10, "APPROVAL_REQUIRED", "ask", "STEP_UP", "tool_execution", "warning", sprintf("%s needs a human's approval", [native]), [native], 1) if {
	is_tool_call
	facts.approval_required
	not native in snap.allowed_artifacts
}

signals contains sig(10, "RULE_ASK", "ask", "STEP_UP", "tool_execution", "warning", sprintf("rule %s asks for approval", [r]), [], 1) if {
	is_tool_call
	not allowed_by_rule
	some r in rules_matching("ask")
}

# 11. Context not yet known (AARM R3): a sub-agent's action before its
# delegation was recorded is deferred.

signals contains sig(11, "CONTEXT_PENDING", "ask", "DEFER", "privilege_escalation", "warning", "sub-agent action before its delegation is on record", [], 1) if {
	is_tool_call
	object.get(input.event, "is_sub_agent", false) == true
	snap.parent_session_id == ""
	count(snap.permitted_tools) == 0
}
