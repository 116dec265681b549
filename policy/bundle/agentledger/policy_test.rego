package agentledger.policy_test

import rego.v1

import data.agentledger.policy

manifest := {
	"name": "t", "sensitivity": "balanced",
	"tools": ["shell", "file_read", "file_write", "web_request", "delegate"],
	"network": {"domains": ["github.com", "*.example.com"]},
	"domains_re": `^(?:github\.com|[^.]+(?:\.[^.]+)*\.example\.com)$`,
	"exec": {"allowed_binaries": ["git", "go", "ls", "curl"]},
	"fs": {"read_roots": ["/w"], "write_roots": ["/w"]},
	"secrets": {"paths": ["**/.env"], "env_vars": ["GITHUB_TOKEN"]},
	"budgets": {"max_steps": 10, "max_tool_calls": 5, "max_wall_time_ms": 1000, "max_output_bytes": 100, "tool_timeout_ms": 50, "max_concurrent_deferrals": 1},
	"approval_required": ["file_delete"],
	"compiled_rules": {"deny": [], "allow": [], "ask": []},
	"forbidden": [], "mcp": {"allowed_servers": ["github"], "trusted_sources": ["managed"]},
	"skills": {"trusted_sources": ["managed", "project"]}, "protected": [],
	"data_labels": {"tools": {}, "paths": {}},
}

snapshot := {
	"seq": 3, "steps_consumed": 1, "tool_calls_consumed": 1, "wall_time_ms": 10, "is_tainted": false,
	"taint_kinds": [], "taint_sources": [], "sanitized_keys": [], "loop_violation": "", "loop_trace": [], "data_classes": [],
	"data_findings": [], "permitted_tools": [], "allowed_artifacts": [], "parent_session_id": "", "pending": [],
}

# facts are what the engine would compute from the manifest (policy/facts.go).
facts := {
	"tool_declared": true, "approval_required": false, "hosts_denied": [], "hosts_unlisted": [], "binaries_denied": [],
	"binaries_unlisted": [], "writes_outside": [], "reads_outside": [], "secret_paths": [],
}

shell(cmd, binaries, hosts) := {
	"tool": "shell", "tool_native": "Bash", "commands": [{"binary": b, "argv": [b]} | some b in binaries],
	"binaries": binaries, "urls": [], "hosts": hosts, "paths": [], "write_paths": [], "packages": [],
	"sql": [], "decoded": [], "piped_to_shell": false, "manifest_facts": facts,
}

with_facts(action, f) := object.union(action, {"manifest_facts": object.union(facts, f)})

event(cmd) := {"hook_point": "PreToolUse", "tool_input": {"command": cmd}}

# engine_input is the input the engine would build (policy/gates.go): the
# names of the action's lists that hold anything, and every other gate
# open. A gate is only a necessary condition of the rules that test it, so
# with every gate open the policy decides as it does with the engine's.
engine_input(e, a, s, m) := {"event": e, "action": a, "snapshot": s, "manifest": m, "gates": array.concat(open_gates, present(a))}

open_gates := [
	"over_steps", "over_tool_calls", "over_wall_time", "loop", "external_taint", "permitted_tools",
	"data_classes", "data_findings", "deferred", "rm", "manifest_forbidden",
]

present(a) := array.concat(
	[k | some k, v in object.union(a, object.get(a, "manifest_facts", {})); nonempty(v)],
	[concat("", ["rules_", k]) | some k, v in object.get(a, "rules", {}); nonempty(v)],
)

nonempty(v) if {
	is_array(v)
	count(v) > 0
}

nonempty(v) if {
	is_string(v)
	v != ""
}

test_clean_call_is_allowed if {
	d := policy.decision with input as engine_input(event("git status"), shell("git status", ["git"], []), snapshot, manifest)
	d.decision == "allow"
	d.constraints == {"max_output_bytes": 100, "timeout_ms": 50}
}

test_denied_host_is_egress_deny if {
	a := with_facts(shell("", ["curl"], ["evil.test"]), {"hosts_denied": ["evil.test"]})
	d := policy.decision with input as engine_input(event("curl https://evil.test"), a, snapshot, manifest)
	d.decision == "deny"
	d.reason_code == "EGRESS_DENY"
}

