package action

// Map returns the analysis as plain values keyed by its JSON member names,
// for the policy input, without the artifacts list (the same facts in AARTS
// §6.4 form, for records). A test holds it equal to the JSON form less
// artifacts.
func (a *Analysis) Map() map[string]any {
	cmds := make([]any, len(a.Commands))
	for i, c := range a.Commands {
		m := map[string]any{"binary": c.Binary, "argv": c.Argv, "stage": c.Stage}
		if c.Piped {
			m["piped"] = true
		}
		if len(c.Via) > 0 {
			m["via"] = c.Via
		}
		if len(c.Redirects) > 0 {
			m["redirects"] = c.Redirects
		}
		if len(c.Inputs) > 0 {
			m["inputs"] = c.Inputs
		}
		if len(c.Env) > 0 {
			m["env"] = c.Env
		}
		if c.Dir != "" {
			m["dir"] = c.Dir
		}
		if c.Heredoc != "" {
			m["heredoc"] = c.Heredoc
		}
		cmds[i] = m
	}
	pkgs := make([]any, len(a.Packages))
	for i, p := range a.Packages {
		pkgs[i] = map[string]any{"manager": p.Manager, "name": p.Name, "version": p.Version, "suspect": p.Suspect}
	}
	findings := make([]any, len(a.Findings))
	for i, f := range a.Findings {
		findings[i] = map[string]any{"class": f.Class, "subject": f.Subject, "detail": f.Detail, "confidence": f.Confidence}
	}
	// Room for what the policy adds (its facts, policy.addFacts): a map
	// that grows is allocated twice.
	out := make(map[string]any, 48)
	for _, kv := range [...]struct {
		k string
		v any
	}{
		{"tool", a.Tool}, {"tool_native", a.ToolNative}, {"commands", cmds}, {"binaries", a.Binaries}, {"urls", a.URLs},
		{"hosts", a.Hosts}, {"paths", a.Paths}, {"write_paths", a.WritePaths}, {"packages", pkgs}, {"sql", a.SQL},
		{"decoded", a.Decoded}, {"piped_to_shell", a.PipedToShell}, {"findings", findings}, {"downloads", a.Downloads},
		{"executes", a.Executes}, {"caveats", a.Caveats}, {"memory_writes", a.MemoryWrites}, {"sends", a.Sends},
		{"may_write", a.MayWrite}, {"routine_caveats", a.RoutineCaveats},
	} {
		out[kv.k] = kv.v
	}
	if len(a.Symlinks) > 0 {
		links := make(map[string]any, len(a.Symlinks))
		for k, v := range a.Symlinks {
			links[k] = v
		}
		out["symlinks"] = links
	}
	if len(a.Removes) > 0 {
		out["removes"] = a.Removes
	}
	if a.EndDir != "" {
		out["end_dir"] = a.EndDir
	}
	if a.MCPServer != "" {
		out["mcp_server"] = a.MCPServer
	}
	return out
}
