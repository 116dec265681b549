# Helpers and built-in lists of the default agentledger policy.
package agentledger.policy

import rego.v1

hook := input.event.hook_point

action := object.get(input, "action", {})

m := input.manifest

budgets := m.budgets

# What the manifest makes of the action (see policy/facts.go): whether the
# tool is declared or needs approval; hosts and binaries it denies or does
# not list; paths and secrets outside what it allows.
facts := object.get(action, "manifest_facts", {
	"tool_declared": false, "approval_required": false, "hosts_denied": [], "hosts_unlisted": [], "binaries_denied": [], "binaries_unlisted": [],
	"writes_outside": [], "writes_unlisted": [], "reads_outside": [], "secret_paths": [],
})

# Domains: exact names, or *.suffix for any subdomain of suffix (compiled
# into one expression by the engine).
domain_allowed(host) if regex.match(m.domains_re, host)

glob_any(globs, path) if {
	some g in globs
	glob.match(g, ["/"], path)
}

# The texts forbidden patterns are tested against (the engine lists them
# in input.action.subjects: the command line and each simple command, SQL,
# paths, URLs, decoded base64), and the permission rules that match the
# action (input.action.rules.deny, .allow, .ask: the engine matches the
# manifest's tool(pattern) rules, whose * and ** semantics it defines).
all_subjects := {s | some s in object.get(action, "subjects", [])}

is_glob(s) if contains(s, "*")

is_glob(s) if contains(s, "?")

# Built-in lists.

high_risk_sinks := {"shell", "code_exec", "package_install", "database", "file_delete", "browser"}


# UNCLASSIFIED is data no label or detector classified, when the manifest
# treats unlabelled data as sensitive (AARM R2).
sensitive_classes := {"SECRET", "PII", "PAYMENT_CARD", "CONFIDENTIAL", "UNCLASSIFIED"}

# Paths agentledger itself lives by (AARTS §10.2): its ledger, keys,
# policies and the hosts' hook configuration.
protected_globs := {
	"**/.claude/settings.json", "**/.claude/settings.local.json", "**/.cursor/hooks.json", "**/.github/hooks/**",
	"**/.gemini/settings.json", "**/ledger-data/**", "**/.agentledger/**", "**/agentledger/keys/**",
	"**/.qwen/settings.json", "**/.factory/settings.json", "**/.factory/hooks.json",
	"**/.opencode/plugin/**", "**/.opencode/plugins/**", "**/.kilo/plugin/**", "**/.kilo/plugins/**",
	"**/.clinerules/hooks/**", "**/.cline/hooks/**",
}

dangerous_rm_targets := {"/", "/*", "~", "~/", "$HOME", "$HOME/", "/home", "/etc", "/usr", "/var", "/boot", "/bin", "/lib", "/opt", "/root", "."}

forbidden_command_patterns := [
	{"id": "mkfs", "re": `^mkfs(\.\w+)?\s.*/dev/`, "reason": "formats a file system"},
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

# Instructions aimed at the agent that a file a host loads as instructions
# must not carry: to approve or hide, to send credentials, to get around
# the guard, to force history or copy keys.
instruction_patterns := [
	`(?i)\b(approve|accept|allow|run)\b.{0,30}\b(every|all|any)\b.{0,30}\b(tool|command|call|request|permission|action)s?\b`,
	`(?i)\b(without|never|don't|do not|no need to)\b.{0,20}\b(ask|asking|prompt|prompting|confirm|confirming|confirmation|approval)\b.{0,30}\b(user|human|anyone|me|them)\b`,
	`(?i)\b(never|do not|don't|dont) (mention|tell|reveal|disclose|report|show)\b`,
	`(?i)\b(engine|ledger) (stop|uninstall|shred)\b|\bstop (it|the guard|agentledger|the engine)\b`,
	`(?i)\b(export|dump|print|send|upload) (all |every )?(the )?(secrets|environment|env vars|credentials)\b|\benv\s*>\s*\S+.{0,40}\bcurl\b`,
	`(?i)base64 (-d|--decode)\s*\|\s*(ba|z|da)?sh\b`,
	`(?i)<script[^>]+src=["']?https?://`,
	`(?i)\b(post|send|upload|paste|email|forward|exfiltrate|copy|commit|push)\b.{0,60}(\b|_)(credentials?|secrets?|tokens?|api[ _-]?keys?|passwords?|private keys?)\b`,
	`(?i)\b(post|send|upload|paste|email|forward|exfiltrate)\b.{0,60}(\.env\b|\bid_rsa|\bid_ed25519|\.ssh\b|\.aws\b|\.netrc\b)`,
	`(?i)(\b|_)(credentials?|secrets?|tokens?|api[ _-]?keys?|passwords?)\b.{0,60}\b(post|send|upload|paste|email|forward)\b.{0,40}(https?://|@)`,
	`(?i)\b(ignore|bypass|disable|skip|evade|get around|work around|turn off|circumvent)\b.{0,40}\b(agentledger|hooks?|guard|denials?|policy|policies|permissions?|sandbox|safety|approvals?)\b`,
	"(?i)\\bgit push\\b[^\\n]{0,40}(\\s-f\\b|--force(\\s|$|[`'\"]))|--no-verify\\b",
	`(?i)(~|\$HOME|/home/[^/\s]+|/Users/[^/\s]+)/\.(ssh|aws|gnupg|netrc|git-credentials)`,
	`(?i)\b(base64|rev|xxd)\b.{0,40}\b(bash|sh) -c\b|\bbash -c\b.{0,40}\bbase64\b`,
]

injection_patterns := [
	`(?i)ignore (all |any )?(previous|prior|above) (instructions|prompts)`,
	`(?i)\b(ignore|disregard|forget)\b.{0,20}\b(the above|everything above|(previous|prior|earlier|above) (directions|rules|instructions|guidance)|(everything|all) you (were|have been) (told|given))\b`,
	`(?i)\b(override|supersede|take precedence over)\b.{0,20}\b(the )?(user'?s?|system|developer|operator)\b.{0,10}\b(instructions|requests?|prompts?|rules)\b`,
	`(?i)!\[[^\]]*\]\(https?://[^)\s]*[?&][^)\s]*(\.env|secret|token|key|passw|credential|<[^>]+>|\$\{|\$\()`,
	`(?i)disregard (the |your )?(system prompt|instructions)`,
	`(?i)you (are|must) now\b`,
	`(?i)\b(always|from now on)\b.{0,40}\b(curl|wget|send|upload)\b`,
	`(?i)<\s*/?\s*system\s*>`,
]
