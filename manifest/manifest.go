// Package manifest is the capability manifest: what an agent may do — its
// tools, network domains, binaries, file system roots, secrets, data labels,
// budgets, approval requirements and permission rules. It decodes and
// validates a manifest, naming the field at fault, and normalizes it for the
// policy.
//
// The package is pure: callers read the file.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/canon"
)

// Version is the manifest format version.
const Version = 1

// Manifest is a capability manifest. The JSON schema is
// fixtures/manifests/manifest.schema.json; fixtures/manifests/README.md
// explains every field.
type Manifest struct {
	Version     int        `json:"version"`
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	Sensitivity string     `json:"sensitivity,omitempty"` // strict, balanced (default), permissive
	Tools       []string   `json:"tools"`                 // declared tools: canonical names or native-name globs
	Network     Network    `json:"network"`
	Exec        Exec       `json:"exec"`
	FS          FS         `json:"fs"`
	Secrets     Secrets    `json:"secrets"`
	DataLabels  DataLabels `json:"data_labels"`
	// Sealing says what, beyond secrets, is kept encrypted in the record.
	Sealing Sealing `json:"sealing"`
	Budgets Budgets `json:"budgets"`
	// ApprovalRequired lists tools (canonical names or native-name globs)
	// that always need a human's approval.
	ApprovalRequired []string    `json:"approval_required"`
	Rules            Rules       `json:"rules"`
	Forbidden        []Forbidden `json:"forbidden"`
	MCP              MCP         `json:"mcp"`
	Skills           Skills      `json:"skills"`
	// SubAgents bounds the tools of the sub-agents a host starts by its
	// own definitions (Claude Code's and Codex's agent types): canonical
	// tool names by agent type, "*" for any other type. A sub-agent gets
	// at most the declared tools; without an entry for its type, all of
	// them.
	SubAgents map[string][]string `json:"sub_agents,omitempty"`
	// Protected lists extra paths (globs) the agent must never write or
	// delete, beyond agentledger's own (data directory, keys, policies,
	// hook configuration).
	Protected []string `json:"protected"`
	// ProtectedData lists directories (absolute paths or globs) no tool
	// may touch at all: read, list, write, move or delete. agentledger's
	// own data, keys and checkpoints are built in (**/ledger-data,
	// **/.agentledger, **/.local/share/agentledger); the engine adds the
	// directories it runs with.
	ProtectedData []string `json:"protected_data,omitempty"`
	// Home is the user's home directory, by which ~ and $HOME in a command
	// are read. The engine sets it to its own user's.
	Home string `json:"home,omitempty"`
	// RequireIdentity denies tool calls whose event carries no identity
	// block naming a principal and an agent (AARM R6). Without it, the
	// missing parts are only flagged in the verdict's receipt.
	RequireIdentity bool `json:"require_identity,omitempty"`
}

// Network lists the domains the manifest vouches for and those it denies:
// exact names, or *.suffix for any subdomain of suffix. Reaching a domain
// on neither list is left to the host's own permission flow (a strict
// manifest asks); data sent there counts as leaving the allowed
// destinations.
type Network struct {
	Domains []string `json:"domains"`
	// DeniedDomains may never be reached.
	DeniedDomains []string `json:"denied_domains,omitempty"`
}

// Exec lists the binaries the manifest vouches for and those it denies. A
// binary on neither list is left to the host's own permission flow (a
// strict manifest asks): being unlisted is no harm by itself.
type Exec struct {
	AllowedBinaries []string `json:"allowed_binaries"`
	// DeniedBinaries may never run.
	DeniedBinaries []string `json:"denied_binaries,omitempty"`
}

// FS lists where files may be read and written (directory roots; a path
// under a root is inside it).
type FS struct {
	ReadRoots  []string `json:"read_roots"`
	WriteRoots []string `json:"write_roots"`
}

// Secrets are paths (globs) that must never be read or sent, and names of
// environment variables holding secrets.
type Secrets struct {
	Paths   []string `json:"paths"`
	EnvVars []string `json:"env_vars"`
}

// DataLabels attach data classes to tools and paths: reading through a
// labelled tool or from a labelled path adds the classes to the session.
type DataLabels struct {
	Tools map[string][]string `json:"tools"`
	Paths map[string][]string `json:"paths"`
	// Unlabeled says how data a tool reads is treated when no label and
	// no detector classifies it (AARM R2): "sensitive" (the default; it
	// becomes class UNCLASSIFIED, which the policy treats like the most
	// sensitive classes) or "public". Label a workspace (e.g. INTERNAL)
	// so that ordinary work is classified.
	Unlabeled string `json:"unlabeled,omitempty"`
}

