package docs

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/proctest"
)

// TestReadmeRunsInOrder runs README's shell blocks top to bottom, line by
// line, as a new user would in a clone with a fresh home directory: the
// programs are this checkout's (`go run ./cmd/X` and what `go install
// ./cmd/...` puts on PATH), ~/src/shop is a new project, and after each
// `engine install` into it the agent works once — the hook the install
// wrote is run as Claude Code runs it, with a tool call — so that the
// commands that read the hooks' record have one. Every line must succeed.
// Left out, each for its reason:
//   - `go test …`: the suite this test belongs to;
//   - the blocks that need infrastructure a clone does not have (a NATS
//     cluster at named hosts, a replay queue; deploy/ runs the fleet);
//   - `ledger tail` follows forever: it runs for two seconds.
//
// SESSION_ID stands for a session `ledger sessions` listed.
func TestReadmeRunsInOrder(t *testing.T) {
	bin := built(t)
	work, home := t.TempDir(), t.TempDir()
	for _, d := range []string{"fixtures"} {
		abs, _ := filepath.Abs(filepath.Join("..", d))
		if err := os.Symlink(abs, filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	project := filepath.Join(home, "src", "shop")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(home, ".local", "share", "agentledger")
	t.Cleanup(func() { proctest.StopHolder(data) })
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+home, "LEDGER_DATA=", "XDG_DATA_HOME=", "ENGINE_TOKENS=")
	run := func(line string, lineNo int) string {
		t.Helper()
		cmd := exec.Command("/bin/sh", "-ec", line)
		cmd.Dir, cmd.Env = work, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("README.md:%d: %s: %v\n%s", lineNo, line, err, out)
		}
		return string(out)
	}
	ran, skippedBlocks := 0, 0
	for _, b := range shellBlocks(t) {
		if b.page != "../README.md" {
			continue
		}
		if strings.Contains(b.text, "--nats ") {
			skippedBlocks++
			continue
		}
		for i, line := range strings.Split(strings.TrimSpace(b.text), "\n") {
			lineNo := b.line + i
			words := strings.Fields(line)
			switch {
			case len(words) == 0:
				continue
			case words[0] == "go" && len(words) > 1 && words[1] == "test":
				continue
			case strings.HasPrefix(line, "go install ./cmd/..."):
				continue // bin is on PATH
			case strings.HasPrefix(line, "ledger tail"):
				cmd, _, _ := strings.Cut(line, "#")
				line = "timeout 2 " + cmd + " || [ $? -eq 124 ]"
			case strings.Contains(line, "SESSION_ID"):
				id := firstSession(t, run("ledger sessions --format json", lineNo))
				line = strings.ReplaceAll(line, "SESSION_ID", id)
			}
			line = strings.ReplaceAll(line, "go run ./cmd/", "")
			run(line, lineNo)
			ran++
			if strings.HasPrefix(line, "engine install claude-code --project ~/src/shop") {
				agentWorks(t, project, env)
			}
		}
	}
	if ran < 20 || skippedBlocks != 2 {
		t.Fatalf("ran %d lines and skipped %d blocks of README: want at least 20, and the 2 that need a cluster", ran, skippedBlocks)
	}
	t.Logf("ran %d lines of README in order", ran)
}

// agentWorks runs the hook an install wrote into project as Claude Code
// would for one tool call, and checks that the host was answered.
func agentWorks(t *testing.T, project string, env []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(project, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(raw, &settings); err != nil || len(settings.Hooks["PreToolUse"]) == 0 || len(settings.Hooks["PreToolUse"][0].Hooks) == 0 {
		t.Fatalf("the install wrote no PreToolUse hook: %v\n%s", err, raw)
	}
	payload := `{"session_id":"readme-session","transcript_path":"` + filepath.Join(project, "transcript.jsonl") + `","cwd":"` + project +
		`","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":"toolu_readme_1"}`
	cmd := exec.Command("/bin/sh", "-c", settings.Hooks["PreToolUse"][0].Hooks[0].Command)
	cmd.Dir, cmd.Env = project, append(env, "CLAUDE_PROJECT_DIR="+project)
	cmd.Stdin = strings.NewReader(payload)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the installed hook: %v\n%s", err, out)
	}
}

// firstSession is the id of the first session a `ledger sessions --format
// json` listed.
func firstSession(t *testing.T, out string) string {
	t.Helper()
	var list []struct {
		Session string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) == 0 || list[0].Session == "" {
		t.Fatalf("ledger sessions listed none (%v):\n%s", err, out)
	}
	return list[0].Session
}
