package engine

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sync"

	"github.com/agentledger/agentledger/adapter"
)

// spawners remembers, per sub-agent session, the session of the sub-agent
// that started it, as the host's own record of it said (adapter
// Host.Spawner): a nested sub-agent's every event names its real parent.
type spawners struct {
	mu sync.Mutex
	of map[string]string // child session → spawner session
}

// maxSpawners bounds what spawners remembers.
const maxSpawners = 4096

// maxSpawnerFile is the most of a host's sub-agent file that is read.
const maxSpawnerFile = 64 << 10

// withSpawner names a sub-agent's real parent on its event, where the host
// reports it under its own session but its record says another sub-agent
// started it: parent_session_id becomes that sub-agent's session, and
// spawn_session_id the session the host reported the spawn in (whose
// grant bounds the child, with the parent's ceiling: see
// reducer.SpawnedElsewhere). Only for a sender on the engine's machine
// (the host's record is a file there).
func (e *Engine) withSpawner(host *adapter.Host, input, event []byte) []byte {
	if host.Spawner == nil || !bytes.Contains(event, []byte(`"is_sub_agent":true`)) {
		return event
	}
	var ev struct {
		SessionID string `json:"session_id"`
		Parent    string `json:"parent_session_id"`
	}
	if json.Unmarshal(event, &ev) != nil || ev.Parent == "" {
		return event
	}
	e.spawners.mu.Lock()
	spawner, known := e.spawners.of[ev.SessionID]
	e.spawners.mu.Unlock()
	if !known {
		var recorded bool
		if spawner, recorded = host.Spawner(input, readSmall); !recorded {
			return event // not (yet) on the host's record: asked again next time
		}
		// Remembered either way (a spawner, or none: started by the main
		// session), so each sub-agent's record is read once.
		e.spawners.mu.Lock()
		if e.spawners.of == nil || len(e.spawners.of) >= maxSpawners {
			e.spawners.of = map[string]string{}
		}
		e.spawners.of[ev.SessionID] = spawner
		e.spawners.mu.Unlock()
	}
	if spawner == "" || spawner == ev.Parent || spawner == ev.SessionID {
		return event
	}
	return withMember(withMember(event, "parent_session_id", spawner), "spawn_session_id", ev.Parent)
}

// readSmall reads a file of at most maxSpawnerFile bytes.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSpawnerFile))
}
