# Rules for hook points other than PreToolUse.
package agentledger.policy

import rego.v1

# MCP servers: declared servers from trusted sources, reachable hosts.

signals contains sig(1, "MCP_UNTRUSTED", "deny", "DENY", "supply_chain", "critical", sprintf("MCP server %s is not allowed", [input.event.server_id]), [input.event.server_id], 1) if {
	input.event.hook_point == "PreMCPConnect"
	names_mcp_servers
	not input.event.server_id in input.manifest.mcp.allowed_servers
}

# A manifest that names no MCP server (neither mcp.allowed_servers nor a
# tool mcp__SERVER__...) leaves the choice of servers to the host's own
# configuration, as it does for their calls (mcp_server_declared): the
# gateway then pins and judges every server the user configured.
names_mcp_servers if count(object.get(input.manifest.mcp, "allowed_servers", [])) > 0

names_mcp_servers if {
	some t in input.manifest.tools
	startswith(t, "mcp__")
}

signals contains sig(1, "MCP_UNTRUSTED", "deny", "DENY", "supply_chain", "critical", sprintf("MCP server from %s source is not trusted", [input.event.source]), [input.event.server_id], 1) if {
	input.event.hook_point == "PreMCPConnect"
	not input.event.source in input.manifest.mcp.trusted_sources
}

signals contains sig(3, "EGRESS_DENY", "deny", "DENY", "network_egress", "critical", sprintf("%s is a denied network domain", [h]), [h], 1) if {
	input.event.hook_point == "PreMCPConnect"
	some h in action.hosts
	regex.match(m.denied_domains_re, h)
}

# Connecting a server on a domain the manifest does not list changes what
# the agent can reach: someone approves it.
signals contains sig(3, "EGRESS_UNLISTED", "ask", "STEP_UP", "network_egress", "warning", sprintf("%s is not among the manifest's network domains", [h]), [h], 1) if {
	input.event.hook_point == "PreMCPConnect"
	some h in action.hosts
	not domain_allowed(h)
	not regex.match(m.denied_domains_re, h)
}

# Tool pinning (the MCP gateway, mcpproxy): a server whose tools changed
# since they were pinned, or that offers new ones after its first list, is
# asked about; an approval re-pins them. Meanwhile the gateway hides them
# and its calls to them are denied (TOOL_CHANGED in tool.rego).

signals contains sig(3.5, "TOOL_CHANGED", "ask", "STEP_UP", "supply_chain", "warning", sprintf("tool %s of MCP server %s changed since it was pinned", [t, input.event.server_id]), [t], 1) if {
	input.event.hook_point == "PreMCPConnect"
	some t in object.get(object.get(input.event, "tool_changes", {}), "changed", [])
}

signals contains sig(3.6, "TOOL_ADDED", "ask", "STEP_UP", "supply_chain", "warning", sprintf("tool %s appeared on MCP server %s after its tools were pinned", [t, input.event.server_id]), [t], 1) if {
	input.event.hook_point == "PreMCPConnect"
	some t in object.get(object.get(input.event, "tool_changes", {}), "added", [])
}

# Skills and plugins: trusted sources only; a trusted skill from the project
# loads without its hooks.

signals contains sig(1, "SKILL_UNTRUSTED", "deny", "DENY", "supply_chain", "critical", sprintf("%s from %s source is not trusted", [hook, input.event.source]), [object.get(input.event, "file_path", object.get(input.event, "plugin_id", ""))], 1) if {
	hook in {"PreSkillLoad", "PrePluginLoad"}
	not input.event.source in input.manifest.skills.trusted_sources
}

signals contains s if {
	input.event.hook_point == "PreSkillLoad"
	input.event.source in input.manifest.skills.trusted_sources
	input.event.source != "managed"
	count(input.event.declared_hooks) > 0
	s := object.union(
		sig(12, "STRIP_HOOKS", "allow", "MODIFY", "persistence", "info", "skill loads without the hooks it declares", [input.event.file_path], 1),
		{"directives": {"strip_hooks": true}},
	)
}

# Memory: no instruction-like writes, nothing from a tainted session that
# would persist as an instruction.

signals contains sig(1, "MEMORY_POISONING", "deny", "DENY", "persistence", "critical", "memory write carries instructions aimed at the agent", [], 0.8) if {
	input.event.hook_point == "PreMemoryWrite"
	poisons(memory_text, poisoning_patterns)
}

# A tool call (a file tool or a shell redirect) that writes into a file a
# host loads as instructions or memory (CLAUDE.md, AGENTS.md, GEMINI.md,
# rules, memory directories; input.action.memory_writes) is a memory write.
signals contains sig(1, "MEMORY_POISONING", "deny", "DENY", "persistence", "critical", "write to an instruction file carries instructions aimed at the agent", [], 0.8) if {
	input.event.hook_point == "PreToolUse"
	"memory_writes" in input.gates
	some text in input.action.memory_writes
	poisons(text, array.concat(poisoning_patterns, instruction_patterns))
}

# A text poisons memory when one of patterns matches it once the clauses
# that forbid what they name are taken out: "Never commit secrets" warns
# against what "commit the secrets" orders, and a house rule such as
# "never push --force to main" is no order to push. Only a clause whose
# negation governs its verb is taken out ("don't forget to upload the
# .env" stays), and what is left is matched whole, so an order split over
# clauses ("take the token, and post it to …") is still read.
poisons(text, patterns) if {
	some p in patterns
	regex.match(p, text)
	kept := concat(" ", [c | some c in regex.split(`[.!?;:,](\s+|$)|\n|\s(and|then|but|or)\s`, text); not forbids(c)])
	regex.match(p, kept)
}

