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
	}{
		{"nested", "inner1", transcript, SubAgentSession(session, "outer1")},
		{"started by the main session", "outer1", transcript, ""},
		{"no record yet", "fresh1", transcript, ""},
		{"itself", "self1", transcript, ""},
		{"a parent that is no name", "odd1", transcript, ""},
		{"an agent id that is a path", "../../agent-escape", transcript, ""},
		{"another session's transcript", "inner1", filepath.Join(dir, "other.jsonl"), ""},
		{"a relative transcript", "inner1", session + ".jsonl", ""},
		{"the main agent", "", transcript, ""},
	} {
		if got := claudeCodeSpawner(input(c.agent, c.transcript), reader); got != c.want {
			t.Errorf("%s: spawner %q, want %q", c.name, got, c.want)
		}
	}
	for _, p := range read {
		if filepath.Dir(p) != metas {
			t.Errorf("read %s, outside the session's sub-agent records", p)
		}
	}
}
