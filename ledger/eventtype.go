package ledger

import "slices"

// HookPoints are the twenty AARTS hook points (AARTS v0.1 §6.3, §8), the
// event types of recorded hook events.
var HookPoints = []string{
	"SessionStart", "SessionEnd",
	"PrePluginLoad", "PreSkillLoad", "PreMCPConnect",
	"PreUserInput", "PostInputProcessing", "PreLLMRequest", "PostLLMResponse", "PreCompact", "PostCompact",
	"PreToolUse", "PostToolUse", "PreToolInputModification",
	"PreSubAgentSpawn", "PostSubAgentResult",
	"PreOutputDeliver",
	"PreMemoryWrite", "PreMemoryRead",
	"PostAskResolution",
}

// EventSanitized is agentledger's extension hook event by which a host
// registers that it sanitized content under a key.
const EventSanitized = "Sanitized"

// EventHostLifecycle is agentledger's extension hook event for a host
// event AARTS has no hook point for (a settings file changed, instruction
// files loaded): recorded, never blocking.
const EventHostLifecycle = "HostLifecycle"

// Engine event types: records the engine writes about its own decisions.
const (
	EventVerdict       = "Verdict"
	EventResolution    = "Resolution"
	EventEngineFailure = "EngineFailure"
	EventCheckpoint    = "Checkpoint"
	// EventRejected records input the engine could not accept (not I-JSON,
	// over a limit, not a valid AARTS event): what was wrong, the SHA-256
	// and length of the raw bytes and a safe excerpt, and what the host was
	// answered. The input itself is not stored.
	EventRejected = "Rejected"
	// EventReveal records that sealed values were decrypted for someone
	// (ledger show --reveal): who, which session, which key ids, when.
	EventReveal = "Reveal"
	// EventShred records that the data keys of a scope were destroyed
	// (ledger shred): who, what scope, which key ids, when.
	EventShred = "Shred"
)

// EventTypes is every event type an envelope may carry: the AARTS hook
// points, the Sanitized and HostLifecycle extensions and the engine's own records. One vocabulary only: other products'
// event names are mapped onto these when imported, never stored as they are.
var EventTypes = append(slices.Clone(HookPoints), EventSanitized, EventHostLifecycle, EventVerdict, EventResolution, EventEngineFailure, EventCheckpoint, EventRejected, EventReveal, EventShred)

var eventTypeSet = func() map[string]bool {
	m := make(map[string]bool, len(EventTypes))
	for _, t := range EventTypes {
		m[t] = true
	}
	return m
}()

// IsEventType reports whether t is in EventTypes.
func IsEventType(t string) bool { return eventTypeSet[t] }
