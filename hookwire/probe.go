package hookwire

import (
	"bytes"
	"encoding/json"
)

// Probed is what can be read of an input that may be broken: truncated,
// not I-JSON, or not JSON past some point.
type Probed struct {
	SessionID string
	HookPoint string // an AARTS event's hook_point
	HostEvent string // a host's native event name (hook_event_name)
	Tool      string // tool_name
}

// Probe reads the top-level session id, event and tool names of an input.
// It reads tokens up to the first error and keeps the first value of each
// key (a duplicate cannot move a record to another session).
func Probe(b []byte) Probed {
	var p Probed
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return p
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return p
		}
		k, _ := t.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return p
		}
		s, isString := v.(string)
		if !isString || seen[k] {
			continue
		}
		switch k {
		case "session_id", "conversation_id", "sessionId":
			if p.SessionID == "" {
				p.SessionID = s
			}
		case "hook_point":
			p.HookPoint = s
		case "hook_event_name", "hookName": // hookName: Cline's
			p.HostEvent = s
		case "tool_name", "toolName":
			if p.Tool == "" {
				p.Tool = s
			}
		}
		seen[k] = true
	}
	return p
}
