package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// runCopilot runs the real GitHub Copilot CLI (copilot -p, all tools
// allowed: its headless mode has no one to ask) in a new git repository
// with agentledger's hooks as `engine install copilot --project` writes
// them (installArgs add to it), against the scripted Anthropic model as
// its own-model provider, offline (no GitHub login).
func runCopilot(t *testing.T, script []turn, installArgs ...string) (*hostRun, *scriptedAnthropic) {
	t.Helper()
	return runCopilotWith(t, script, hostOptions{install: installArgs})
}

// hostOptions vary a host's run: more arguments of engine install, and
// files the project holds before the run.
type hostOptions struct {
	install []string
	files   map[string]string
	hostEnv func(env []string) []string // the host's environment, from the one agentledger was installed in
	agents  map[string][]turn           // sub-agents' scripts (newScriptedAnthropicWith), where the host runs them
	// mcp: the host's MCP servers (in files, or homeFiles) are put behind
	// agentledger's gateway too (engine install HOST --mcp).
	mcp       bool
	homeFiles map[string]string // files under the home directory
}

// setUp makes a host's project as o says: its files and the home's,
// agentledger's hooks (engine install HOST --project, with o.install),
// and with o.mcp the host's MCP servers behind the gateway (engine
// install HOST --mcp: for the user where the host reads only the user's
// servers, Cline).
func (o hostOptions) setUp(t *testing.T, env []string, name, home, work string) {
	t.Helper()
	writeFiles(t, work, o.files)
	writeFiles(t, home, o.homeFiles)
	install(t, env, append([]string{name, "--project", work}, o.install...)...)
	o.installMCP(t, env, name, work)
}

// installMCP puts the host's MCP servers behind the gateway, with o.mcp.
func (o hostOptions) installMCP(t *testing.T, env []string, name, work string) {
	t.Helper()
	if !o.mcp {
		return
	}
	scope := []string{"--project", work}
	if name == "cline" {
		scope = []string{"--user"}
	}
	install(t, env, append([]string{name, "--mcp"}, scope...)...)
}

// envFor is env as o.hostEnv makes it for the host.
func (o hostOptions) envFor(env []string) []string {
	if o.hostEnv == nil {
		return env
	}
	return o.hostEnv(env)
}

// writeFiles writes files (path relative to dir → content).
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runCopilotWith is runCopilot with options.
func runCopilotWith(t *testing.T, script []turn, o hostOptions) (*hostRun, *scriptedAnthropic) {
	t.Helper()
	copilot := host(t, "AGENTLEDGER_E2E_COPILOT")
	home, work, env := project(t)
	gitRepo(t, work)
	o.setUp(t, env, "copilot", home, work)
	model, url := newScriptedAnthropicWith(t, script, o.agents)
	r := &hostRun{work: work, data: filepath.Join(home, ".local", "share", "agentledger"),
		results: func() map[string]string { _, res := model.calls(); return res }}
	t.Cleanup(func() { stopEngine(r.data) })
	r.play(t, append(o.envFor(env), "COPILOT_PROVIDER_TYPE=anthropic", "COPILOT_PROVIDER_BASE_URL="+url, "COPILOT_PROVIDER_API_KEY=sk-ant-scripted-not-a-key",
		"COPILOT_MODEL=claude-sonnet-4-5", "COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false", "NO_COLOR=1"),
		copilot, "-p", "do the task", "--allow-all-tools", "--trust-folder", "--disable-client-telemetry", "--log-dir", filepath.Join(home, "copilot-logs"))
	return r, model
}

// gitRepo makes dir a git repository with one commit (hosts that find
// their project by its repository: Copilot, Cline).
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	git := exec.Command("sh", "-c", "git init -q -b main && git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m init")
	git.Dir = dir
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
}
