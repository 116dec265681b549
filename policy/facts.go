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
		"mcp_server_declared": a.MCPServer == "" || !namesMCPServers(m) || slices.ContainsFunc(MCPServerNames(a.MCPServer), func(name string) bool {
			return slices.Contains(m.MCP.AllowedServers, name) || slices.ContainsFunc(m.Tools, func(t string) bool { return strings.HasPrefix(t, "mcp__"+name+"__") })
		}),
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

// MCPServerNames are the names an MCP server may be declared under: the
// name the host gave it and, since hosts name one server differently
// (Claude Code by its configuration key, Cursor by its URL's host or its
// command's package, Copilot by its own prefix), the name without the
// packaging around it — @scope/server-filesystem, mcp-server-github,
// github-mcp-server and github-mcp are filesystem, github, github and
// github; a hosted server's address (api.githubcopilot.com,
// mcp.linear.app) is the service it fronts.
func MCPServerNames(server string) []string {
	out := []string{server}
	add := func(n string) {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	n := strings.ToLower(server)
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:] // @modelcontextprotocol/server-filesystem
	}
	if host, ok := hostedMCP[n]; ok {
		add(host)
	} else if strings.Count(n, ".") >= 1 && !strings.ContainsAny(n, "_ ") {
		labels := strings.Split(n, ".")
		if len(labels) >= 2 {
			add(labels[len(labels)-2]) // mcp.notion.com: notion
		}
	}
	for _, p := range []string{"mcp-server-", "server-", "mcp-", "mcp_"} {
		n = strings.TrimPrefix(n, p)
	}
	for _, s := range []string{"-mcp-server", "_mcp_server", "-mcp", "_mcp", "-server"} {
		n = strings.TrimSuffix(n, s)
	}
	add(n)
	return out
}

// hostedMCP are hosted MCP servers whose address does not name the
// service they front.
var hostedMCP = map[string]string{"api.githubcopilot.com": "github", "mcp.atlassian.com": "atlassian", "mcp.sentry.dev": "sentry"}
