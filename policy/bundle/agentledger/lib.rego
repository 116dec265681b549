# Helpers and built-in lists of the default agentledger policy.
package agentledger.policy

import rego.v1

hook := input.event.hook_point

action := object.get(input, "action", {})

tool := object.get(action, "tool", "")

native := object.get(action, "tool_native", "")

m := input.manifest

snap := input.snapshot

budgets := m.budgets

# A manifest tool entry names the action's tool: a canonical name, or a glob
# over the host's own tool name.
tool_listed(entries) if tool in entries

tool_listed(entries) if native in entries

tool_listed(entries) if {
	some e in entries
	is_glob(e)
	glob.match(e, [], native)
}

is_glob(s) if contains(s, "*")

is_glob(s) if contains(s, "?")

tool_listed(entries) if {
	tool == "package_install"
	some e in entries
	e == "shell"
}

# Domains: exact names, or *.suffix for any subdomain of suffix (compiled
# into one expression by the engine).
domain_allowed(host) if regex.match(m.domains_re, host)

# A path is under a root directory.
under(path, root) if path == root

under(path, root) if startswith(path, concat("", [trim_suffix(root, "/"), "/"]))

under_any(path, roots) if {
	some r in roots
	under(path, r)
}

glob_any(globs, path) if {
	some g in globs
	glob.match(g, ["/"], path)
}

# The texts pattern rules and forbidden patterns are tested against: the
# whole command line and each simple command, SQL, paths, URLs.
# all_subjects is subjects evaluated once.
all_subjects := {s | some s in subjects}

subjects contains s if {
	s := input.event.tool_input.command
	is_string(s)
}

subjects contains s if {
	some c in action.commands
	s := concat(" ", c.argv)
}

subjects contains s if some s in action.sql

subjects contains s if some s in action.paths

subjects contains s if some s in action.urls

subjects contains s if some s in action.decoded

# For file tools a rule pattern is a path glob ("/" delimits), for all
# others * matches any text.
file_tools := {"file_read", "file_write", "file_edit", "file_delete"}

# any_rule(kind) is true when a rule of kind (deny, allow, ask) matches the
# action: one compiled expression per tool, then rules on glob tool names.
any_rule(kind) if {
	re := m.compiled_rules[concat("", [kind, "_re"])][tool]
	rule_subject_re(re)
}

any_rule(kind) if {
	re := m.compiled_rules[concat("", [kind, "_re"])][native]
	native != tool
	rule_subject_re(re)
}

any_rule(kind) if {
	some r in m.compiled_rules[kind]
	is_glob(r.tool)
	rule_matches(r)
}

rule_subject_re(re) if {
	tool in file_tools
	some p in action.paths
	regex.match(re, p)
}

rule_subject_re(re) if {
	not tool in file_tools
	some s in all_subjects
	regex.match(re, s)
}

rule_subject_re(re) if regex.match(re, "")

rule_matches(r) if {
	r.tool == tool
	rule_subject_matches(r)
}

rule_matches(r) if {
	r.tool != tool
	r.tool == native
	rule_subject_matches(r)
}

rule_matches(r) if {
	r.tool != tool
	is_glob(r.tool)
	glob.match(r.tool, [], native)
	rule_subject_matches(r)
}

rule_subject_matches(r) if {
	tool in file_tools
	some p in action.paths
	glob.match(r.glob, ["/"], p)
}

rule_subject_matches(r) if {
	not tool in file_tools
	some s in all_subjects
	glob.match(r.glob, [], s)
}

rule_subject_matches(r) if r.glob == "**"

# Built-in lists.

shell_builtins := {
	"cd", "export", "unset", "set", "alias", "read", "exit", "return", "local", "declare", "test", "[", "[[",
	"pwd", "printf", "echo", "type", "shift", "wait", "trap", "ulimit", "umask", "true", "false", ":",
}

high_risk_sinks := {"shell", "code_exec", "package_install", "database", "file_delete", "browser"}

medium_risk_sinks := {"file_write", "file_edit", "mcp_call"}

sensitive_classes := {"SECRET", "PII", "PAYMENT_CARD", "CONFIDENTIAL"}

# Paths agentledger itself lives by (AARTS §10.2): its ledger, keys,
# policies and the hosts' hook configuration.
protected_globs := {
	"**/.claude/settings.json", "**/.claude/settings.local.json", "**/.cursor/hooks.json", "**/.github/hooks/**",
	"**/.gemini/settings.json", "**/ledger-data/**", "**/.agentledger/**", "**/agentledger/keys/**",
}

dangerous_rm_targets := {"/", "/*", "~", "~/", "$HOME", "$HOME/", "/home", "/etc", "/usr", "/var", "/boot", "/bin", "/lib", "/opt", "/root", "."}

forbidden_command_patterns := [
	{"id": "mkfs", "re": `^mkfs(\.\w+)?\s`, "reason": "formats a file system"},
	{"id": "dd-device", "re": `^dd\s.*\bof=/dev/`, "reason": "writes raw to a device"},
	{"id": "fork-bomb", "re": `:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:`, "reason": "fork bomb"},
	{"id": "chmod-root", "re": `^chmod\s+(-\S+\s+)*-R\s+(-\S+\s+)*0?777\s+/\s*$`, "reason": "opens every file on the system"},
	{"id": "power", "re": `^(shutdown|reboot|halt|poweroff|init\s+0)\b`, "reason": "stops the machine"},
]

forbidden_sql_patterns := [
	{"id": "drop-database", "re": `(?i)\bdrop\s+(database|schema)\b`, "reason": "drops a database"},
	{"id": "truncate", "re": `(?i)\btruncate\s+(table\s+)?\w`, "reason": "empties a table"},
	{"id": "delete-all", "re": `(?i)\bdelete\s+from\s+[\w."]+\s*;?\s*$`, "reason": "deletes every row (no WHERE)"},
]

injection_patterns := [
	`(?i)ignore (all |any )?(previous|prior|above) (instructions|prompts)`,
	`(?i)disregard (the |your )?(system prompt|instructions)`,
	`(?i)you (are|must) now\b`,
	`(?i)\b(always|from now on)\b.{0,40}\b(run|execute|curl|send|upload)\b`,
	`(?i)<\s*/?\s*system\s*>`,
]
