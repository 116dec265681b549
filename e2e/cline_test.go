package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// runCline runs the real Cline CLI (cline PROMPT, headless: it runs what
// the model asks, with no one to ask) in a new git repository with
// agentledger's hook files as `engine install cline --project` writes
// them, against the scripted Chat Completions API as an OpenAI-compatible
// provider; its sessions run in its own process, not a daemon.
func runCline(t *testing.T, script []turn, o hostOptions) (*hostRun, *scriptedChat) {
	t.Helper()
	cline := host(t, "AGENTLEDGER_E2E_CLINE")
	home, work, env := project(t)
	gitRepo(t, work)
	o.setUp(t, env, "cline", home, work)
	model, url := newScriptedChat(t, script, o.agents)
	env = append(o.envFor(env), "CLINE_SESSION_BACKEND_MODE=local", "CLINE_NO_AUTO_UPDATE=1", "DISABLE_TELEMETRY=1", "DO_NOT_TRACK=1")
	auth := exec.Command(cline, "auth", "-p", "openai-compatible", "-k", "sk-scripted-not-a-key", "-b", url+"/v1", "-m", "mock")
	auth.Dir, auth.Env = work, env
	if out, err := auth.CombinedOutput(); err != nil {
		t.Fatalf("cline auth: %v: %s", err, out)
	}
	r := &hostRun{work: work, data: filepath.Join(home, ".local", "share", "agentledger"), results: model.results}
	t.Cleanup(func() { stopEngine(r.data) })
	r.play(t, env, cline, "-P", "openai-compatible", "-m", "mock", "do the task")
	return r, model
}
