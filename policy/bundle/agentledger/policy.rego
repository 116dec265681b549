# The default agentledger policy. Every rule adds a signal; the verdict is
# the strictest signal (deny > ask > allow), and among equally strict
# signals the first in rule order:
#
#   1 FORBIDDEN / PROTECTED_PATH / RULE_DENY   7 EXEC_DENY / EXEC_UNLISTED (strict)
#     DESTRUCTIVE / REMOTE_SHELL / ... (findings)
#   2 PERMISSION_UNDECLARED                     8 FS_DENY / SECRET_ACCESS / PACKAGE_SUSPECT
#   3 EGRESS_DENY / EGRESS_UNLISTED (strict)    9 DATA_EXFILTRATION (composition)
#   3.5 EGRESS_SENDS (data to an unlisted host)
#   4 BUDGET_EXCEEDED                          10 APPROVAL_REQUIRED / RULE_ASK
#   5 LOOP_DETECTED                            10.6 HOST_WILL_NOT_ASK (the host's mode)
#   6 TAINTED_TO_HIGH_RISK                     11 CONTEXT_PENDING, DEPENDS_ON_DEFERRED (DEFER)
#   6.5 INTENT_MISMATCH (a read-only request, a call that changes)
#                                              12 MODIFY signals (directives)
#
# A heuristic deny whose confidence is under the manifest's sensitivity
# threshold (the preset: strict 0, balanced 0.7, permissive 0.9) is not
# confident enough to deny: it is deferred (AARM R3 DEFER; an ask, AARTS
# §6.6) for a person to decide.
package agentledger.policy

import rego.v1

sig(order, code, decision, aarm, category, severity, reason, artifacts, confidence) := {
	"order": order, "reason_code": code, "decision": decision, "aarm_decision": aarm, "category": category,
	"severity": severity, "reason": reason, "artifacts": artifacts, "confidence": confidence, "directives": {},
}

# The signal set, evaluated once: a complete rule is cached for the whole
# evaluation, a partial set referenced whole is not.
found := signals

strictness := {"allow": 0, "ask": 1, "deny": 2}

thresholds := {"strict": 0, "balanced": 0.7, "permissive": 0.9}

# The signals ranked in one pass (agentledger.rank, policy/rank.go): the
# winner is the strictest signal, then the lowest order, then the first in
# the set's order; the reasons go by order; the artifacts are sorted; the
# allow signals' directives are merged in the set's order.
ranking := agentledger.rank(found)

winner := ranking.winner

top := strictness[winner.decision]

reasons := ranking.reasons

artifacts := ranking.artifacts

directives := object.union_n(ranking.allow_directives)

downgraded if {
	winner.decision == "deny"
	winner.confidence < thresholds[input.manifest.sensitivity]
}

constraints := {"max_output_bytes": input.manifest.budgets.max_output_bytes, "timeout_ms": input.manifest.budgets.tool_timeout_ms} if {
	hook == "PreToolUse"
} else := {}

source(code) := "pattern_match" if code in {"FORBIDDEN", "RULE_DENY", "RULE_ASK", "PROTECTED_PATH", "PACKAGE_SUSPECT", "MEMORY_POISONING"}

else := "behavioral_analysis" if code in {"LOOP_DETECTED", "TAINTED_TO_HIGH_RISK", "DATA_EXFILTRATION", "BUDGET_EXCEEDED"}

else := "policy"

default decision := {
	"decision": "allow", "aarm_decision": "ALLOW", "reason_code": "ALLOW", "category": "none", "severity": "info",
	"source": "policy", "confidence": 1, "matched_rule_id": "", "reasons": [], "artifacts": [],
	"constraints": {}, "directives": {},
}

# An ask while the session already has as many open approvals as the
# manifest bounds (max_concurrent_deferrals) is a deny instead.
would_ask if {
	count(found) > 0
	top == 1
}

would_ask if downgraded

# An ask no one in the host was asked about (no_prompt: the host was
# answered deny, or the call deferred) holds nothing up there: it waits for
# an approver only, and does not count among the open deferrals.
open_deferrals := count([p | some p in input.snapshot.pending; not p.no_prompt])

too_many_pending if {
	would_ask
	open_deferrals >= input.manifest.budgets.max_concurrent_deferrals
}


# The cases below are tried in order, and evaluation stops at the first
# that holds (instead of trying every definition of a complete rule): an
# allow, a confident deny, too many open approvals, the winner, the winner
# deferred. The common case, an allowed call, comes first and reads what it
# needs directly (each rule it referred to would cost a lookup).
#
# An allowed call says whether it rests on an explicit allow (e: a manifest
# allow rule matched the call, or the user answered an earlier ask about it
# with allow_always; the engine names it in input.action.explicit_allow,
# RULE_ALLOW or ALLOW_ALWAYS). Only such an allow may skip the host's own
# permission prompt; adapters answer any other allow with no decision, so
# the host's own guard still applies.
decision := d if {
	count(found) == 0
	input.event.hook_point == "PreToolUse"
	e := object.get(input, ["action", "explicit_allow"], "")
	d := {
		"decision": "allow", "aarm_decision": "ALLOW", "reason_code": "ALLOW", "category": "none", "severity": "info",
		"source": "policy", "confidence": 1, "matched_rule_id": e, "reasons": [], "artifacts": [],
		"constraints": {"max_output_bytes": input.manifest.budgets.max_output_bytes, "timeout_ms": input.manifest.budgets.tool_timeout_ms},
		"directives": {}, "explicit": e != "",
	}
} else := d if {
	count(found) == 0
	d := {
		"decision": "allow", "aarm_decision": "ALLOW", "reason_code": "ALLOW", "category": "none", "severity": "info",
		"source": "policy", "confidence": 1, "matched_rule_id": "", "reasons": [], "artifacts": [],
		"constraints": {}, "directives": {}, "explicit": false,
	}
} else := d if {
	# A confident deny: nothing to defer, no approval to count.
	w := winner
	w.decision == "deny"
	w.confidence >= thresholds[input.manifest.sensitivity]
	d := verdict(w)
} else := d if {
	too_many_pending
	d := {
		"decision": "deny", "aarm_decision": "DENY", "reason_code": "DEFERRALS_EXCEEDED",
		"category": winner.category, "severity": "warning", "source": "policy", "confidence": 1,
		"matched_rule_id": "DEFERRALS_EXCEEDED",
		"reasons": array.concat(reasons, [sprintf("%d approvals are already open (max %d)", [open_deferrals, input.manifest.budgets.max_concurrent_deferrals])]),
		"artifacts": artifacts, "constraints": constraints, "directives": {},
	}
} else := d if {
	not downgraded
	d := verdict(winner)
} else := d if {
	w := winner
	d := {
		"decision": "ask", "aarm_decision": "DEFER", "reason_code": w.reason_code,
		"category": w.category, "severity": "warning", "source": source(w.reason_code),
		"confidence": w.confidence, "matched_rule_id": w.reason_code,
		"reasons": array.concat(reasons, [sprintf("confidence %v is under the %s threshold: deferred for a person to decide instead of denied", [w.confidence, input.manifest.sensitivity])]),
		"artifacts": artifacts, "constraints": constraints, "directives": directives,
	}
}

# verdict is the decision the winning signal w makes.
verdict(w) := {
	"decision": w.decision, "aarm_decision": w.aarm_decision, "reason_code": w.reason_code,
	"category": w.category, "severity": w.severity, "source": source(w.reason_code),
	"confidence": w.confidence, "matched_rule_id": w.reason_code, "reasons": reasons,
	"artifacts": artifacts, "constraints": constraints, "directives": directives,
}
