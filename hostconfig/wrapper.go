package hostconfig

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// WrapperPath is a project's hook wrapper, relative to the project: a
// POSIX shell script `engine install` writes beside the host's
// configuration, to be committed with it.
const WrapperPath = ".agentledger/hook"

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
if command -v agentledger-hook >/dev/null 2>&1; then
	exec agentledger-hook "$@"
fi
host=$1
case $host in claude-code|cursor|copilot|gemini) ;; *) host=unknown ;; esac
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
session=$(field 'session_id|conversation_id|sessionId')
event=$(field hook_event_name)
tool=$(field 'tool_name|toolName')
rm -f "$tmp"
[ -n "$session" ] || session=rejected
ms=$(date +%s)000
printf '{"id":"%s","tenant":"%s","session":"%s","event_type":"EngineFailure","at_unix_ms":%s,"payload":{"id":"%s","event":{"host":"%s","host_event":"%s","tool_name":"%s","sha256":"%s","length":%s},"answered":"deny","error":"agentledger-hook is not installed: the project hook wrapper found none on PATH","at_unix_ms":%s}}\n' \
	"$id" "$tenant" "$session" "$ms" "$id" "$host" "$event" "$tool" "$sum" "$length" "$ms" >"$spool/$id.tmp" &&
	mv "$spool/$id.tmp" "$spool/$id.json" && sync 2>/dev/null
exit 2
`

// WrapperChange plans writing the project's hook wrapper: nil when it is
// already there as Wrapper.
func WrapperChange(project string) (*Change, error) {
	p := filepath.Join(project, WrapperPath)
	before, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err == nil && bytes.Equal(before, []byte(Wrapper)) {
		return nil, nil
	}
	return &Change{Path: p, Before: before, After: []byte(Wrapper), Existed: err == nil, Mode: 0o755, root: project}, nil
}

// WrapperRemoval plans removing the project's hook wrapper once no host's
// project configuration names it: nil while one does, or when there is
// none.
func WrapperRemoval(project string) (*Change, error) {
	p := filepath.Join(project, WrapperPath)
	before, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	for _, host := range Hosts() {
		file, err := specs[host].file(Scope{Dir: project})
		if err != nil {
			continue
		}
		if raw, err := os.ReadFile(file); err == nil && bytes.Contains(raw, []byte(WrapperPath)) {
			return nil, nil
		}
	}
	return &Change{Path: p, Before: before, Existed: true, root: project}, nil
}
