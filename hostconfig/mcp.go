package hostconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MCP servers. A host that starts MCP servers from a JSON configuration
// (an object of name → {command, args, env, …}) can have every one of
// them started behind agentledger's MCP gateway instead: the entry's
// command becomes the engine program and its args
// [mcp-proxy --name NAME FLAGS… -- COMMAND ARGS…], so the server runs as
// before, as the proxy's child, and every call to it is judged and
// recorded. Remote servers (url, httpUrl) are left as they are.

// mcpFormat is where a host keeps its MCP servers and how it writes one
// (confirmed in the hosts' documentation and their pinned releases,
// 2026-12).
type mcpFormat struct {
	// project: the files under a project that hold servers, each of which
	// is changed where it exists (the first is the one a new server goes
	// to); none: the host reads no project file.
	project []string
	// user: the file under the home directory ("": agentledger changes
	// none, and userWhy says why).
	user, userWhy string
	key           string // the object of servers
	// commandList: an entry's command is a list, the program then its
	// arguments (opencode, Kilo), not a command and args.
	commandList bool
}

// mcpFormats are the hosts whose MCP servers WrapMCP can put behind the
// gateway.
var mcpFormats = map[string]mcpFormat{
	// Claude Code's user-scope servers live in ~/.claude.json, a file it
	// rewrites itself while it runs.
	"claude-code": {project: []string{".mcp.json"}, key: "mcpServers",
		userWhy: "Claude Code keeps the user's MCP servers in a file it rewrites itself; wrap them in a project's .mcp.json, or by hand"},
	"cursor": {project: []string{".cursor/mcp.json"}, user: ".cursor/mcp.json", key: "mcpServers"},
	"gemini": {project: []string{".gemini/settings.json"}, user: ".gemini/settings.json", key: "mcpServers"},
	// Qwen Code also reads a project's .mcp.json (Claude Code's form).
	"qwen-code": {project: []string{".qwen/settings.json", ".mcp.json"}, user: ".qwen/settings.json", key: "mcpServers"},
	"copilot":   {project: []string{".github/mcp.json", ".mcp.json"}, user: ".copilot/mcp-config.json", key: "mcpServers"},
	"droid":     {project: []string{".factory/mcp.json"}, user: ".factory/mcp.json", key: "mcpServers"},
	"cline":     {user: ".cline/data/settings/cline_mcp_settings.json", key: "mcpServers"},
	"opencode":  {project: []string{"opencode.json", ".opencode/opencode.json"}, user: ".config/opencode/opencode.json", key: "mcp", commandList: true},
	"kilo":      {project: []string{"kilo.json", "opencode.json", ".kilo/kilo.json"}, user: ".config/kilo/kilo.json", key: "mcp", commandList: true},
}