// Sealing names what the engine seals in recorded events besides the
// secrets its detectors find (always sealed): data classes whose detected
// values are sealed too (PII, PAYMENT_CARD), and whole fields of the tools
// matched by each key (a native-name glob or canonical tool name), e.g.
// {"mcp__crm__*": ["tool_result"]}.
type Sealing struct {
	Classes []string            `json:"classes,omitempty"`
	Fields  map[string][]string `json:"fields,omitempty"`
}

// SecretPath reports whether p is one of the paths the manifest says hold
// secrets (secrets.paths). Templates of secret files (.env.example,
// .env.sample, .env.template, .env.dist, .env.defaults) and public keys
// (.pub) hold none: reading them is ordinary work.
func (m *Manifest) SecretPath(p string) bool {
	base := path.Base(p)
	for _, t := range []string{".example", ".sample", ".template", ".dist", ".defaults", ".pub"} {
		if strings.HasSuffix(base, t) {
			return false
		}
	}
	for _, g := range m.Secrets.Paths {
		if MatchGlob(g, p, true) {
			return true
		}
	}
	return false
}

// Treatments of unlabelled data (DataLabels.Unlabeled).
const (
	UnlabeledSensitive = "sensitive"
	UnlabeledPublic    = "public"
)

// Budgets bound a session. Steps, tool calls and wall time are opt-in: zero
// sets no limit. For the others zero means the default.
type Budgets struct {
	MaxSteps               int   `json:"max_steps"`
	MaxToolCalls           int   `json:"max_tool_calls"`
	MaxWallTimeMs          int64 `json:"max_wall_time_ms"`
	MaxOutputBytes         int64 `json:"max_output_bytes"`
	ToolTimeoutMs          int64 `json:"tool_timeout_ms"`
	MaxConcurrentDeferrals int   `json:"max_concurrent_deferrals"`
}

// Default budgets: no limit on steps, tool calls or wall time (a normal
// day of work must never hit a limit nobody set); 1 MiB of tool output and a
// 2-minute tool timeout returned as constraints; 2 approvals the engine
// waits on at once (asks the host resolves itself do not count).
var DefaultBudgets = Budgets{
	MaxOutputBytes: 1 << 20, ToolTimeoutMs: 120_000, MaxConcurrentDeferrals: 2,
}

// Rules are permission rules in tool(pattern) form, evaluated deny, then
// allow, then ask: shell(rm -rf:*), shell(git *), file_write(**/.env).
type Rules struct {
	Deny  []string `json:"deny"`
	Allow []string `json:"allow"`
	Ask   []string `json:"ask"`
}

// Forbidden is an action that is never allowed, whatever else matches:
// Match is a regular expression tested against the action's subjects (each
// shell command, SQL statement, path or URL) of tools matching Tool.
type Forbidden struct {
	ID     string `json:"id"`
	Tool   string `json:"tool"`
	Match  string `json:"match"`
	Reason string `json:"reason"`
}

// MCP lists the MCP servers an agent may connect to and the sources they may
// come from.
type MCP struct {
	AllowedServers []string `json:"allowed_servers"`
	TrustedSources []string `json:"trusted_sources"`
}

// Skills lists the sources skills and plugins may be loaded from.
type Skills struct {
	TrustedSources []string `json:"trusted_sources"`
}

// Error names the manifest field at fault.
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string { return fmt.Sprintf("manifest: %s: %s", e.Field, e.Msg) }