# An unlisted host is left to the host's own flow; a strict manifest asks.
test_unlisted_host_is_not_denied if {
	a := with_facts(shell("", ["curl"], ["docs.python.org"]), {"hosts_unlisted": ["docs.python.org"]})
	d := policy.decision with input as engine_input(event("curl https://docs.python.org/3/"), a, snapshot, manifest)
	d.decision == "allow"
	ds := policy.decision with input as engine_input(event("curl https://docs.python.org/3/"), a, snapshot, object.union(manifest, {"sensitivity": "strict"}))
	ds.decision == "ask"
	ds.reason_code == "EGRESS_UNLISTED"
}

test_unlisted_binary_is_not_denied if {
	a := with_facts(shell("", ["golangci-lint"], []), {"binaries_unlisted": ["golangci-lint"]})
	d := policy.decision with input as engine_input(event("golangci-lint run"), a, snapshot, manifest)
	d.decision == "allow"
	ds := policy.decision with input as engine_input(event("golangci-lint run"), a, snapshot, object.union(manifest, {"sensitivity": "strict"}))
	ds.decision == "ask"
	ds.reason_code == "EXEC_UNLISTED"
}

test_subdomain_allowed_but_not_apex if {
	policy.domain_allowed("docs.example.com") with input as {"manifest": manifest}
	not policy.domain_allowed("example.com") with input as {"manifest": manifest}
}

test_binary_not_allowed if {
	a := with_facts(shell("", ["nmap"], []), {"binaries_denied": ["nmap"]})
	d := policy.decision with input as engine_input(event("nmap x"), a, snapshot, manifest)
	d.reason_code == "EXEC_DENY"
}

test_budget if {
	s := object.union(snapshot, {"tool_calls_consumed": 6})
	d := policy.decision with input as engine_input(event("ls"), shell("", ["ls"], []), s, manifest)
	d.reason_code == "BUDGET_EXCEEDED"
}

test_strictest_wins_over_order if {
	# loop (ask, order 5) and an unknown binary (deny, order 7): deny wins.
	s := object.union(snapshot, {"loop_violation": "identical_call", "loop_trace": [1, 2, 3]})
	a := with_facts(shell("", ["nmap"], []), {"binaries_denied": ["nmap"]})
	d := policy.decision with input as engine_input(event("nmap"), a, s, manifest)
	d.decision == "deny"
	d.reason_code == "EXEC_DENY"
	count(d.reasons) == 2
}

test_taint_leaves_ordinary_shell_and_asks_before_sends if {
	s := object.union(snapshot, {"is_tainted": true, "taint_kinds": ["web"], "taint_sources": [{"seq": 1, "kind": "web", "reason": "tool result"}]})
	d := policy.decision with input as engine_input(event("ls"), shell("", ["ls"], []), s, manifest)
	d.decision == "allow"
	send := object.union(shell("", ["curl"], ["github.com"]), {"sends": ["curl -d sends a body"]})
	d1 := policy.decision with input as engine_input(event("curl -d @x https://github.com"), send, s, manifest)
	d1.reason_code == "TAINTED_TO_HIGH_RISK"
	d1.decision == "ask"
	s2 := object.union(s, {"sanitized_keys": ["k1"]})
	e2 := object.union(event("curl -d @x https://github.com"), {"sanitizer_key": "k1"})
	d2 := policy.decision with input as engine_input(e2, send, s2, manifest)
	d2.decision == "allow"
}

test_local_taint_does_not_block if {
	s := object.union(snapshot, {"is_tainted": true, "taint_kinds": ["local"], "taint_sources": [{"seq": 1, "kind": "local", "reason": "tool result"}]})
	d := policy.decision with input as engine_input(event("ls"), shell("", ["ls"], []), s, manifest)
	d.decision == "allow"
}

