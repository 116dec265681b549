package policy

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/manifest"
)

// manifestFacts says what the manifest makes of an action, so that the
// policy decides on plain facts: whether the tool is declared or needs
// approval; which hosts and binaries it denies, and which it does not vouch
// for (unlisted); which paths and secrets fall outside what it allows. A
// binary an allow rule allows wherever it runs in the action (allowed) is
// not unlisted. The policy still decides what each fact means.
func manifestFacts(m *manifest.Manifest, domains, deniedDomains *regexp.Regexp, a *action.Analysis, allowed map[string]bool) map[string]any {
	hosts, hostsDenied := []string{}, []string{}
	for _, h := range a.Hosts {
		switch {
		case deniedDomains.MatchString(h):
			hostsDenied = append(hostsDenied, h)
		case !listedHost(domains, h):
			hosts = append(hosts, h)
		}
	}
	binaries, binariesDenied := []string{}, []string{}
	for _, b := range a.Binaries {
		switch {
		case slices.Contains(m.Exec.DeniedBinaries, b):
			binariesDenied = append(binariesDenied, b)
		case !action.IsShellBuiltin(b) && !slices.Contains(m.Exec.AllowedBinaries, b) && !allowed[b]:
			binaries = append(binaries, b)
		}
	}
	writes, unlisted := []string{}, []string{}
	for _, p := range a.WritePaths {
		switch {
		case !strings.HasPrefix(p, "/") || underAny(p, m.FS.WriteRoots) || underAny(p, tempDirs):
		case underAny(p, systemDirs):
			writes = append(writes, p)
		default:
			unlisted = append(unlisted, p)
		}
	}
	reads := []string{}
	if a.Tool == aarts.ToolFileRead {
		for _, p := range a.Paths {
			if strings.HasPrefix(p, "/") && !underAny(p, m.FS.ReadRoots) {
				reads = append(reads, p)
			}
		}
	}
	secrets := []string{}
	for _, p := range a.Paths {
		// A secret file the call only writes (cp .env.example .env) is
		// not read.
		if m.SecretPath(p) && (!slices.Contains(a.WritePaths, p) || slices.Contains(a.Paths, p) && readsToo(a, p)) {
			secrets = append(secrets, p)
		}
	}
	return map[string]any{
		"mcp_server_declared": a.MCPServer == "" || slices.Contains(m.MCP.AllowedServers, a.MCPServer) ||
			slices.ContainsFunc(m.Tools, func(t string) bool { return strings.HasPrefix(t, "mcp__"+a.MCPServer+"__") }) ||
			!namesMCPServers(m),
		"tool_declared":     toolListed(m.Tools, a),
		"approval_required": toolListed(m.ApprovalRequired, a),
		"hosts_unlisted":    hosts,
		"hosts_denied":      hostsDenied,
		"binaries_unlisted": binaries,
		"binaries_denied":   binariesDenied,
		"writes_outside":    writes,
		"writes_unlisted":   unlisted,
		"reads_outside":     reads,
		"secret_paths":      secrets,
	}
}

// toolListed reports whether a manifest tool list names the action's tool:
// its canonical name, its native name, or a glob over the native name. A
// package install is a shell call.
func toolListed(entries []string, a *action.Analysis) bool {
	return ToolListed(entries, a.Tool, a.ToolNative)
}

// ToolListed reports whether manifest tool entries (a manifest's tools)
// declare a tool: by its canonical name, its native name, or a glob over
// native names (mcp__github__*). The MCP gateway lists a server's tools by
// it, as the policy judges their calls.
func ToolListed(entries []string, tool, native string) bool {
	for _, e := range entries {
		if e == tool || e == native || tool == aarts.ToolPackageInstall && e == aarts.ToolShell ||
			strings.ContainsAny(e, "*?") && manifest.MatchGlob(e, native, false) {
			return true
		}
	}
	return false
}

// tempDirs are writable whatever the manifest's write roots say.
var tempDirs = []string{"/tmp", "/var/tmp", "/private/tmp", "/private/var/folders", "/dev/shm"}

// systemDirs are where a write outside the write roots changes the
// machine itself: denied, not asked.
var systemDirs = []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/var", "/opt/homebrew/bin", "/System",
	"/Library", "/sys", "/proc", "/dev", "/root", "/snap", "/Applications"}

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		r = path.Clean(r)
		if p == r || r == "/" || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// listedHost reports whether the manifest's domains vouch for a host, or it
// is this machine (reaching it is no egress).
func listedHost(domains *regexp.Regexp, h string) bool {
	return domains.MatchString(h) || action.Loopback(h)
}

// readsToo reports whether a call that writes p also reads it: an edit
// in place, or a command that names p other than as a file it writes.
func readsToo(a *action.Analysis, p string) bool {
	if a.Tool == aarts.ToolFileEdit {
		return true
	}
	for _, c := range a.Commands {
		written := action.WrittenArgs(c)
		for _, arg := range c.Argv[1:] {
			if (arg == p || strings.HasSuffix(p, "/"+strings.TrimPrefix(arg, "./"))) && !slices.Contains(written, arg) {
				return true
			}
		}
	}
	return false
}

// namesMCPServers reports whether a manifest says which MCP servers it
// allows (mcp.allowed_servers, or tools of the form mcp__SERVER__...).
// One that does not leaves the choice to the host: a server the host's own
// configuration starts is the user's, and known.
func namesMCPServers(m *manifest.Manifest) bool {
	return len(m.MCP.AllowedServers) > 0 || slices.ContainsFunc(m.Tools, func(t string) bool { return strings.HasPrefix(t, "mcp__") })
}