// Parse decodes and validates a manifest. Unknown fields are errors.
func Parse(data []byte) (*Manifest, error) {
	if _, err := canon.Canonicalize(data, canon.Limits{}); err != nil {
		return nil, &Error{Field: pathOf(err), Msg: err.Error()}
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	var m Manifest
	if err := d.Decode(&m); err != nil {
		var ute *json.UnmarshalTypeError
		switch {
		case errors.As(err, &ute):
			return nil, &Error{Field: ute.Field, Msg: fmt.Sprintf("must be %s, got %s", jsonType(ute.Type.Kind().String()), ute.Value)}
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return nil, &Error{Field: strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), Msg: "unknown field"}
		}
		return nil, &Error{Field: "$", Msg: err.Error()}
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

func pathOf(err error) string {
	var ie *canon.InputError
	if errors.As(err, &ie) && ie.Path != "" {
		return ie.Path
	}
	return "$"
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "map", "struct":
		return "an object"
	case "bool":
		return "a boolean"
	}
	return "a number"
}

var (
	domainPattern = regexp.MustCompile(`^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	rulePattern   = regexp.MustCompile(`^([A-Za-z0-9_*.-]+)\((.*)\)$`)
	idPattern     = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
)

// Validate checks every field, returning an *Error naming the first bad one.
func (m *Manifest) Validate() error {
	if m.Version != Version {
		return &Error{Field: "version", Msg: fmt.Sprintf("%d: this build reads version %d", m.Version, Version)}
	}
	if m.Name == "" {
		return &Error{Field: "name", Msg: "must not be empty"}
	}
	switch m.Sensitivity {
	case "", "strict", "balanced", "permissive":
	default:
		return &Error{Field: "sensitivity", Msg: fmt.Sprintf("%q: want strict, balanced or permissive", m.Sensitivity)}
	}
	if err := toolList("tools", m.Tools); err != nil {
		return err
	}
	if err := toolList("approval_required", m.ApprovalRequired); err != nil {
		return err
	}
	for _, kind := range sortedKeys(m.SubAgents) {
		for i, t := range m.SubAgents[kind] {
			if !aarts.IsCanonicalTool(t) {
				return &Error{Field: fmt.Sprintf("sub_agents.%s[%d]", kind, i), Msg: fmt.Sprintf("%q: want a canonical tool name (%s)", t, strings.Join(aarts.CanonicalTools, ", "))}
			}
		}
	}
	for _, f := range []named{{"network.domains", m.Network.Domains}, {"network.denied_domains", m.Network.DeniedDomains}} {
		for i, d := range f.list {
			if !domainPattern.MatchString(d) {
				return &Error{Field: fmt.Sprintf("%s[%d]", f.name, i), Msg: fmt.Sprintf("%q: want a lowercase domain or *.domain", d)}
			}
		}
	}
	for _, f := range []named{{"exec.allowed_binaries", m.Exec.AllowedBinaries}, {"exec.denied_binaries", m.Exec.DeniedBinaries}} {
		for i, b := range f.list {
			if b == "" || strings.ContainsAny(b, "/ \t") {
				return &Error{Field: fmt.Sprintf("%s[%d]", f.name, i), Msg: fmt.Sprintf("%q: want a binary name without a path", b)}
			}
		}
	}
	for _, f := range []named{{"fs.read_roots", m.FS.ReadRoots}, {"fs.write_roots", m.FS.WriteRoots}} {
		field, roots := f.name, f.list
		for i, r := range roots {
			if !strings.HasPrefix(r, "/") || path.Clean(r) != r {
				return &Error{Field: fmt.Sprintf("%s[%d]", field, i), Msg: fmt.Sprintf("%q: want a clean absolute directory", r)}
			}
		}
	}
	if m.Home != "" && (!strings.HasPrefix(m.Home, "/") || path.Clean(m.Home) != m.Home) {
		return &Error{Field: "home", Msg: fmt.Sprintf("%q: want a clean absolute directory", m.Home)}
	}
	for _, f := range []named{{"secrets.paths", m.Secrets.Paths}, {"protected", m.Protected}, {"protected_data", m.ProtectedData}} {
		field, globs := f.name, f.list
		for i, g := range globs {
			if err := checkGlob(g); err != nil {
				return &Error{Field: fmt.Sprintf("%s[%d]", field, i), Msg: err.Error()}
			}
		}
	}
	for i, c := range m.Sealing.Classes {
		if c != "PII" && c != "PAYMENT_CARD" && c != "SECRET" {
			return &Error{Field: fmt.Sprintf("sealing.classes[%d]", i), Msg: fmt.Sprintf("%q: want PII, PAYMENT_CARD or SECRET (the classes detectors find)", c)}
		}
	}
	for _, k := range sortedKeys(m.Sealing.Fields) {
		if err := checkGlob(k); err != nil {
			return &Error{Field: "sealing.fields." + k, Msg: err.Error()}
		}
	}
	switch m.DataLabels.Unlabeled {
	case "", UnlabeledSensitive, UnlabeledPublic:
	default:
		return &Error{Field: "data_labels.unlabeled", Msg: fmt.Sprintf("%q: want %q or %q", m.DataLabels.Unlabeled, UnlabeledSensitive, UnlabeledPublic)}
	}
	for _, k := range sortedKeys(m.DataLabels.Tools) {
		if err := labels("data_labels.tools."+k, m.DataLabels.Tools[k]); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(m.DataLabels.Paths) {
		if err := checkGlob(k); err != nil {
			return &Error{Field: "data_labels.paths." + k, Msg: err.Error()}
		}
		if err := labels("data_labels.paths."+k, m.DataLabels.Paths[k]); err != nil {
			return err
		}
	}
	b := m.Budgets
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"max_steps", int64(b.MaxSteps)}, {"max_tool_calls", int64(b.MaxToolCalls)}, {"max_wall_time_ms", b.MaxWallTimeMs},
		{"max_output_bytes", b.MaxOutputBytes}, {"tool_timeout_ms", b.ToolTimeoutMs}, {"max_concurrent_deferrals", int64(b.MaxConcurrentDeferrals)},
	} {
		if f.v < 0 {
			return &Error{Field: "budgets." + f.name, Msg: fmt.Sprintf("%d: must not be negative", f.v)}
		}
	}
	for _, f := range []named{{"rules.deny", m.Rules.Deny}, {"rules.allow", m.Rules.Allow}, {"rules.ask", m.Rules.Ask}} {
		kind, rules := f.name, f.list
		for i, r := range rules {
			if _, err := ParseRule(r); err != nil {
				return &Error{Field: fmt.Sprintf("%s[%d]", kind, i), Msg: err.Error()}
			}
		}
	}
	seen := map[string]bool{}
	for i, f := range m.Forbidden {
		field := fmt.Sprintf("forbidden[%d]", i)
		switch {
		case !idPattern.MatchString(f.ID):
			return &Error{Field: field + ".id", Msg: fmt.Sprintf("%q: want 1-64 of [A-Za-z0-9_.-]", f.ID)}
		case seen[f.ID]:
			return &Error{Field: field + ".id", Msg: fmt.Sprintf("%q is used twice", f.ID)}
		case f.Tool == "":
			return &Error{Field: field + ".tool", Msg: "must not be empty"}
		case f.Reason == "":
			return &Error{Field: field + ".reason", Msg: "must not be empty"}
		}
		seen[f.ID] = true
		if _, err := regexp.Compile(f.Match); err != nil || f.Match == "" {
			return &Error{Field: field + ".match", Msg: fmt.Sprintf("%q is not a regular expression", f.Match)}
		}
	}
	for _, f := range []named{{"mcp.trusted_sources", m.MCP.TrustedSources}, {"skills.trusted_sources", m.Skills.TrustedSources}} {
		field, srcs := f.name, f.list
		for i, s := range srcs {
			if !slices.Contains([]string{"managed", "project", "user", "marketplace"}, s) {
				return &Error{Field: fmt.Sprintf("%s[%d]", field, i), Msg: fmt.Sprintf("%q: want managed, project, user or marketplace", s)}
			}
		}
	}
	return nil
}

type named struct {
	name string
	list []string
}

func toolList(field string, tools []string) error {
	for i, t := range tools {
		if t == "" || strings.ContainsAny(t, " ()") {
			return &Error{Field: fmt.Sprintf("%s[%d]", field, i), Msg: fmt.Sprintf("%q: want a canonical tool name (%s) or a native tool name glob", t, strings.Join(aarts.CanonicalTools, ", "))}
		}
	}
	return nil
}

func labels(field string, ls []string) error {
	for i, l := range ls {
		if l == "" || strings.ToUpper(l) != l || strings.ContainsAny(l, " \t") {
			return &Error{Field: fmt.Sprintf("%s[%d]", field, i), Msg: fmt.Sprintf("%q: want an upper-case class such as PII", l)}
		}
	}
	return nil
}

func checkGlob(g string) error {
	if g == "" {
		return errors.New("empty glob")
	}
	if strings.Contains(g, "***") {
		return fmt.Errorf("%q: *** is not a glob", g)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Rule is a parsed tool(pattern) permission rule.
type Rule struct {
	Text    string `json:"rule"`
	Tool    string `json:"tool"`    // canonical name, native name or glob
	Pattern string `json:"pattern"` // as written
	// Glob is Pattern as an OPA glob, a trailing :* made **. For file
	// tools "/" delimits: * stays within a path segment and ** crosses
	// them. For every other tool (a shell command, a URL) * matches any
	// text, so shell(git *) allows "git add src/x.go".
	Glob string `json:"glob"`
}

// ParseRule parses tool(pattern). An empty pattern or * matches any input.
func ParseRule(s string) (Rule, error) {
	m := rulePattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Rule{}, fmt.Errorf("%q: want tool(pattern), such as shell(git *)", s)
	}
	r := Rule{Text: s, Tool: m[1], Pattern: m[2]}
	g := r.Pattern
	if g == "" {
		g = "**"
	}
	if strings.HasSuffix(g, ":*") {
		g = strings.TrimSuffix(g, ":*") + "**"
	}
	if strings.Contains(g, "***") {
		return Rule{}, fmt.Errorf("%q: *** is not a pattern", s)
	}
	r.Glob = g
	return r, nil
}

// ForPolicy returns the manifest as the policy sees it: plain JSON values,
// budgets with defaults filled in, rules parsed, lists never null.
func (m *Manifest) ForPolicy() map[string]any {
	c := *m
	d := DefaultBudgets
	b := &c.Budgets
	if b.MaxSteps == 0 {
		b.MaxSteps = d.MaxSteps
	}
	if b.MaxToolCalls == 0 {
		b.MaxToolCalls = d.MaxToolCalls
	}
	if b.MaxWallTimeMs == 0 {
		b.MaxWallTimeMs = d.MaxWallTimeMs
	}
	if b.MaxOutputBytes == 0 {
		b.MaxOutputBytes = d.MaxOutputBytes
	}
	if b.ToolTimeoutMs == 0 {
		b.ToolTimeoutMs = d.ToolTimeoutMs
	}
	if b.MaxConcurrentDeferrals == 0 {
		b.MaxConcurrentDeferrals = d.MaxConcurrentDeferrals
	}
	if c.Sensitivity == "" {
		c.Sensitivity = "balanced"
	}
	if c.DataLabels.Tools == nil {
		c.DataLabels.Tools = map[string][]string{}
	}
	if c.DataLabels.Paths == nil {
		c.DataLabels.Paths = map[string][]string{}
	}
	raw, _ := json.Marshal(c)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	parse := func(rs []string) []any {
		out := []any{}
		for _, r := range rs {
			p, _ := ParseRule(r)
			out = append(out, map[string]any{"rule": p.Text, "tool": p.Tool, "pattern": p.Pattern, "glob": p.Glob})
		}
		return out
	}
	out["compiled_rules"] = map[string]any{"deny": parse(m.Rules.Deny), "allow": parse(m.Rules.Allow), "ask": parse(m.Rules.Ask)}
	out["domains_re"] = domainsRegexp(m.Network.Domains)
	out["denied_domains_re"] = domainsRegexp(m.Network.DeniedDomains)
	nullToEmpty(out)
	return out
}

// fileTools take path patterns: * stays within one path segment.
var fileTools = map[string]bool{aarts.ToolFileRead: true, aarts.ToolFileWrite: true, aarts.ToolFileEdit: true, aarts.ToolFileDelete: true}

// GlobRegexp translates a rule glob into a regular expression body: **
// matches anything; * anything but "/" when paths is set, else anything;
// ? one character (not "/" for paths).
func GlobRegexp(glob string, paths bool) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; {
		case c == '*' && i+1 < len(glob) && glob[i+1] == '*':
			b.WriteString(".*")
			i++
		case c == '*' && paths:
			b.WriteString("[^/]*")
		case c == '*':
			b.WriteString(".*")
		case c == '?' && paths:
			b.WriteString("[^/]")
		case c == '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return "(?s:" + b.String() + ")"
}

// domainsRegexp compiles the allowed domains into one anchored expression;
// it matches nothing when no domain is allowed.
func domainsRegexp(domains []string) string {
	if len(domains) == 0 {
		return "^$."
	}
	parts := make([]string, len(domains))
	for i, d := range domains {
		if rest, ok := strings.CutPrefix(d, "*."); ok {
			parts[i] = `[^.]+(?:\.[^.]+)*\.` + regexp.QuoteMeta(rest)
		} else {
			parts[i] = regexp.QuoteMeta(d)
		}
	}
	return "^(?:" + strings.Join(parts, "|") + ")$"
}

// nullToEmpty replaces null lists and objects with empty ones, so the
// policy never has to tell missing from empty.
func nullToEmpty(v map[string]any) {
	for k, x := range v {
		switch y := x.(type) {
		case nil:
			v[k] = []any{}
		case map[string]any:
			nullToEmpty(y)
		}
	}
}