test_permissive_defers_a_low_confidence_deny if {
	mp := object.union(manifest, {"sensitivity": "permissive"})
	a := object.union(shell("", ["ls"], []), {"findings": [{"class": "exfiltration", "subject": "x", "detail": "sends x", "confidence": 0.8}]})
	d := policy.decision with input as engine_input(event("ls"), a, snapshot, mp)
	d.decision == "ask"
	d.aarm_decision == "DEFER"
}

test_secret_read_denied if {
	a := with_facts(object.union(shell("", [], []), {"tool": "file_read", "tool_native": "Read", "paths": ["/w/.env"]}), {"secret_paths": ["/w/.env"]})
	d := policy.decision with input as engine_input({"hook_point": "PreToolUse", "tool_input": {"file_path": "/w/.env"}}, a, snapshot, manifest)
	d.reason_code == "SECRET_ACCESS"
}

test_write_outside_roots if {
	a := with_facts(object.union(shell("", [], []), {"tool": "file_write", "tool_native": "Write", "paths": ["/etc/x"], "write_paths": ["/etc/x"]}), {"writes_outside": ["/etc/x"]})
	d := policy.decision with input as engine_input({"hook_point": "PreToolUse", "tool_input": {}}, a, snapshot, manifest)
	d.reason_code == "FS_DENY"
}

test_protected_hook_config if {
	a := object.union(shell("", [], []), {"tool": "file_write", "tool_native": "Write", "paths": ["/w/.claude/settings.json"], "write_paths": ["/w/.claude/settings.json"]})
	d := policy.decision with input as engine_input({"hook_point": "PreToolUse", "tool_input": {}}, a, snapshot, manifest)
	d.reason_code == "PROTECTED_PATH"
}

test_subagent_narrowed if {
	e := {"hook_point": "PreSubAgentSpawn", "requested_tools": ["file_read", "shell", "database"]}
	d := policy.decision with input as {"event": e, "snapshot": snapshot, "manifest": manifest}
	d.decision == "allow"
	d.aarm_decision == "MODIFY"
	d.directives.permitted_tools == ["file_read", "shell"]
}

test_non_tool_hooks_allowed_by_default if {
	d := policy.decision with input as {"event": {"hook_point": "SessionStart"}, "snapshot": snapshot, "manifest": manifest}
	d.decision == "allow"
	d.constraints == {}
}

test_rule_matches_from_the_engine if {
	# An allow rule covering every command: the engine leaves the binary
	# out of binaries_denied and says the rules cover the action.
	a := object.union(shell("", ["nmap"], []), {"rules": {"deny": [], "allow": ["shell(nmap *)"], "ask": []}, "rule_allowed": true, "explicit_allow": "RULE_ALLOW"})
	d := policy.decision with input as engine_input(event("nmap x"), a, snapshot, manifest)
	d.decision == "allow"
	d.explicit == true
	# A rule matching only part of a compound command covers nothing: the
	# other binary is still denied.
	p := object.union(with_facts(shell("", ["git", "nc"], []), {"binaries_denied": ["nc"]}), {"rules": {"deny": [], "allow": ["shell(git *)"], "ask": []}, "rule_allowed": false})
	dp := policy.decision with input as engine_input(event("git log; nc h 1"), p, snapshot, manifest)
	dp.reason_code == "EXEC_DENY"
	a2 := object.union(shell("", ["git"], []), {"rules": {"deny": ["shell(git push -f:*)"], "allow": ["shell(git *)"], "ask": []}})
	d2 := policy.decision with input as engine_input(event("git push -f"), a2, snapshot, manifest)
	d2.reason_code == "RULE_DENY"
}

test_undeclared_tool if {
	a := with_facts(shell("", ["ls"], []), {"tool_declared": false})
	d := policy.decision with input as engine_input(event("ls"), a, snapshot, manifest)
	d.reason_code == "PERMISSION_UNDECLARED"
}

test_approval_remembered_by_allow_always if {
	a := with_facts(object.union(shell("", [], []), {"tool": "file_delete", "tool_native": "Delete"}), {"approval_required": true})
	d := policy.decision with input as engine_input({"hook_point": "PreToolUse", "tool_input": {}}, a, snapshot, manifest)
	d.reason_code == "APPROVAL_REQUIRED"
	s := object.union(snapshot, {"allowed_artifacts": ["Delete"]})
	d2 := policy.decision with input as engine_input({"hook_point": "PreToolUse", "tool_input": {}}, a, s, manifest)
	d2.decision == "allow"
}

