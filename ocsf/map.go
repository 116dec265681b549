package ocsf

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/seal"
)

// OCSF classes and categories used here.
const (
	classProcess   = 1007
	classFile      = 1001
	classHTTP      = 4002
	classAPI       = 6003
	classDetection = 2004
)

var classes = map[int]struct {
	name, category string
	categoryUID    int
}{
	classProcess:   {"Process Activity", "System Activity", 1},
	classFile:      {"File System Activity", "System Activity", 1},
	classHTTP:      {"HTTP Activity", "Network Activity", 4},
	classAPI:       {"API Activity", "Application Activity", 6},
	classDetection: {"Detection Finding", "Findings", 2},
}

// severities by decision: allow is informational, ask medium, deny high.
var severities = map[string]struct {
	id   int
	name string
}{aarts.Allow: {1, "Informational"}, aarts.Ask: {3, "Medium"}, aarts.Deny: {4, "High"}}

// hookOf reads a hook event as shown (sealed values sealed).
func hookOf(e *ledger.Envelope) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(seal.Render(e.Payload()), &m)
	return m
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// clean is a recorded string as an event may carry it: redacted, and cut.
func clean(s string) string {
	s = detect.Redact(s)
	if r := []rune(s); len(r) > 2000 {
		s = string(r[:1999]) + "…"
	}
	return s
}

// base fills what every event has: class, activity, time, metadata, the
// agent host, and the attestations of the envelopes it stands for.
func (c *Converter) base(class, activityID int, activity string, at *ledger.Envelope, envs ...*ledger.Envelope) Event {
	cl := classes[class]
	profiles := []string{"record_integrity", "security_control"}
	ev := Event{
		"class_uid": class, "class_name": cl.name, "category_uid": cl.categoryUID, "category_name": cl.category,
		"activity_id": activityID, "activity_name": activity, "type_uid": class*100 + activityID,
		"type_name": cl.name + ": " + activity, "time": at.TsUnixMs(), "severity_id": 1, "severity": "Informational",
		"metadata": Event{
			"version": Version, "product": Event{"name": "agentledger", "vendor_name": "agentledger", "version": c.Product},
			"uid": at.Hash(), "tenant_uid": at.TenantID(), "sequence": at.Seq(), "log_name": "agentledger",
			"correlation_uid": at.TenantID() + "/" + at.SessionID(),
		},
	}
	if class != classDetection {
		profiles = append(profiles, "ai_operation")
	}
	ev["metadata"].(Event)["profiles"] = profiles
	var records []Event
	for _, e := range envs {
		records = append(records, evidence(e))
	}
	ev["unmapped"] = Event{"agentledger": Event{"event_type": at.EventType(), "session_id": at.SessionID(), "envelopes": records}}
	return ev
}

// evidence is an envelope an event stands for, as `ledger verify` checks
// it: its place in its chain (seq, hash, previous hash) and, for a signed
// record, the engine's Ed25519 signature. OCSF has no place for these:
// its attestation is over the OCSF event itself (attest), and its
// digital_signature object has no member for a signature's value.
func evidence(e *ledger.Envelope) Event {
	out := Event{"seq": e.Seq(), "event_type": e.EventType(), "hash": e.Hash()}
	if e.Seq() > 0 {
		out["prev_hash"] = e.PrevHash()
	}
	if !ledger.IsRecordType(e.EventType()) {
		return out // hook events are the hosts' words: never signed
	}
	var rec struct {
		Sig *struct {
			Alg   string `json:"alg"`
			KeyID string `json:"key_id"`
			Value string `json:"value"`
		} `json:"sig"`
	}
	if json.Unmarshal(e.Payload(), &rec) == nil && rec.Sig != nil {
		out["signature"] = Event{"alg": rec.Sig.Alg, "key_id": rec.Sig.KeyID, "value": rec.Sig.Value}
	}
	return out
}

// agent is the ai_agent of a hook event: the agent host and its session.
func agent(h map[string]any, session string) Event {
	a := Event{"name": clean(cmp.Or(str(h, "host_id"), "unknown")), "uid": session, "type_id": 99, "type": "Coding agent host"}
	if v := str(h, "host_version"); v != "" {
		a["version"] = clean(v)
	}
	return a
}

// actor is the agent host acting in the session.
func actor(h map[string]any, session string) Event {
	return Event{"app_name": clean(cmp.Or(str(h, "host_id"), "unknown")), "session": Event{"uid": session}}
}

// device is where the call ran: agentledger learns no machine, so it
// names the tenant.
func device(e *ledger.Envelope) Event {
	return Event{"type_id": 0, "type": "Unknown", "uid": "tenant:" + e.TenantID()}
}

