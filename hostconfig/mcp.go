package hostconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MCP servers. A host that starts MCP servers from its configuration
// (an "mcpServers" object of name → {command, args, env, …}) can have
// every one of them started behind agentledger's MCP gateway instead:
// the entry's command becomes the engine program and its args
// [mcp-proxy --name NAME FLAGS… -- COMMAND ARGS…], so the server runs as
// before, as the proxy's child, and every call to it is judged and
// recorded. Remote servers (url, httpUrl) are left as they are.

// mcpFiles are the files holding each host's MCP servers, in a project
// and for the user (confirmed in the hosts' documentation, 2026-11).
var mcpFiles = map[string][2]string{
	// Claude Code's user-scope servers live in ~/.claude.json, a file it
	// rewrites itself while it runs: only the project's .mcp.json is
	// changed here.
	"claude-code": {".mcp.json", ""},
	"cursor":      {".cursor/mcp.json", ".cursor/mcp.json"},
	"gemini":      {".gemini/settings.json", ".gemini/settings.json"},
}

// MCPHosts are the hosts whose MCP servers WrapMCP can put behind the
// gateway.
func MCPHosts() []string {
	var out []string
	for h := range mcpFiles {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

// loadMCP reads the host's MCP configuration file for scope.
func loadMCP(host string, scope Scope) (*Change, *node, error) {
	files, ok := mcpFiles[host]
	if !ok {
		return nil, nil, fmt.Errorf("agentledger cannot change %s's MCP servers (it can for %s)", host, strings.Join(MCPHosts(), ", "))
	}
	c := &Change{root: filepath.Clean(scope.Dir)}
	switch {
	case scope.User && files[1] == "":
		return nil, nil, fmt.Errorf("%s keeps the user's MCP servers in a file it rewrites itself; wrap them in a project's %s, or by hand", host, files[0])
	case scope.User:
		home, err := scope.home()
		if err != nil {
			return nil, nil, err
		}
		c.Path, c.root = filepath.Join(home, files[1]), home
	case scope.Dir == "":
		return nil, nil, errors.New("no project directory")
	default:
		c.Path = filepath.Join(scope.Dir, files[0])
	}
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
	if s := doc.get("mcpServers"); s != nil && !s.isObj {
		return nil, nil, fmt.Errorf("%s: \"mcpServers\" is not an object; nothing was changed", c.Path)
	}
	return c, doc, nil
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
	c, doc, err := loadMCP(host, scope)
	if err != nil {
		return nil, nil, err
	}
	var report []MCPEntry
	servers := doc.get("mcpServers")
	if servers != nil {
		for _, m := range servers.obj {
			report = append(report, wrapEntry(m.key, m.val, exe, flags))
		}
	}
	c.After = doc.encode(indentOf(c.Before))
	if !c.Existed || doc.clean() {
		c.After = c.Before // nothing to wrap: the file stays as it is (or absent)
		if !c.Existed {
			c.After = nil
		}
	}
	return c, report, nil
}

// wrapEntry wraps one server's entry in place.
func wrapEntry(name string, e *node, exe string, flags []string) MCPEntry {
	out := MCPEntry{Name: name}
	if !e.isObj {
		out.Skipped = "not an object"
		return out
	}
	if e.get("url") != nil || e.get("httpUrl") != nil || e.get("serverUrl") != nil {
		out.Skipped = "a remote server: serve it through engine mcp-proxy --listen --upstream URL"
		return out
	}
	command, args, ok := commandOf(e)
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
	if e.str("command") == exe && equalStrings(e.get("args"), wrapped) {
		out.Updated = false // already as it should be
		return out
	}
	e.set("command", scalar(exe))
	items := make([]*node, len(wrapped))
	for i, a := range wrapped {
		items[i] = scalar(a)
	}
	e.set("args", array(items...))
	return out
}

// commandOf is an entry's command and args, when they are strings.
func commandOf(e *node) (string, []string, bool) {
	c := e.get("command")
	if c == nil {
		return "", nil, false
	}
	command, ok := c.scalar.(string)
	if !ok {
		return "", nil, false
	}
	var args []string
	if a := e.get("args"); a != nil {
		if !a.isArr {
			return "", nil, false
		}
		for _, item := range a.arr {
			s, ok := item.scalar.(string)
			if !ok {
				return "", nil, false
			}
			args = append(args, s)
		}
	}
	return command, args, true
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

func equalStrings(n *node, want []string) bool {
	if n == nil || !n.isArr || len(n.arr) != len(want) {
		return false
	}
	for i, item := range n.arr {
		if s, ok := item.scalar.(string); !ok || s != want[i] {
			return false
		}
	}
	return true
}

// UnwrapMCP plans the change that starts every server WrapMCP put behind
// the gateway as it was: its own command and args again.
func UnwrapMCP(host string, scope Scope) (*Change, []string, error) {
	c, doc, err := loadMCP(host, scope)
	if err != nil {
		return nil, nil, err
	}
	var restored []string
	if servers := doc.get("mcpServers"); servers != nil {
		for _, m := range servers.obj {
			if !m.val.isObj {
				continue
			}
			_, args, ok := commandOf(m.val)
			inner, wrapped := proxied(args)
			if !ok || !wrapped {
				continue
			}
			m.val.set("command", scalar(inner[0]))
			items := make([]*node, 0, len(inner)-1)
			for _, a := range inner[1:] {
				items = append(items, scalar(a))
			}
			if len(items) == 0 {
				m.val.remove("args")
			} else {
				m.val.set("args", array(items...))
			}
			restored = append(restored, m.key)
		}
	}
	c.After = c.Before
	if len(restored) > 0 {
		c.After = doc.encode(indentOf(c.Before))
	}
	if !c.Existed {
		c.After = nil
	}
	return c, restored, nil
}