test_too_many_open_approvals_deny if {
	a := with_facts(object.union(shell("", [], []), {"tool": "file_delete", "tool_native": "Delete"}), {"approval_required": true})
	s := object.union(snapshot, {"pending": [{"for_seq": 3}]})
	d := policy.decision with input as engine_input({"hook_point": "PreToolUse", "tool_input": {}}, a, s, manifest)
	d.decision == "deny"
	d.reason_code == "DEFERRALS_EXCEEDED"
}

test_identity_required if {
	m := object.union(manifest, {"require_identity": true})
	d := policy.decision with input as engine_input(event("ls"), shell("", ["ls"], []), snapshot, m)
	d.reason_code == "IDENTITY_MISSING"
	# A claim in the event is not an identity.
	claimed := object.union(event("ls"), {"identity": {"principal": "ceo@acme", "agent": "claude-code"}})
	d1 := policy.decision with input as engine_input(claimed, shell("", ["ls"], []), snapshot, m)
	d1.reason_code == "IDENTITY_MISSING"
	id := {"principal": "alice@acme", "agent": "claude-code", "authenticated_by": "token:ci"}
	d2 := policy.decision with input as object.union(engine_input(event("ls"), shell("", ["ls"], []), snapshot, m), {"identity": id})
	d2.decision == "allow"
	d3 := policy.decision with input as engine_input(event("ls"), shell("", ["ls"], []), snapshot, manifest)
	d3.decision == "allow"
}

mcp_action := with_facts(
	{
		"tool": "mcp_call", "tool_native": "mcp__github__get_issue", "mcp_server": "github", "commands": [], "binaries": [], "urls": [],
		"hosts": [], "paths": [], "write_paths": [], "packages": [], "sql": [], "decoded": [], "piped_to_shell": false,
	},
	{"mcp_server_declared": true},
)

test_taint_asks_before_mcp_calls_unless_pinned_read_only if {
	s := object.union(snapshot, {"is_tainted": true, "taint_kinds": ["mcp"], "taint_sources": [{"seq": 1, "kind": "mcp", "reason": "tool result"}]})
	e := {"hook_point": "PreToolUse", "tool_name_native": "mcp__shell__run_command", "tool_input": {"n": 1}}
	a := object.union(mcp_action, {"tool_native": "mcp__shell__run_command"})
	d := policy.decision with input as engine_input(e, a, s, manifest)
	d.decision == "ask"
	d.reason_code == "TAINTED_TO_HIGH_RISK"
	pinned := object.union(e, {"tool_pin": {"status": "pinned", "pinned": "ab", "read_only": true}})
	policy.decision.decision == "allow" with input as engine_input(pinned, a, s, manifest)
	writes := object.union(e, {"tool_pin": {"status": "pinned", "pinned": "ab"}})
	policy.decision.decision == "ask" with input as engine_input(writes, a, s, manifest)

	# Through the gateway, a pinned tool its server does not declare
	# read-only is asked whatever its name.
	pinned_comment := object.union(e, {"tool_name_native": "mcp__github__add_issue_comment", "tool_pin": {"status": "pinned", "pinned": "ab"}})
	policy.decision.decision == "ask" with input as engine_input(pinned_comment, object.union(mcp_action, {"tool_native": "mcp__github__add_issue_comment"}), s, manifest)

	# Reads, comments and the rest of a declared server's work go on.
	policy.decision.decision == "allow" with input as engine_input(object.union(e, {"tool_name_native": "mcp__github__get_issue"}), mcp_action, s, manifest)
	comment := object.union(mcp_action, {"tool_native": "mcp__github__add_issue_comment"})
	policy.decision.decision == "allow" with input as engine_input(object.union(e, {"tool_name_native": "mcp__github__add_issue_comment"}), comment, s, manifest)
}
