package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// runQwen runs the real Qwen Code CLI (qwen PROMPT, headless, approval
// mode mode: yolo where empty, since headless Qwen Code offers the model
// no shell or file tools otherwise) in a new project with agentledger's
// hooks as `engine install qwen-code --project` writes them, against the
// scripted Anthropic model.
func runQwen(t *testing.T, script []turn, mode string, o hostOptions) (*hostRun, *scriptedAnthropic) {
	t.Helper()
	qwen := host(t, "AGENTLEDGER_E2E_QWEN")
	home, work, env := project(t)
	writeFiles(t, work, o.files)
	install(t, env, append([]string{"qwen-code", "--project", work}, o.install...)...)
	settings, _ := json.Marshal(map[string]any{"general": map[string]any{"enableAutoUpdate": false, "disableAutoUpdate": true},
		"privacy": map[string]any{"usageStatisticsEnabled": false}, "telemetry": map[string]any{"enabled": false}})
	writeFiles(t, home, map[string]string{".qwen/settings.json": string(settings)})
	model, url := newScriptedAnthropic(t, script)
	r := &hostRun{work: work, data: filepath.Join(home, ".local", "share", "agentledger"),
		results: func() map[string]string { _, res := model.calls(); return res }}
	t.Cleanup(func() { stopEngine(r.data) })
	if mode == "" {
		mode = "yolo"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, qwen, "do the task", "--approval-mode", mode, "--auth-type", "anthropic", "-o", "json")
	cmd.Dir = work
	cmd.Env = append(o.envFor(env), "ANTHROPIC_API_KEY=sk-ant-scripted-not-a-key", "ANTHROPIC_BASE_URL="+url, "ANTHROPIC_MODEL=claude-sonnet-4-5",
		"QWEN_USAGE_STATISTICS_ENABLED=false", "NO_BROWSER=1", "CI=1")
	out, err := cmd.CombinedOutput()
	r.output = string(out)
	if ctx.Err() != nil {
		t.Fatalf("qwen did not end: %v\n%s", err, out)
	}
	stopEngine(r.data)
	if _, err := os.Stat(filepath.Join(r.data, "jetstream")); err == nil {
		r.records = readRecord(t, r.data)
	}
	return r, model
}
