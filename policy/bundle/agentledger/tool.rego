# Rules for tool calls (PreToolUse).
package agentledger.policy

import rego.v1

# 1. Forbidden actions, agentledger's own files, manifest deny rules.

# The engine matches forbidden_command_patterns (lib.rego) against the
# call's command lines, compiled once per policy, and lists each match in
# input.action.forbidden_commands ({id, reason, command}).
signals contains sig(1, "FORBIDDEN", "deny", "DENY", "tool_execution", "critical", sprintf("forbidden: %s (%s)", [f.reason, f.command]), [f.command], 1) if {
	input.event.hook_point == "PreToolUse"
	"forbidden_commands" in input.gates
	some f in input.action.forbidden_commands
}

signals contains sig(1, "FORBIDDEN", "deny", "DENY", "tool_execution", "critical", sprintf("forbidden: recursive delete of %s", [t]), [c], 1) if {
	input.event.hook_point == "PreToolUse"
	"rm" in input.gates
	some cmd in input.action.commands
	cmd.binary == "rm"
	c := concat(" ", cmd.argv)
	regex.match(`\s-(-recursive|[a-zA-Z]*[rR][a-zA-Z]*)(\s|$)`, c)
	some t in array.slice(cmd.argv, 1, count(cmd.argv))
	t in dangerous_rm_targets
}

signals contains sig(1, "FORBIDDEN", "deny", "DENY", "tool_execution", "critical", sprintf("forbidden: %s", [p.reason]), [q], 1) if {
	input.event.hook_point == "PreToolUse"
	"sql" in input.gates
	some q in input.action.sql
	some p in forbidden_sql_patterns
	regex.match(p.re, q)
}

signals contains sig(1, "FORBIDDEN", "deny", "DENY", "tool_execution", "critical", "forbidden: downloaded code piped into an interpreter", input.action.urls, 1) if {
	input.event.hook_point == "PreToolUse"
	input.action.piped_to_shell == true
}

signals contains sig(1, "FORBIDDEN", "deny", "DENY", "tool_execution", "critical", sprintf("forbidden (%s): %s", [f.id, f.reason]), [s], 1) if {
	input.event.hook_point == "PreToolUse"
	"manifest_forbidden" in input.gates
	some f in input.manifest.forbidden
	f.tool == input.action.tool
	some s in all_subjects
	regex.match(f.match, s)
}

signals contains sig(1.1, "PROTECTED_PATH", "deny", "DENY", "persistence", "critical", sprintf("%s is agentledger's or the host's own configuration", [p]), [p], 1) if {
	input.event.hook_point == "PreToolUse"
	"write_paths" in input.gates
	some p in input.action.write_paths
	glob_any(protected_globs | {g | some g in input.manifest.protected}, p)
}

signals contains sig(1.1, "PROTECTED_PATH", "deny", "DENY", "persistence", "critical", h, [h], 1) if {
	input.event.hook_point == "PreToolUse"
	"protected_hits" in input.gates
	some h in object.get(action, "protected_hits", [])
}

# What the engine's reading of the call found (input.action.findings; see
# aarts.Finding): attacks recognised by what a command does, whatever its
# spelling. A finding's confidence decides, with the sensitivity, whether
# it denies or asks.
finding_signals := {
	"destructive_delete": {"order": 1, "code": "DESTRUCTIVE", "category": "tool_execution"},
	"remote_shell": {"order": 1, "code": "REMOTE_SHELL", "category": "privilege_escalation"},
	"download_exec": {"order": 1, "code": "DOWNLOAD_EXEC", "category": "supply_chain"},
	"persistence": {"order": 1.1, "code": "PERSISTENCE", "category": "persistence"},
	"force_push": {"order": 1.2, "code": "FORCE_PUSH", "category": "tool_execution"},
	"exfiltration": {"order": 1.3, "code": "DATA_EXFILTRATION", "category": "data_exfiltration"},
	"secret_read": {"order": 8, "code": "SECRET_ACCESS", "category": "data_exfiltration"},
	"secret_discovery": {"order": 8, "code": "SECRET_DISCOVERY", "category": "data_exfiltration"},
	"opaque_code": {"order": 7.5, "code": "OPAQUE_CODE", "category": "tool_execution"},
	"package_source": {"order": 8, "code": "PACKAGE_SUSPECT", "category": "supply_chain"},
	"library_load": {"order": 7.5, "code": "LIBRARY_LOAD", "category": "tool_execution"},
	"discard_work": {"order": 1.2, "code": "DISCARDS_WORK", "category": "tool_execution"},
	"teardown": {"order": 1.2, "code": "TEARDOWN", "category": "tool_execution"},
}

