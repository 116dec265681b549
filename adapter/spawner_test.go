package adapter

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestClaudeCodeSpawner: the spawner of a Claude Code sub-agent is read
// from the host's own record beside the transcript (parentAgentId); names
// that would make another path are never read, and a sub-agent started
// from the main session, or one the host has no record of yet, has none.
func TestClaudeCodeSpawner(t *testing.T) {
	dir := t.TempDir()
	session := "4fa9ad7c-27a6-45a5-8651-cbfda2bf1ef3"
	transcript := filepath.Join(dir, session+".jsonl")
	metas := filepath.Join(dir, session, "subagents")
	if err := os.MkdirAll(metas, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(agent, body string) {
		if err := os.WriteFile(filepath.Join(metas, "agent-"+agent+".meta.json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("inner1", `{"agentType":"general-purpose","toolUseId":"toolu_1","parentAgentId":"outer1","spawnDepth":2}`)
	write("outer1", `{"agentType":"general-purpose","toolUseId":"toolu_0","spawnDepth":1}`)
	write("self1", `{"parentAgentId":"self1"}`)
	write("odd1", `{"parentAgentId":"../../etc"}`)
	if err := os.WriteFile(filepath.Join(dir, "agent-escape.meta.json"), []byte(`{"parentAgentId":"outer1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var read []string
	reader := func(p string) ([]byte, error) { read = append(read, p); return os.ReadFile(p) }
	input := func(agent, transcriptPath string) []byte {
		raw, _ := json.Marshal(map[string]any{"session_id": session, "agent_id": agent, "transcript_path": transcriptPath, "hook_event_name": "PreToolUse"})
		return raw
	}
	for _, c := range []struct {
		name, agent, transcript, want string
		recorded                      bool
	}{
		{"nested", "inner1", transcript, SubAgentSession(session, "outer1"), true},
		{"started by the main session", "outer1", transcript, "", true},
		{"no record yet", "fresh1", transcript, "", false},
		{"itself", "self1", transcript, "", true},
		{"a parent that is no name", "odd1", transcript, "", true},
		{"an agent id that is a path", "../../agent-escape", transcript, "", false},
		{"another session's transcript", "inner1", filepath.Join(dir, "other.jsonl"), "", false},
		{"a relative transcript", "inner1", session + ".jsonl", "", false},
		{"the main agent", "", transcript, "", false},
	} {
		if got, recorded := claudeCodeSpawner(input(c.agent, c.transcript), reader); got != c.want || recorded != c.recorded {
			t.Errorf("%s: spawner %q (recorded %v), want %q (%v)", c.name, got, recorded, c.want, c.recorded)
		}
	}
	for _, p := range read {
		if filepath.Dir(p) != metas {
			t.Errorf("read %s, outside the session's sub-agent records", p)
		}
	}
}
