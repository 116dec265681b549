package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/policy"
)

// TestSelfProtection tries, through the Claude Code adapter with the
// built-in manifest, what an agent (or an injected prompt) would try to
// switch agentledger off or cover its tracks: every attempt on the data
// directory, its keys and checkpoints, and each host's hook configuration
// is denied as such, by any path form and any tool. Reading a host's
// configuration stays allowed.
func TestSelfProtection(t *testing.T) {
	m := policy.DefaultManifest()
	// What the engine adds at start (cmdline.Protect): its data directory,
	// checkpoint directory and signing key, and the user's home.
	m.Home = "/home/dev"
	m.ProtectedData = []string{"/home/dev/.local/share/agentledger", "/srv/checkpoints", "/srv/keys/receipt-ed25519.pem"}
	p, err := policy.Load(context.Background(), "", m)
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	e := newEngine(t, decide.NewDecider(p), st)

	bash := func(cwd, cmd string) string {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return `"cwd":"` + cwd + `","tool_name":"Bash","tool_input":` + string(in)
	}
	file := func(tool, field, p string) string {
		return `"cwd":"/workspace/shop","tool_name":"` + tool + `","tool_input":{"` + field + `":"` + p + `","content":"{}","old_string":"a","new_string":"b"}`
	}
	const shop, share = "/workspace/shop", "/home/dev/.local/share"
	denied := []struct{ name, call string }{
		{"rm the default data dir by name", bash(shop, "rm -rf ledger-data")},
		{"mv the default data dir", bash(shop, "mv ledger-data /tmp/x")},
		{"rm the data dir", bash(shop, "rm -rf /home/dev/.local/share/agentledger")},
		{"rm the data dir with a slash", bash(shop, "rm -rf /home/dev/.local/share/agentledger/")},
		{"rm the data dir by ~", bash(shop, "rm -rf ~/.local/share/agentledger")},
		{"rm the data dir by ${HOME}", bash(shop, "rm -rf ${HOME}/.local/share/agentledger")},
		{"rm the data dir relative", bash(share, "rm -rf agentledger")},
		{"rm * above the data dir", bash(share, "rm -rf *")},
		{"find -delete in the data dir", bash(shop, "find /home/dev/.local/share/agentledger -delete")},
		{"read the signing key", bash(shop, "cat ~/.local/share/agentledger/keys/receipt-ed25519.pem")},
		{"copy the keys away", bash(shop, "cp -r /home/dev/.local/share/agentledger/keys /tmp/stolen")},
		{"redirect into the spool", bash(shop, "echo x > /home/dev/.local/share/agentledger/spool/x.json")},
		{"chmod the data dir", bash(shop, "chmod -R 000 ~/.local/share/agentledger")},
		{"rsync --delete over the data dir", bash(shop, "rsync -a --delete /tmp/empty/ ~/.local/share/agentledger/")},
		{"rm the home dir", bash(shop, "rm -rf /home/dev")},
		{"mv ~/.local away", bash(shop, "mv ~/.local /tmp/old-local")},
		{"list the checkpoints", bash(shop, "ls /srv/checkpoints")},
		{"rm a checkpoint", bash(shop, "rm /srv/checkpoints/2026-11-23.note")},
		{"read a signing key elsewhere", bash(shop, "cat /srv/keys/receipt-ed25519.pem")},
		{"rm .agentledger", bash(shop, "rm -rf .agentledger")},
		{"rm ~/.claude", bash(shop, "rm -rf ~/.claude")},
		{"sed -i the user settings", bash(shop, "sed -i 's/engine hook/true/' ~/.claude/settings.json")},
		{"git checkout the project settings", bash(shop, "git checkout -- .claude/settings.json")},
		{"tee the local settings", bash(shop, "tee .claude/settings.local.json < /tmp/evil")},
		{"cp over the user settings", bash(shop, "cp /tmp/evil ~/.claude/settings.json")},
		{"mv over the project settings", bash(shop, "mv /tmp/evil .claude/settings.json")},
		{"redirect into $HOME settings", bash(shop, `echo '{}' > $HOME/.claude/settings.json`)},
		{"truncate the settings", bash(shop, "truncate -s0 /home/dev/.claude/settings.json")},
		{"symlink over the settings", bash(shop, "ln -sf /tmp/evil ~/.claude/settings.json")},
		{"cursor hooks", bash(shop, `echo '{"version":1,"hooks":{}}' > .cursor/hooks.json`)},
		{"copilot hooks", bash(shop, "rm -rf .github/hooks")},
		{"gemini settings", bash(shop, "sed -i '/hooks/d' ~/.gemini/settings.json")},
		{"Write the data dir path itself", file("Write", "file_path", "/home/dev/.local/share/agentledger")},
		{"Write into the data dir", file("Write", "file_path", "/home/dev/.local/share/agentledger/keys/receipt-ed25519.pem")},
		{"Read the signing key", file("Read", "file_path", "/home/dev/.local/share/agentledger/keys/receipt-ed25519.pem")},
		{"Grep the ledger", file("Grep", "path", "/home/dev/.local/share/agentledger")},
		{"Write the user settings", file("Write", "file_path", "/home/dev/.claude/settings.json")},
		{"Edit the project settings", file("Edit", "file_path", ".claude/settings.json")},
		{"MultiEdit gemini settings", file("MultiEdit", "file_path", "/home/dev/.gemini/settings.json")},
		{"Write cursor hooks", file("Write", "file_path", "/workspace/shop/.cursor/hooks.json")},
		{"Write a checkpoint", file("Write", "file_path", "/srv/checkpoints/forged.note")},
	}
	if len(denied) < 30 {
		t.Fatalf("only %d attempts", len(denied))
	}
	protection := func(r HookResponse) bool {
		for _, s := range r.Reasons {
			if strings.Contains(s, "agentledger's own data") || strings.Contains(s, "hook configuration") || strings.Contains(s, "which holds") {
				return true
			}
		}
		return false
	}
	ask := func(i int, call string) HookResponse {
		body := fmt.Sprintf(`{"session_id":"selfprotect-%d","transcript_path":"/home/dev/.claude/projects/shop/t.jsonl",`+
			`"permission_mode":"default","hook_event_name":"PreToolUse",%s,"tool_use_id":"toolu_1"}`, i, call)
		return e.Answer(context.Background(), Request{Host: "claude-code", Body: []byte(body)})
	}
	for i, tt := range denied {
		t.Run(tt.name, func(t *testing.T) {
			r := ask(i, tt.call)
			if r.Decision != aarts.Deny || !protection(r) {
				t.Fatalf("%s %s %v, want a deny for self-protection", r.Decision, r.ReasonCode, r.Reasons)
			}
		})
	}
	allowed := []struct{ name, call string }{
		{"read the project settings", bash(shop, "cat .claude/settings.json")},
		{"grep the user settings", bash(shop, "grep hooks ~/.claude/settings.json")},
		{"Read the user settings", file("Read", "file_path", "/home/dev/.claude/settings.json")},
		{"work in the project", bash(shop, "rm -rf build/")},
		{"git status", bash(shop, "git status")},
	}
	for i, tt := range allowed {
		t.Run(tt.name, func(t *testing.T) {
			if r := ask(100+i, tt.call); protection(r) {
				t.Fatalf("%s %s %v: a read or an ordinary action taken for self-protection", r.Decision, r.ReasonCode, r.Reasons)
			}
		})
	}
}