signals contains sig(fs.order, fs.code, "deny", "DENY", fs.category, "critical", f.detail, [f.subject], f.confidence) if {
	input.event.hook_point == "PreToolUse"
	"findings" in input.gates
	some f in object.get(action, "findings", [])
	fs := finding_signals[f.class]
}

# Running a file an earlier tool call of the session downloaded: the
# two-step form of curl | sh, whatever the domain.
signals contains sig(1, "DOWNLOAD_EXEC", "deny", "DENY", "supply_chain", "critical", sprintf("runs %s, downloaded earlier in this session", [p]), [p], 1) if {
	input.event.hook_point == "PreToolUse"
	"executes" in input.gates
	some p in object.get(action, "executes", [])
	p in object.get(input.snapshot, "downloaded", [])
}

# A tool the MCP gateway holds in quarantine — changed since it was pinned,
# or new and not yet approved — is never called until an approver re-pins
# it (the gateway's PreMCPConnect ask).
signals contains sig(1.1, "TOOL_CHANGED", "deny", "DENY", "supply_chain", "critical", sprintf("tool %s changed since it was pinned: quarantined until an approver re-pins it", [input.event.tool_name_native]), [input.event.tool_name_native], 1) if {
	input.event.hook_point == "PreToolUse"
	input.event.tool_pin.status == "changed"
}

signals contains sig(1.1, "TOOL_CHANGED", "deny", "DENY", "supply_chain", "critical", sprintf("tool %s appeared after the server's tools were pinned: quarantined until an approver pins it", [input.event.tool_name_native]), [input.event.tool_name_native], 1) if {
	input.event.hook_point == "PreToolUse"
	input.event.tool_pin.status == "unpinned"
}

# An MCP server the manifest does not name (mcp.allowed_servers, or a tool
# entry mcp__SERVER__...) is asked about.
signals contains sig(10.5, "MCP_UNDECLARED", "ask", "STEP_UP", "tool_execution", "warning", sprintf("MCP server %s is not declared in manifest %s", [input.action.mcp_server, input.manifest.name]), [input.action.mcp_server], 1) if {
	input.event.hook_point == "PreToolUse"
	"mcp_server" in input.gates
	input.action.mcp_server != ""
	not input.action.manifest_facts.mcp_server_declared
}

signals contains sig(1.2, "RULE_DENY", "deny", "DENY", "tool_execution", "critical", sprintf("denied by rule %s", [r]), [], 1) if {
	input.event.hook_point == "PreToolUse"
	"rules_deny" in input.gates
	not "rule_conflicts" in input.gates
	some r in input.action.rules.deny
}

# Rules of one priority that disagree (AARM R3): every matching deny rule
# is met by an allow rule of the same specificity. Neither wins: the call
# is deferred for a person to decide, naming both.
signals contains sig(1.2, "RULE_CONFLICT", "ask", "DEFER", "tool_execution", "warning", sprintf("rules %s and %s match with the same priority and disagree", [c[0], c[1]]), [], 1) if {
	input.event.hook_point == "PreToolUse"
	"rule_conflicts" in input.gates
	some c in input.action.rule_conflicts
}

# The manifest's allow rules cover the whole action, part by part (every
# simple command of a command line, every path of a file call; see
# policy/allow.go): then a matching ask rule does not ask.
allowed_by_rule if input.action.rule_allowed == true

# 1. Identity (AARM R6), when the manifest requires it.