// activity is a hook event's event, with its verdict when it has one.
func (c *Converter) activity(h, ve *ledger.Envelope, v *aarts.VerdictRecord) Event {
	m := hookOf(h)
	envs := []*ledger.Envelope{h}
	if ve != nil {
		envs = append(envs, ve)
	}
	tool, native := str(m, "tool_name"), cmp.Or(str(m, "tool_name_native"), str(m, "tool_name"))
	input, _ := m["tool_input"].(map[string]any)
	var ev Event
	switch {
	case tool == aarts.ToolShell && str(input, "command") != "":
		cmd := clean(str(input, "command"))
		name, _, _ := strings.Cut(strings.TrimSpace(cmd), " ")
		ev = c.base(classProcess, 1, "Launch", h, envs...)
		ev["process"] = Event{"cmd_line": cmd, "name": cmp.Or(name, "sh"), "uid": h.Hash()}
		ev["actor"], ev["device"] = actor(m, h.SessionID()), device(h)
	case strings.HasPrefix(tool, "file_") && cmp.Or(str(input, "file_path"), str(input, "path")) != "":
		p := clean(cmp.Or(str(input, "file_path"), str(input, "path")))
		id, name := map[string]int{aarts.ToolFileRead: 2, aarts.ToolFileWrite: 1, aarts.ToolFileEdit: 3, aarts.ToolFileDelete: 4}[tool], ""
		name = map[int]string{1: "Create", 2: "Read", 3: "Update", 4: "Delete"}[id]
		if id == 0 {
			id, name = 99, "Other"
		}
		ev = c.base(classFile, id, name, h, envs...)
		ev["file"] = Event{"name": cmp.Or(path.Base(p), p), "path": p, "type_id": 1, "type": "Regular File"}
		ev["actor"], ev["device"] = actor(m, h.SessionID()), device(h)
	case tool == aarts.ToolWebRequest && str(input, "url") != "":
		u := clean(str(input, "url"))
		ev = c.base(classHTTP, 3, "Get", h, envs...)
		req := Event{"http_method": "GET", "url": urlOf(u)}
		ev["http_request"] = req
		// HTTP Activity has actor only through the host profile.
		ev["actor"] = actor(m, h.SessionID())
		meta := ev["metadata"].(Event)
		meta["profiles"] = append(meta["profiles"].([]string), "host")
	default:
		op := h.EventType()
		if native != "" {
			op = native
		}
		ev = c.base(classAPI, 99, "Other", h, envs...)
		ev["api"] = Event{"operation": clean(op), "service": Event{"name": clean(serviceOf(tool, native, m))}}
		ev["actor"], ev["src_endpoint"] = actor(m, h.SessionID()), Event{"name": clean(cmp.Or(str(m, "host_id"), "unknown"))}
	}
	ev["ai_agent"] = agent(m, h.SessionID())
	ev["message"] = clean(message(h.EventType(), native, m))
	un := ev["unmapped"].(Event)["agentledger"].(Event)
	un["hook_point"] = h.EventType()
	if tool != "" {
		un["tool_name"] = clean(tool)
	}
	if v != nil {
		verdictInto(ev, v)
	}
	return ev
}

// verdictInto folds a verdict into its event: the decision as action and
// disposition, the rule as the policy, the severity by decision.
func verdictInto(ev Event, v *aarts.VerdictRecord) {
	d := v.Verdict.Decision
	enforced := v.IsEnforced()
	switch {
	case !enforced:
		ev["action_id"], ev["action"] = 1, "Allowed"
		ev["disposition_id"], ev["disposition"] = 17, "Logged"
		if d != aarts.Allow {
			ev["disposition_id"], ev["disposition"] = 15, "Detected"
		}
	case d == aarts.Allow:
		ev["action_id"], ev["action"], ev["disposition_id"], ev["disposition"] = 1, "Allowed", 1, "Allowed"
	case d == aarts.Deny:
		ev["action_id"], ev["action"], ev["disposition_id"], ev["disposition"] = 2, "Denied", 2, "Blocked"
	default: // ask: held for a person
		ev["action_id"], ev["action"], ev["disposition_id"], ev["disposition"] = 99, "Ask", 23, "Challenge"
	}
	if s, ok := severities[d]; ok {
		ev["severity_id"], ev["severity"] = s.id, s.name
	}
	if v.Verdict.MatchedRuleID != "" || v.PolicyDigest != "" {
		ev["policy"] = Event{"name": cmp.Or(v.Verdict.MatchedRuleID, v.ReasonCode), "uid": v.PolicyDigest, "desc": clean(strings.Join(v.Verdict.Reasons, "; "))}
	}
	un := ev["unmapped"].(Event)["agentledger"].(Event)
	un["decision"], un["reason_code"], un["aarm_decision"], un["enforced"] = d, v.ReasonCode, v.AARMDecision, enforced
	if v.Unbound != "" {
		un["unbound"] = v.Unbound // a result that answers no call the host was let run
	}
}

