package hostconfig

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WrapperPath is a hook wrapper's path, relative to its project (a POSIX
// shell script `engine install` writes beside the host's configuration,
// to be committed with it) or, for a user's install, to the user's home.
const WrapperPath = ".agentledger/hook"

// installedMark is the line of Wrapper a user's wrapper replaces with the
// hook command its install found; installedTag ends the line that runs it.
const (
	installedTag  = "# the install's own"
	installedMark = "# (a user's wrapper runs the hook program its install found here)\n"
)

// Wrapper is the project's hook wrapper. It runs agentledger-hook from PATH
// with its arguments, so the committed configuration works for every
// teammate who installed agentledger, wherever their binaries are. Where
// agentledger-hook is not on PATH, it blocks the call — exit 2 with the
// reason on stderr, which every host treats as a block (a command that is
// not found exits 127, which Claude Code and Cursor let through) — and
// leaves an EngineFailure in the data directory's spool with the call's
// host, session, length and SHA-256 (never the input itself), which the
// next agentledger engine on that directory records.
const Wrapper = `#!/bin/sh
# agentledger's hook wrapper for this project, written by "engine install".
# Commit it with the hook configuration that names it. It runs
# agentledger-hook from PATH for every call the agent host makes. Where
# agentledger is not installed, it blocks the call (exit 2, which every host
# treats as a block) and leaves a note in the agentledger data directory's
# spool, which the next agentledger engine there puts on the record.
# Install agentledger: go install ./cmd/... in a clone of agentledger
# (a user's wrapper runs the hook program its install found here)
if command -v agentledger-hook >/dev/null 2>&1; then
	exec agentledger-hook "$@"
fi
# An in-process hook asking how to reach the engine itself: there is none.
for arg in "$@"; do [ "$arg" = --wire ] && exit 1; done
host=$1
case $host in claude-code|codex|cursor|copilot|gemini|qwen-code|droid|opencode|kilo|cline) ;; *) host=unknown ;; esac
tenant=default
while [ $# -gt 0 ]; do
	case $1 in
	--tenant) shift; case ${1-} in [a-z0-9]*) tenant=$(printf %s "$1" | tr -cd 'a-z0-9-' | cut -c1-63) ;; esac ;;
	--tenant=*) tenant=$(printf %s "${1#--tenant=}" | tr -cd 'a-z0-9-' | cut -c1-63) ;;
	esac
	shift
done
echo "agentledger: agentledger-hook is not installed (not on PATH); this $host call is blocked. Install agentledger (go install ./cmd/... in a clone of agentledger) or remove its hooks from this project." >&2
umask 077
spool=${LEDGER_DATA:-${XDG_DATA_HOME:-$HOME/.local/share}/agentledger}/spool
mkdir -p "$spool" 2>/dev/null || exit 2
id=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
tmp=$spool/$id.in
cat >"$tmp"
length=$(wc -c <"$tmp" | tr -d ' ')
sum=$( (sha256sum "$tmp" 2>/dev/null || shasum -a 256 "$tmp") | cut -c1-64)
field() { grep -o -E "\"($1)\"[[:space:]]*:[[:space:]]*\"[A-Za-z0-9._:-]{1,128}\"" "$tmp" | head -n 1 | sed -E 's/.*"([^"]*)"$/\1/'; }
session=$(field 'session_id|conversation_id|sessionId|rootSessionId')
event=$(field 'hook_event_name|hookName')
tool=$(field 'tool_name|toolName|tool')
rm -f "$tmp"
[ -n "$session" ] || session=rejected
# A blocked Stop keeps the agent going (Claude Code, Codex, Qwen Code, Droid
# take exit 2 there as "do not stop"): the agent is let stop.
answered=deny
case $event in Stop|SubagentStop|stop|subagentStop) answered=allow ;; esac
ms=$(date +%s)000
printf '{"id":"%s","tenant":"%s","session":"%s","event_type":"EngineFailure","at_unix_ms":%s,"payload":{"id":"%s","event":{"host":"%s","host_event":"%s","tool_name":"%s","sha256":"%s","length":%s},"answered":"%s","error":"agentledger-hook is not installed: the project hook wrapper found none on PATH","at_unix_ms":%s}}\n' \
	"$id" "$tenant" "$session" "$ms" "$id" "$host" "$event" "$tool" "$sum" "$length" "$answered" "$ms" >"$spool/$id.tmp" &&
	mv "$spool/$id.tmp" "$spool/$id.json" && sync 2>/dev/null
[ "$answered" = allow ] && exit 0
exit 2
`

// UserWrapper is a user's hook wrapper (WrapperPath in the home): Wrapper,
// which first runs installed — the hook command, an absolute program and
// its leading arguments (agentledger-hook, or engine hook), that the
// install found — while that program is there. A host without a
// fail-closed setting (Codex, Gemini CLI, Copilot) lets a call through
// when its hook command cannot start; the wrapper, not the program, is what
// such a host runs, so a program moved or removed blocks the call and is
// noted for the record instead.
func UserWrapper(installed string) string {
	prog := CommandProgram(installed)
	if prog == "" {
		return Wrapper // nothing found at install: agentledger-hook from PATH
	}
	line := fmt.Sprintf("if [ -x %s ]; then\n\texec %s \"$@\" %s\nfi\n", shellQuote(prog), installed, installedTag)
	return strings.Replace(Wrapper, installedMark, line, 1)
}

// UserCommand is the hook command a user's configuration holds for host:
// the user's wrapper (UserWrapper, at WrapperPath in home).
func UserCommand(home, host string, args ...string) string {
	return strings.Join(append([]string{shellQuote(filepath.Join(home, WrapperPath)), host}, args...), " ")
}

// WrapperChange plans writing the hook wrapper of a scope: the project's
// (Wrapper), or the user's (UserWrapper(installed)); nil when it is already
// there as it would be written.
func WrapperChange(s Scope, installed string) (*Change, error) {
	root, err := s.root()
	if err != nil {
		return nil, err
	}
	want := Wrapper
	if s.User {
		want = UserWrapper(installed)
	}
	p := filepath.Join(root, WrapperPath)
	before, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err == nil && (bytes.Equal(before, []byte(want)) || s.User && installed == "") {
		// A user's install that names the wrapper itself (--command)
		// found no program of its own: the wrapper there stays as it is.
		return nil, nil
	}
	return &Change{Path: p, Before: before, After: []byte(want), Existed: err == nil, Mode: 0o755, root: root}, nil
}

// WrapperRemoval plans removing a scope's hook wrapper once no host's
// configuration of that scope names it: nil while one does, or when there
// is none.
func WrapperRemoval(s Scope) (*Change, error) {
	root, err := s.root()
	if err != nil {
		return nil, err
	}
	p := filepath.Join(root, WrapperPath)
	before, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	for _, host := range Hosts() {
		file, err := configFile(host, s)
		if err != nil {
			continue
		}
		if raw, err := os.ReadFile(file); err == nil && bytes.Contains(raw, []byte(WrapperPath)) {
			return nil, nil
		}
	}
	return &Change{Path: p, Before: before, Existed: true, root: root}, nil
}

// InstalledBy is the hook command a user's wrapper runs first (what
// UserWrapper was given), or "" for a project's wrapper or another file.
func InstalledBy(wrapper []byte) string {
	for line := range strings.Lines(string(wrapper)) {
		if cmd, ok := strings.CutPrefix(line, "\texec "); ok && strings.HasSuffix(cmd, " \"$@\" "+installedTag+"\n") {
			return strings.TrimSuffix(cmd, " \"$@\" "+installedTag+"\n")
		}
	}
	return ""
}