signals contains sig(1.3, "IDENTITY_MISSING", "deny", "DENY", "privilege_escalation", "warning", "the sender was not authenticated as acting for a principal and an agent (a token with principal and agent)", [], 1) if {
	input.event.hook_point == "PreToolUse"
	input.manifest.require_identity == true
	not identified
}

# Identity is what authentication established (input.identity), never the
# event's own identity block, which is a claim.
identified if {
	input.identity.principal != ""
	input.identity.agent != ""
}

# A resolution of deny_always or deny_similar holds for the session.
signals contains sig(1.4, "DENY_ALWAYS", "deny", "DENY", "tool_execution", "critical", sprintf("%s was denied for the rest of the session", [input.action.denied_always]), [input.action.denied_always], 1) if {
	input.event.hook_point == "PreToolUse"
	"denied_always" in input.gates
	input.action.denied_always != ""
}

# A sub-agent whose parent session is unknown in the tenant (never
# recorded, another tenant's, or one that never spawned it) has no ceiling
# to inherit: it acts on nothing.
signals contains sig(1.5, "PARENT_UNKNOWN", "deny", "DENY", "privilege_escalation", "critical", sprintf("parent session %s is unknown or never spawned this sub-agent", [input.snapshot.inherited.parent_session_id]), [], 1) if {
	input.event.hook_point in {"PreToolUse", "PreSubAgentSpawn", "PreMCPConnect"}
	input.snapshot.inherited.known == false
}

# 2. The tool must be declared.

signals contains sig(2, "PERMISSION_UNDECLARED", "deny", "DENY", "tool_execution", "warning", sprintf("tool %s (%s) is not declared in manifest %s", [input.action.tool_native, input.action.tool, input.manifest.name]), [input.action.tool_native], 1) if {
	input.event.hook_point == "PreToolUse"
	input.action.manifest_facts.tool_declared == false
}

signals contains sig(2, "PERMISSION_UNDECLARED", "deny", "DENY", "privilege_escalation", "critical", sprintf("sub-agent may use only %v, not %s", [input.snapshot.permitted_tools, input.action.tool]), [input.action.tool_native], 1) if {
	input.event.hook_point == "PreToolUse"
	"permitted_tools" in input.gates
	count(input.snapshot.permitted_tools) > 0
	not input.action.tool in input.snapshot.permitted_tools
	not input.snapshot.inherited.known == false
}

# 3. Egress: hosts come from the engine's reading of the input.

# Tools that reach the network with what their input names; a URL inside
# the content of a file write is not egress.
network_tools := {"web_request", "shell", "browser", "mcp_call", "package_install", "code_exec", "database"}

signals contains sig(3, "EGRESS_DENY", "deny", "DENY", "network_egress", "critical", sprintf("%s is a denied network domain", [h]), [h], 1) if {
	input.event.hook_point == "PreToolUse"
	"hosts_denied" in input.gates
	input.action.tool in network_tools
	some h in input.action.manifest_facts.hosts_denied
}

# A domain the manifest neither vouches for nor denies is no harm by itself
# (documentation, an API under development): the host's own permission
# flow decides, and only a strict manifest asks. Data sent there is judged
# as leaving the allowed destinations (9).
signals contains sig(3, "EGRESS_UNLISTED", "ask", "STEP_UP", "network_egress", "warning", sprintf("%s is not among the manifest's network domains", [h]), [h], 1) if {
	input.event.hook_point == "PreToolUse"
	m.sensitivity == "strict"
	"hosts_unlisted" in input.gates
	input.action.tool in network_tools
	some h in input.action.manifest_facts.hosts_unlisted
}

# 4. Budgets.

budget_hooks := {"PreToolUse", "PreLLMRequest", "PreSubAgentSpawn"}

# Budgets are opt-in: 0 (the default) sets no limit.
signals contains sig(4, "BUDGET_EXCEEDED", "deny", "DENY", "resource_abuse", "warning", sprintf("steps %d exceed the budget of %d", [input.snapshot.steps_consumed, input.manifest.budgets.max_steps]), [], 1) if {
	"over_steps" in input.gates
	hook in budget_hooks
	input.manifest.budgets.max_steps > 0
	input.snapshot.steps_consumed > input.manifest.budgets.max_steps
}

