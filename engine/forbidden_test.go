package engine

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentledger/agentledger/decide"
)

// TestForbiddenCommands: each of the policy's forbidden command patterns
// denies its command, also behind a wrapper or in a compound, with the
// pattern's reason and the command as the artifact; near misses are not
// forbidden.
func TestForbiddenCommands(t *testing.T) {
	d := decider(t, "coding-agent.json")
	for _, c := range []struct{ command, reason string }{
		{"mkfs.ext4 /dev/sdb1", "forbidden: formats a file system (mkfs.ext4 /dev/sdb1)"},
		{"sudo dd if=/dev/zero of=/dev/sda bs=1M", "forbidden: writes raw to a device (dd if=/dev/zero of=/dev/sda bs=1M)"},
		{":(){ :|:& };:", "forbidden: fork bomb (:(){ :|:& };:)"},
		{"chmod -R 777 /", "forbidden: opens every file on the system (chmod -R 777 /)"},
		{"go test ./... && shutdown -h now", "forbidden: stops the machine (shutdown -h now)"},
		{"ls; echo done", ""},
		{"dd if=a.img of=b.img", ""},
		{"chmod -R 755 ./build", ""},
	} {
		s := decide.NewSession("default", "forbidden")
		ev, _ := json.Marshal(map[string]any{"hook_point": "PreToolUse", "session_id": "forbidden", "timestamp": "2026-11-26T09:00:00Z",
			"host_id": "claude-code", "aarts_version": "0.1", "cwd": "/workspace/shop", "turn_id": "t1", "tool_name": "shell",
			"tool_name_native": "Bash", "artifacts": []any{}, "tool_input": map[string]any{"command": c.command}})
		step, err := d.Decide(context.Background(), s, ev)
		if err != nil {
			t.Fatalf("%s: %v", c.command, err)
		}
		got := step.Decision
		forbidden := got.ReasonCode == "FORBIDDEN"
		if c.reason == "" {
			if forbidden {
				t.Errorf("%s: forbidden: %v", c.command, got.Reasons)
			}
			continue
		}
		if !forbidden || got.Decision != "deny" || !slices.Contains(got.Reasons, c.reason) {
			t.Errorf("%s: %s %s %v, want deny FORBIDDEN %q", c.command, got.Decision, got.ReasonCode, got.Reasons, c.reason)
		}
	}
}