// MCPHosts are the hosts whose MCP servers WrapMCP can put behind the
// gateway.
func MCPHosts() []string {
	var out []string
	for h := range mcpFormats {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

// mcpDoc is one configuration file of a host's MCP servers, read.
type mcpDoc struct {
	change *Change
	doc    *node
}

// loadMCP reads the host's MCP configuration files for scope: the
// project's that exist (the first, absent, when none does), or the
// user's.
func loadMCP(host string, scope Scope) (mcpFormat, []mcpDoc, error) {
	f, ok := mcpFormats[host]
	if !ok {
		why := ""
		if host == "codex" {
			why = "; Codex keeps them in TOML: run codex mcp add NAME -- engine mcp-proxy --name NAME -- COMMAND ARGS…"
		}
		return f, nil, fmt.Errorf("agentledger cannot change %s's MCP servers (it can for %s)%s", host, strings.Join(MCPHosts(), ", "), why)
	}
	var paths []string
	root := filepath.Clean(scope.Dir)
	switch {
	case scope.User && f.user == "":
		return f, nil, errors.New(f.userWhy)
	case scope.User:
		home, err := scope.home()
		if err != nil {
			return f, nil, err
		}
		root, paths = home, []string{filepath.Join(home, f.user)}
	case len(f.project) == 0:
		return f, nil, fmt.Errorf("%s reads MCP servers only from the user's %s: install with --user", host, "~/"+f.user)
	case scope.Dir == "":
		return f, nil, errors.New("no project directory")
	default:
		for _, p := range f.project {
			if _, err := os.Stat(filepath.Join(scope.Dir, p)); err == nil {
				paths = append(paths, filepath.Join(scope.Dir, p))
			}
		}
		if len(paths) == 0 {
			paths = []string{filepath.Join(scope.Dir, f.project[0])}
		}
	}
	var docs []mcpDoc
	for _, p := range paths {
		c, doc, err := readMCP(f, p, root)
		if err != nil {
			return f, nil, err
		}
		docs = append(docs, mcpDoc{c, doc})
	}
	return f, docs, nil
}

// readMCP reads one file of MCP servers.
func readMCP(f mcpFormat, path, root string) (*Change, *node, error) {
	c := &Change{Path: path, root: root}
	data, err := os.ReadFile(c.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return c, object(), nil
	case err != nil:
		return nil, nil, err
	}
	c.Before, c.Existed = data, true
	if strings.TrimSpace(string(data)) == "" {
		return c, object(), nil
	}
	doc, err := parseJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w; nothing was changed", c.Path, err)
	}
	if !doc.isObj {
		return nil, nil, fmt.Errorf("%s: not a JSON object; nothing was changed", c.Path)
	}
	if s := doc.get(f.key); s != nil && !s.isObj {
		return nil, nil, fmt.Errorf("%s: %q is not an object; nothing was changed", c.Path, f.key)
	}
	return c, doc, nil
}

// joined is the changes of docs as one: the first, the others its More.
func joined(docs []mcpDoc) *Change {
	c := docs[0].change
	for _, d := range docs[1:] {
		c.More = append(c.More, d.change)
	}
	return c
}

// MCPEntry is what WrapMCP did with one server.
type MCPEntry struct {
	Name string
	// Wrapped: now started behind the gateway; Updated: it was already,
	// with other flags; Skipped: left as it is, and why.
	Wrapped, Updated bool
	Skipped          string
}

// WrapMCP plans the change that starts every stdio MCP server of the
// host's configuration behind the gateway: exe is the engine program,
// flags go between mcp-proxy's --name and the server's command (a
// --manifest, a --data). A server already behind it is updated to exe
// and flags, never wrapped twice.
func WrapMCP(host string, scope Scope, exe string, flags []string) (*Change, []MCPEntry, error) {
	f, docs, err := loadMCP(host, scope)
	if err != nil {
		return nil, nil, err
	}
	var report []MCPEntry
	for _, d := range docs {
		c, doc := d.change, d.doc
		if servers := doc.get(f.key); servers != nil {
			for _, m := range servers.obj {
				report = append(report, f.wrapEntry(m.key, m.val, exe, flags))
			}
		}
		c.After = doc.encode(indentOf(c.Before))
		if !c.Existed || doc.clean() {
			c.After = c.Before // nothing to wrap: the file stays as it is (or absent)
			if !c.Existed {
				c.After = nil
			}
		}
	}
	return joined(docs), report, nil
}

// wrapEntry wraps one server's entry in place.
func (f mcpFormat) wrapEntry(name string, e *node, exe string, flags []string) MCPEntry {
	out := MCPEntry{Name: name}
	if !e.isObj {
		out.Skipped = "not an object"
		return out
	}
	if e.get("url") != nil || e.get("httpUrl") != nil || e.get("serverUrl") != nil {
		out.Skipped = "a remote server: serve it through engine mcp-proxy --listen --upstream URL"
		return out
	}
	command, args, ok := f.commandOf(e)
	if !ok || command == "" {
		out.Skipped = "no command"
		return out
	}
	if inner, ok := proxied(args); ok {
		command, args, out.Updated = inner[0], inner[1:], true
	} else {
		out.Wrapped = true
	}
	wrapped := append([]string{"mcp-proxy", "--name", name}, flags...)
	wrapped = append(append(wrapped, "--", command), args...)
	if c, a, _ := f.commandOf(e); c == exe && slices.Equal(a, wrapped) {
		out.Updated = false // already as it should be
		return out
	}
	f.setCommand(e, exe, wrapped)
	return out
}

// commandOf is an entry's command and args, when they are strings.
func (f mcpFormat) commandOf(e *node) (string, []string, bool) {
	c := e.get("command")
	if c == nil {
		return "", nil, false
	}
	if f.commandList {
		list, ok := stringsOf(c)
		if !ok || len(list) == 0 {
			return "", nil, false
		}
		return list[0], list[1:], true
	}
	command, ok := c.scalar.(string)
	if !ok {
		return "", nil, false
	}
	var args []string
	if a := e.get("args"); a != nil {
		if args, ok = stringsOf(a); !ok {
			return "", nil, false
		}
	}
	return command, args, true
}

// setCommand makes an entry start command with args (no args: none
// written).
func (f mcpFormat) setCommand(e *node, command string, args []string) {
	if f.commandList {
		e.set("command", stringArray(append([]string{command}, args...)))
		return
	}
	e.set("command", scalar(command))
	if len(args) == 0 {
		e.remove("args")
		return
	}
	e.set("args", stringArray(args))
}

// stringsOf is a JSON array of strings, as strings.
func stringsOf(n *node) ([]string, bool) {
	if !n.isArr {
		return nil, false
	}
	out := make([]string, 0, len(n.arr))
	for _, item := range n.arr {
		s, ok := item.scalar.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func stringArray(list []string) *node {
	items := make([]*node, len(list))
	for i, a := range list {
		items[i] = scalar(a)
	}
	return array(items...)
}

// proxied returns the server's own command line of args that start it
// behind the gateway (mcp-proxy … -- COMMAND ARGS…).
func proxied(args []string) ([]string, bool) {
	if !slices.Contains(args, "mcp-proxy") {
		return nil, false
	}
	i := slices.Index(args, "--")
	if i < 0 || i == len(args)-1 || i < slices.Index(args, "mcp-proxy") {
		return nil, false
	}
	return args[i+1:], true
}

// UnwrapMCP plans the change that starts every server WrapMCP put behind
// the gateway as it was: its own command and args again.
func UnwrapMCP(host string, scope Scope) (*Change, []string, error) {
	f, docs, err := loadMCP(host, scope)
	if err != nil {
		return nil, nil, err
	}
	var restored []string
	for _, d := range docs {
		c, doc := d.change, d.doc
		n := len(restored)
		if servers := doc.get(f.key); servers != nil {
			for _, m := range servers.obj {
				if !m.val.isObj {
					continue
				}
				_, args, ok := f.commandOf(m.val)
				inner, wrapped := proxied(args)
				if !ok || !wrapped {
					continue
				}
				f.setCommand(m.val, inner[0], inner[1:])
				restored = append(restored, m.key)
			}
		}
		c.After = c.Before
		if len(restored) > n {
			c.After = doc.encode(indentOf(c.Before))
		}
		if !c.Existed {
			c.After = nil
		}
	}
	return joined(docs), restored, nil
}