signals contains sig(4, "BUDGET_EXCEEDED", "deny", "DENY", "resource_abuse", "warning", sprintf("tool calls %d exceed the budget of %d", [input.snapshot.tool_calls_consumed, input.manifest.budgets.max_tool_calls]), [], 1) if {
	"over_tool_calls" in input.gates
	hook in budget_hooks
	input.manifest.budgets.max_tool_calls > 0
	input.snapshot.tool_calls_consumed > input.manifest.budgets.max_tool_calls
}

signals contains sig(4, "BUDGET_EXCEEDED", "deny", "DENY", "resource_abuse", "warning", sprintf("wall time %d ms exceeds the budget of %d ms", [input.snapshot.wall_time_ms, input.manifest.budgets.max_wall_time_ms]), [], 1) if {
	"over_wall_time" in input.gates
	hook in budget_hooks
	input.manifest.budgets.max_wall_time_ms > 0
	input.snapshot.wall_time_ms > input.manifest.budgets.max_wall_time_ms
}

# 5. Loops.

signals contains sig(5, "LOOP_DETECTED", "ask", "STEP_UP", "resource_abuse", "warning", sprintf("loop detected (%s) at seqs %v", [input.snapshot.loop_violation, input.snapshot.loop_trace]), [], 1) if {
	"loop" in input.gates
	hook in {"PreToolUse", "PreLLMRequest"}
	input.snapshot.loop_violation != ""
}

# 6. Taint: content from outside the session's own work (web pages, MCP
# results, memory, sub-agents) may carry instructions aimed at the agent.
# It narrows only what could carry data out or run what was read: a call
# that sends data (a body, an upload, a long query, a raw socket, a name
# built from data), one that runs code it decodes or downloaded, or one
# that writes a file a host loads as instructions. Those are asked — taint
# says the call may be steered, not that it is harm — unless the content
# was sanitized under the key the call carries. Builds, tests, reads and
# edits in the workspace stay as they were: agents read documentation all
# day, and a page read must not stop the next go test. Local tool output
# taints the session for the record only.

sanitized if {
	k := input.event.sanitizer_key
	k in input.snapshot.sanitized_keys
}

external_taint := concat(", ", [k | some k in input.snapshot.taint_kinds; k != "local"])

signals contains sig(6, "TAINTED_TO_HIGH_RISK", "ask", "STEP_UP", "prompt_injection", "warning", sprintf("session is tainted by %s content and this call %s", [external_taint, r]), [], 1) if {
	input.event.hook_point == "PreToolUse"
	"external_taint" in input.gates
	external_taint != ""
	not sanitized
	some r in tainted_risks
}

tainted_risks contains "sends data out" if {
	sends_out
	not read_only_tool
}

# An MCP tool named for running a command or code (execute, run_command,
# eval, shell, ...) runs what it is given: after taint it is asked, unless
# the gateway pinned it read-only. Other tools of a server the manifest
# declares (reads, tests, a review comment, a pull request) go on: a server
# the manifest does not declare is a send already, and sensitive data read
# before a send is exfiltration (9).
tainted_risks contains sprintf("runs what it passes to %s", [input.action.tool_native]) if {
	input.action.tool == "mcp_call"
	not read_only_tool
	mcp_running_name
}

# Through the MCP gateway a tool's server declares what it does, and the
# gateway pins that: after taint, a pinned tool named for sending or
# publishing (create_issue, post_message, ...) that its server does not
# declare read-only is asked (it may carry what the session read to
# others); its tests and builds (run_tests) go on.
tainted_risks contains sprintf("passes what it is given to %s, which its server does not declare read-only", [input.action.tool_native]) if {
	input.action.tool == "mcp_call"
	input.event.tool_pin.status == "pinned"
	not read_only_tool
	mcp_sending_name
}

mcp_sending_name if regex.match(`__(?:[a-z0-9]+_)*(?:create|update|delete|remove|push|send|post|write|comment|reply|merge|publish|upload|share|invite|add|set|put|patch|close|approve|transfer)(?:_|$)`, lower(input.action.tool_native))

