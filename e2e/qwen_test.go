package e2e

import (
	"encoding/json"
	"path/filepath"
	"testing"
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
	o.setUp(t, env, "qwen-code", home, work)
	settings, _ := json.Marshal(map[string]any{"general": map[string]any{"enableAutoUpdate": false, "disableAutoUpdate": true},
		"privacy": map[string]any{"usageStatisticsEnabled": false}, "telemetry": map[string]any{"enabled": false}})
	writeFiles(t, home, map[string]string{".qwen/settings.json": string(settings)})
	model, url := newScriptedAnthropicWith(t, script, o.agents)
	r := &hostRun{work: work, data: filepath.Join(home, ".local", "share", "agentledger"),
		results: func() map[string]string { _, res := model.calls(); return res }}
	t.Cleanup(func() { stopEngine(r.data) })
	if mode == "" {
		mode = "yolo"
	}
	r.play(t, append(o.envFor(env), "ANTHROPIC_API_KEY=sk-ant-scripted-not-a-key", "ANTHROPIC_BASE_URL="+url, "ANTHROPIC_MODEL=claude-sonnet-4-5",
		"QWEN_USAGE_STATISTICS_ENABLED=false", "NO_BROWSER=1", "CI=1"), qwen, "do the task", "--approval-mode", mode, "--auth-type", "anthropic", "-o", "json")
	return r, model
}