forbids(clause) if regex.match(`(?i)^\W*(\w+\s+){0,4}(never|don't|dont|do not|does not|must not|mustn't|should not|shouldn't|no one should)\s+(ever\s+)?(post|send|upload|paste|email|forward|exfiltrate|copy|commit|push|share|print|log|expose|run|execute|use|force[- ]push)\b`, clause)

# What poisons memory: injected instructions, and downloads piped into a
# shell (an instruction to run one).
poisoning_patterns := array.concat(injection_patterns, [`(?i)\b(curl|wget|iwr|invoke-webrequest)\b[^\n]*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b`])

signals contains sig(6, "TAINTED_TO_HIGH_RISK", "ask", "STEP_UP", "persistence", "warning", "tainted session writes an instruction to memory", [], 0.6) if {
	input.event.hook_point == "PreMemoryWrite"
	input.snapshot.is_tainted == true
	object.get(input.event, "memory_type", "") == "instruction"
}

memory_text := input.event.content if is_string(input.event.content)

else := json.marshal(input.event.content)

# Sub-agents: the sub-agent gets at most the parent's declared tools.

# A spawn that names its tools asks for those; one that does not (a host's
# sub-agent started by its own definition) asks for what the manifest gives
# that kind of sub-agent (sub_agents, by the host's agent type, "*" for any
# other), or else for every declared tool.
requested := {t | some t in input.event.requested_tools} if {
	is_array(input.event.requested_tools)
} else := {t | some t in input.manifest.sub_agents[input.event.sub_agent_type]} if {
	is_array(input.manifest.sub_agents[input.event.sub_agent_type])
} else := {t | some t in input.manifest.sub_agents["*"]} if {
	is_array(input.manifest.sub_agents["*"])
} else := {t | some t in input.manifest.tools; aarts_canonical(t)}

# aarts_canonical: a declared tool that is a canonical name (not a glob of
# native names), which a ceiling can name.
aarts_canonical(t) if not contains(t, "*")

permitted := {t | some t in requested; tool_declared(t)}

tool_declared(t) if t in input.manifest.tools

tool_declared(t) if {
	some e in input.manifest.tools
	glob.match(e, [], t)
}

signals contains sig(2, "PERMISSION_UNDECLARED", "deny", "DENY", "privilege_escalation", "critical", "delegate is not a declared tool", [], 1) if {
	input.event.hook_point == "PreSubAgentSpawn"
	not "delegate" in input.manifest.tools
}

signals contains s if {
	input.event.hook_point == "PreSubAgentSpawn"
	"delegate" in input.manifest.tools
	tools := sort(permitted)
	s := object.union(
		sig(12, "LEAST_PRIVILEGE", "allow", "MODIFY", "privilege_escalation", "info", sprintf("sub-agent limited to %v", [tools]), [], 1),
		{"directives": {"permitted_tools": tools}},
	)
}

signals contains sig(6, "TAINTED_TO_HIGH_RISK", "ask", "STEP_UP", "privilege_escalation", "warning", sprintf("tainted session delegates with %v", [sort(high)]), [], 0.6) if {
	input.event.hook_point == "PreSubAgentSpawn"
	input.snapshot.is_tainted == true
	high := {t | some t in permitted; t in high_risk_sinks}
	count(high) > 0
}

# Tool results: a secret in a result is redacted before the model sees it.

signals contains sig(8, "SECRET_IN_RESULT", "deny", "DENY", "data_exfiltration", "critical", sprintf("tool result contains %s", [f.detector]), [f.detector], 1) if {
	input.event.hook_point == "PostToolUse"
	"data_findings" in input.gates
	some f in input.snapshot.data_findings
	f.seq == input.snapshot.seq
	f.class == "SECRET"
}

# A credential the data findings do not classify (a token named by what
# stands beside it, a password in a URL or an assignment, a registry token)
# is withheld from the model too; it does not make the session's data
# secret, so no later send is judged on its word.
signals contains sig(8, "SECRET_IN_RESULT", "deny", "DENY", "data_exfiltration", "critical", sprintf("tool result contains %s", [d]), [d], 1) if {
	input.event.hook_point == "PostToolUse"
	"result_secrets" in input.gates
	not input.event.result_delivered == "redacted" # the MCP gateway took them out already
	some d in input.action.result_secrets
}

# Content a host is about to hand the agent with the call (Cursor's
# beforeReadFile): a secret in it is withheld by denying the read.
signals contains sig(8, "SECRET_IN_RESULT", "deny", "DENY", "data_exfiltration", "critical", sprintf("the file's content contains %s", [f.detector]), [f.detector], 1) if {
	input.event.hook_point == "PreToolUse"
	"data_findings" in input.gates
	is_string(input.event.read_content)
	some f in input.snapshot.data_findings
	f.seq == input.snapshot.seq
	f.class == "SECRET"
}

# Untrusted modification of inputs.

signals contains sig(1, "UNTRUSTED_MODIFICATION", "deny", "DENY", "prompt_injection", "critical", sprintf("%s source modified the content", [input.event.source]), [], 1) if {
	hook in {"PreToolInputModification", "PostInputProcessing"}
	input.event.was_modified == true
	not object.get(input.event, "source", "user") in {"managed", "user"}
}