mcp_running_name if regex.match(`__(?:[a-z0-9]+_)*(?:execute|exec|eval|shell|run_command|run_script|run_code|run_shell|command|terminal)(?:_|$)`, lower(input.action.tool_native))

tainted_risks contains "runs code it decodes" if {
	"decoded" in input.gates
	input.action.tool in exec_tools
}

tainted_risks contains sprintf("runs %s, downloaded earlier", [p]) if {
	"executes" in input.gates
	some p in input.action.executes
	p in object.get(input.snapshot, "downloaded", [])
}

tainted_risks contains "writes a file a host loads as instructions" if "memory_writes" in input.gates

# A tool the MCP gateway holds pinned whose server declares it read-only
# and closed-world (annotations readOnlyHint true, openWorldHint false)
# can neither persist nor carry out what it is given; the pin covers the
# annotations, so a server that changes them has the tool quarantined.
# Only the gateway sets tool_pin.
read_only_tool if {
	input.action.tool == "mcp_call"
	input.event.tool_pin.status == "pinned"
	input.event.tool_pin.read_only == true
}

# 7. Binaries.

signals contains sig(7, "EXEC_DENY", "deny", "DENY", "tool_execution", "warning", sprintf("binary %s is denied", [b]), [b], 1) if {
	input.event.hook_point == "PreToolUse"
	"binaries_denied" in input.gates
	input.action.tool in exec_tools
	some b in input.action.manifest_facts.binaries_denied
}

# A binary the manifest does not list is no harm by itself (a linter, a
# container tool, the project's own program): the host's own permission
# flow decides, and only a strict manifest asks.
signals contains sig(7, "EXEC_UNLISTED", "ask", "STEP_UP", "tool_execution", "warning", sprintf("binary %s is not among the manifest's binaries", [b]), [b], 1) if {
	input.event.hook_point == "PreToolUse"
	m.sensitivity == "strict"
	"binaries_unlisted" in input.gates
	input.action.tool in exec_tools
	some b in input.action.manifest_facts.binaries_unlisted
}

exec_tools := {"shell", "package_install", "code_exec"}

# Data sent to a destination the manifest does not list (an upload, a
# request body, a raw socket) is asked about, whatever the session read;
# after sensitive data it is exfiltration (9).
signals contains sig(3.5, "EGRESS_SENDS", "ask", "STEP_UP", "data_exfiltration", "warning", sprintf("sends data to %s, which the manifest does not list%s", [d, how]), [d], 1) if {
	input.event.hook_point == "PreToolUse"
	sends_out
	destination_not_allowed
	input.action.tool in network_tools
	d := unlisted_destination
	how := sends_how
}

# How a call sends, when the reading found a way beyond its arguments.
sends_how := sprintf(" (%s)", [concat("; ", input.action.sends)]) if "sends" in input.gates

else := ""

unlisted_destination := concat(", ", input.action.manifest_facts.hosts_unlisted) if "hosts_unlisted" in input.gates

else := sprintf("MCP server %s", [input.action.mcp_server]) if input.action.mcp_server != ""

else := "an address built at run time"

# 8. Files, secrets, packages.

# A write outside the manifest's write roots is denied where it changes
# the system (a system directory: /etc, /usr, /boot, ...) and asked
# elsewhere (/opt/tools, /srv/data: not harm by itself, but not granted).
# The temporary directories are always writable.
signals contains sig(8, "FS_DENY", "deny", "DENY", "persistence", "critical", sprintf("write to %s is outside the write roots, in a system directory", [p]), [p], 1) if {
	input.event.hook_point == "PreToolUse"
	"writes_outside" in input.gates
	some p in input.action.manifest_facts.writes_outside
}

signals contains sig(8, "FS_UNLISTED", "ask", "STEP_UP", "tool_execution", "warning", sprintf("write to %s is outside the write roots", [p]), [p], 1) if {
	input.event.hook_point == "PreToolUse"
	"writes_unlisted" in input.gates
	some p in input.action.manifest_facts.writes_unlisted
}