// finding is the Detection Finding of a deny or an ask.
func (c *Converter) finding(h, ve *ledger.Envelope, v *aarts.VerdictRecord, judged Event) Event {
	m := hookOf(h)
	ev := c.base(classDetection, 1, "Create", ve, h, ve)
	title := fmt.Sprintf("%s %s: %s", strings.ToUpper(v.Verdict.Decision), cmp.Or(str(m, "tool_name_native"), h.EventType()), v.ReasonCode)
	ev["finding_info"] = Event{"uid": fmt.Sprintf("%s/%s/%d", ve.TenantID(), ve.SessionID(), ve.Seq()), "title": clean(title),
		"desc": clean(strings.Join(v.Verdict.Reasons, "; ")), "analytic": Event{"name": cmp.Or(v.Verdict.MatchedRuleID, v.ReasonCode), "type_id": 1, "type": "Rule"},
		"related_events": []Event{{"uid": judged["metadata"].(Event)["uid"], "type_uid": judged["type_uid"]}}}
	ev["message"] = clean(title + ": " + message(h.EventType(), str(m, "tool_name_native"), m))
	verdictInto(ev, v)
	ev["is_alert"] = v.Verdict.Decision == aarts.Deny && v.IsEnforced()
	return ev
}

// record is the event of an envelope that is not a hook event: a
// resolution, an engine failure, rejected input, or another record.
func (c *Converter) record(e *ledger.Envelope) []Event {
	var m map[string]any
	_ = json.Unmarshal(seal.Render(e.Payload()), &m)
	ev := c.base(classAPI, 99, "Other", e, e)
	ev["api"] = Event{"operation": e.EventType(), "service": Event{"name": "agentledger"}}
	ev["actor"], ev["src_endpoint"] = Event{"app_name": "agentledger", "session": Event{"uid": e.SessionID()}}, Event{"name": "agentledger"}
	switch e.EventType() {
	case ledger.EventResolution:
		var r aarts.ResolutionRecord
		_ = json.Unmarshal(e.Payload(), &r)
		ev["activity_id"], ev["activity_name"], ev["type_uid"] = 3, "Update", classAPI*100+3
		ev["type_name"] = "API Activity: Update"
		ev["actor"] = Event{"user": Event{"name": cmp.Or(r.By, "unknown"), "uid": cmp.Or(r.AuthenticatedBy, r.By, "unknown")}, "session": Event{"uid": e.SessionID()}}
		ev["message"] = fmt.Sprintf("%s for seq %d by %s", r.Resolution, r.ForSeq, cmp.Or(r.By, "unknown"))
		if r.Resolution == "approved" || strings.HasPrefix(r.Resolution, "allow") {
			ev["disposition_id"], ev["disposition"] = 8, "Approved"
		} else {
			ev["disposition_id"], ev["disposition"] = 2, "Blocked"
		}
	case ledger.EventEngineFailure:
		ev["status_id"], ev["status"] = 2, "Failure"
		ev["severity_id"], ev["severity"] = 3, "Medium"
		ev["message"] = clean(cmp.Or(str(m, "error"), str(m, "reason"), "engine failure"))
	case ledger.EventRejected:
		f := c.base(classDetection, 1, "Create", e, e)
		f["finding_info"] = Event{"uid": fmt.Sprintf("%s/%s/%d", e.TenantID(), e.SessionID(), e.Seq()), "title": "Rejected input",
			"desc": clean(cmp.Or(str(m, "defect"), str(m, "error"))), "analytic": Event{"name": "REJECTED_INPUT", "type_id": 1, "type": "Rule"}}
		f["severity_id"], f["severity"] = 3, "Medium"
		f["action_id"], f["action"], f["disposition_id"], f["disposition"] = 2, "Denied", 25, "Rejected"
		f["message"] = clean("rejected input: " + cmp.Or(str(m, "defect"), str(m, "error")))
		return []Event{f}
	default:
		ev["message"] = e.EventType()
	}
	return []Event{ev}
}

// urlOf splits a URL as OCSF's url object has it.
func urlOf(s string) Event {
	out := Event{"url_string": s}
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		out["hostname"], out["scheme"] = u.Hostname(), u.Scheme
		out["path"] = cmp.Or(u.Path, "/")
	}
	return out
}

// serviceOf names the service a tool call went to: an MCP server, or the
// agent host for its own tools.
func serviceOf(tool, native string, m map[string]any) string {
	if rest, ok := strings.CutPrefix(native, "mcp__"); ok {
		server, _, _ := strings.Cut(rest, "__")
		return "mcp:" + server
	}
	return cmp.Or(str(m, "host_id"), "agentledger")
}

// message is an event's one line: what was asked or done.
func message(hook, native string, m map[string]any) string {
	input, _ := m["tool_input"].(map[string]any)
	for _, k := range []string{"command", "file_path", "path", "url", "query"} {
		if s := str(input, k); s != "" {
			return native + ": " + s
		}
	}
	for _, k := range []string{"raw_input", "response_text", "output_text", "delegated_task", "reason"} {
		if s := str(m, k); s != "" {
			return hook + ": " + s
		}
	}
	if native != "" {
		return hook + " " + native
	}
	return hook
}
