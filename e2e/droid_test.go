package e2e

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// runDroid runs the real Factory Droid CLI (droid exec, autonomy high:
// it runs what its own check lets through) in a new project with
// agentledger's hooks as `engine install droid --project` writes them,
// against the scripted Anthropic model as a custom model, air-gapped (no
// Factory account: FACTORY_AIRGAP_ENABLED).
func runDroid(t *testing.T, script []turn, o hostOptions) (*hostRun, *scriptedAnthropic) {
	t.Helper()
	droid := host(t, "AGENTLEDGER_E2E_DROID")
	home, work, env := project(t)
	o.setUp(t, env, "droid", home, work)
	model, url := newScriptedAnthropicWith(t, script, o.agents)
	settings, _ := json.Marshal(map[string]any{"customModels": []any{map[string]any{"model": "claude-sonnet-4-5", "displayName": "scripted",
		"baseUrl": url, "apiKey": "sk-ant-scripted-not-a-key", "provider": "anthropic", "maxOutputTokens": 1024}}})
	writeFiles(t, home, map[string]string{".factory/settings.json": string(settings)})
	r := &hostRun{work: work, data: filepath.Join(home, ".local", "share", "agentledger"),
		results: func() map[string]string { _, res := model.calls(); return res }}
	t.Cleanup(func() { stopEngine(r.data) })
	r.play(t, append(o.envFor(env), "FACTORY_AIRGAP_ENABLED=true", "FACTORY_DROID_AUTO_UPDATE_ENABLED=false", "OTEL_SDK_DISABLED=true"),
		droid, "exec", "--model", "custom:claude-sonnet-4-5", "--auto", "high", "-o", "json", "do the task")
	return r, model
}