signals contains sig(8, "FS_DENY", "deny", "DENY", "data_exfiltration", "warning", sprintf("read of %s is outside the read roots", [p]), [p], 1) if {
	input.event.hook_point == "PreToolUse"
	"reads_outside" in input.gates
	some p in input.action.manifest_facts.reads_outside
}

signals contains sig(8, "SECRET_ACCESS", "deny", "DENY", "data_exfiltration", "critical", sprintf("%s holds secrets", [p]), [p], 1) if {
	input.event.hook_point == "PreToolUse"
	"secret_paths" in input.gates
	some p in input.action.manifest_facts.secret_paths
}

signals contains sig(8, "SECRET_ACCESS", "deny", "DENY", "data_exfiltration", "critical", sprintf("command reads secret variable %s", [v]), [v], 1) if {
	input.event.hook_point == "PreToolUse"
	"secret_env_refs" in input.gates
	some v in object.get(action, "secret_env_refs", [])
}

signals contains sig(8, "PACKAGE_SUSPECT", "deny", "DENY", "supply_chain", "critical", sprintf("package %s:%s looks like %s", [p.manager, p.name, p.suspect]), [concat(":", [p.manager, p.name])], 0.75) if {
	input.event.hook_point == "PreToolUse"
	"packages" in input.gates
	some p in input.action.packages
	p.suspect != ""
}

# 9. Composition: sensitive data read earlier, now an external send.

sends_out if {
	input.action.tool == "web_request"
	method := upper(object.get(input.event.tool_input, "method", "GET"))
	method in {"POST", "PUT", "PATCH"}
}

