package adapter

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The mapping core every host adapter shares: reading a host's input
// (decodeInput, required) and handing on the AARTS event it maps to
// (mapped). Each host's own file holds only what is that host's: its
// fields, its events and their AARTS hook points, and its answer's form.

// decodeInput decodes a host's hook input into in; host names the host in
// the error.
func decodeInput(host string, stdin []byte, in any) error {
	if err := json.Unmarshal(bytes.TrimSpace(stdin), in); err != nil {
		return fmt.Errorf("%s hook input is not a JSON object: %w", host, err)
	}
	return nil
}

// field is one member a host's input must carry: its name in the host's
// input, and its value there.
type field struct{ name, value string }

// required names the first thing a host's input lacks: its event's name,
// or one of fields (for the event named event).
func required(host, event string, fields ...field) error {
	if event == "" {
		return fmt.Errorf("%s hook input: missing hook_event_name", host)
	}
	for _, f := range fields {
		if f.value == "" {
			return fmt.Errorf("%s %s input: missing %s", host, event, f.name)
		}
	}
	return nil
}

// mapped is a host's input mapped to the AARTS event e (nil: an event
// agentledger does not judge), the host's event named native; autoApprove
// marks the adapter's documented opt-in to answer an allow with the
// host's own allow.
func mapped(native string, e map[string]any, err error, autoApprove bool) (Mapped, error) {
	if err != nil || e == nil {
		return Mapped{Native: native}, err
	}
	if autoApprove {
		e["auto_approve"] = true
	}
	ev, err := json.Marshal(e)
	return Mapped{Native: native, Event: ev}, err
}