sends_out if {
	some cmd in input.action.commands
	cmd.binary in {"curl", "wget", "nc", "ncat", "scp", "rsync", "sftp"}
	some a in cmd.argv
	a in {"-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "-F", "--form", "-T", "--upload-file", "--post-file", "--post-data", "-X"}
}

sends_out if {
	input.action.tool == "mcp_call"
	count(input.action.urls) > 0
}

# What the engine's reading found the call sends out (input.action.sends:
# uploads from standard input, long query strings and headers, raw
# sockets, DNS names built from data, interpreter code that connects).
sends_out if "sends" in input.gates

# MCP arguments go to a server the manifest does not name.
sends_out if {
	input.action.tool == "mcp_call"
	not input.action.manifest_facts.mcp_server_declared
}

# A destination the manifest does not allow: a denied host, an undeclared
# MCP server, or none known (a name built from data, a socket).
destination_not_allowed if "hosts_unlisted" in input.gates

destination_not_allowed if "hosts_denied" in input.gates

destination_not_allowed if {
	input.action.tool == "mcp_call"
	not input.action.manifest_facts.mcp_server_declared
}

destination_not_allowed if {
	sends_out
	count(input.action.hosts) == 0
	input.action.tool != "mcp_call"
}

# The classes a send may not carry: the sensitive ones anywhere, INTERNAL
# toward a destination the manifest does not allow.
exfil_classes contains c if {
	some c in input.snapshot.data_classes
	c in sensitive_classes
}

exfil_classes contains "INTERNAL" if {
	"INTERNAL" in input.snapshot.data_classes
	destination_not_allowed
}

signals contains sig(9, "DATA_EXFILTRATION", "deny", "DENY", "data_exfiltration", "critical", sprintf("session read %s data and this call sends data out", [concat(", ", sort(exfil_classes))]), input.action.hosts, 0.9) if {
	input.event.hook_point == "PreToolUse"
	"data_classes" in input.gates
	sends_out
	count(exfil_classes) > 0
}

# 10. Approval.

signals contains sig(10, "APPROVAL_REQUIRED", "ask", "STEP_UP", "tool_execution", "warning", sprintf("%s needs a human's approval", [input.action.tool_native]), [input.action.tool_native], 1) if {
	input.event.hook_point == "PreToolUse"
	input.action.manifest_facts.approval_required == true
	not input.action.tool_native in input.snapshot.allowed_artifacts
}

signals contains sig(10, "RULE_ASK", "ask", "STEP_UP", "tool_execution", "warning", sprintf("rule %s asks for approval", [r]), [], 1) if {
	input.event.hook_point == "PreToolUse"
	"rules_ask" in input.gates
	not allowed_by_rule
	some r in input.action.rules.ask
}

# 11. Context not yet known (AARM R3): a sub-agent's action before its
# delegation was recorded is deferred.

signals contains sig(11, "CONTEXT_PENDING", "ask", "DEFER", "privilege_escalation", "warning", "sub-agent action before its delegation is on record", [], 1) if {
	input.event.hook_point == "PreToolUse"
	input.event.is_sub_agent == true
	input.snapshot.parent_session_id == ""
	count(input.snapshot.permitted_tools) == 0
}

# 6.5 Intent alignment (AARM R3): the user's latest request asks only to
# read, explain or summarise ("summarise the README, change nothing"), and
# this call changes something — writes or removes files, changes the
# repository, installs, sends. A human decides, reading the request quoted.

signals contains sig(6.5, "INTENT_MISMATCH", "ask", "STEP_UP", "tool_execution", "warning", sprintf("the request was %q, which asks only to read; this call %s", [input.snapshot.intent.request, concat(", ", input.action.changes)]), [], 1) if {
	input.event.hook_point == "PreToolUse"
	input.snapshot.intent.read_only == true
	count(object.get(input.action, "changes", [])) > 0
}

# 11. A call that uses what a call still waiting for a decision would write
# or download (AARM R4.11) waits with it: it is deferred, naming the call it
# depends on. Calls that use nothing of it go on.

# A call no one in the host was asked about (no_prompt: the host was
# answered deny) is not running there: nothing uses its outputs while it
# waits for an approver, so nothing waits with it.
deferred_outputs contains [p, d.for_seq] if {
	some d in array.concat(input.snapshot.pending, object.get(input.snapshot, "host_asks", []))
	not d.no_prompt
	some p in object.get(d, "outputs", [])
}

signals contains sig(11, "DEPENDS_ON_DEFERRED", "ask", "DEFER", "tool_execution", "warning", sprintf("uses %s, which the call at seq %d would write and which still waits for a decision", [p, seq]), [p], 1) if {
	input.event.hook_point == "PreToolUse"
	"deferred" in input.gates
	some [p, seq] in deferred_outputs
	some used in array.concat(object.get(input.action, "paths", []), object.get(input.action, "executes", []))
	names_path(used, p)
}

# A waiting file is waiting under every name that resolves to it: itself,
# a glob that takes it in (sh scripts/*.sh, $(ls scripts/*)), what find
# -exec runs on each match ({}).
names_path(used, p) if used == p

names_path(used, p) if {
	regex.match(`[*?\[]`, used)
	glob.match(used, ["/"], p)
}

names_path(used, p) if {
	contains(used, "{}")
	glob.match(replace(used, "{}", "**"), ["/"], p)
}

# 10.6 The host will not prompt. A call the engine cannot vouch for (a
# caveat: a script whose code is not read, code on a pipe, a program named
# by configuration or a variable, a write to a file other programs run)
# is left to the host's own prompt; where the host reports that it will
# not prompt — Claude Code's (and Codex's) bypassPermissions and auto
# modes, acceptEdits for file edits — the engine asks instead.
host_will_not_prompt if object.get(input.event, "permission_mode", "") in {"bypassPermissions", "auto"}

host_will_not_prompt if {
	object.get(input.event, "permission_mode", "") == "acceptEdits"
	input.action.tool in {"file_write", "file_edit"}
}

signals contains sig(10.6, "HOST_WILL_NOT_ASK", "ask", "STEP_UP", "tool_execution", "warning", sprintf("%s; the host runs in %s mode and would not ask", [c, input.event.permission_mode]), [], 1) if {
	input.event.hook_point == "PreToolUse"
	"caveats" in input.gates
	host_will_not_prompt
	some c in input.action.caveats
	not c in object.get(input.action, "routine_caveats", [])
}
