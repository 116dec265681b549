// Package policy evaluates hook events with OPA. It loads a Rego directory
// or bundle (the embedded default unless told otherwise) and a capability
// manifest, prepares the query once, and evaluates reproducibly: the time is
// the envelope's, builtin errors are errors, and builtins that reach the
// network or are not deterministic are not available to policies.
package policy

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/action"
	"github.com/agentledger/agentledger/canon"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/manifest"
)

// Query is what a policy must define: an object with the decision fields.
const Query = "data.agentledger.policy.decision"

//go:embed bundle
var defaultBundle embed.FS

// DefaultBundle returns the embedded default policy bundle.
func DefaultBundle() fs.FS {
	sub, _ := fs.Sub(defaultBundle, "bundle")
	return sub
}

// ErrPolicy is the parent of errors in a policy's files or output.
var ErrPolicy = errors.New("policy error")

// removedBuiltins are not available to policies: they reach the network,
// read the host, or are not deterministic.
var removedBuiltins = map[string]bool{
	"http.send": true, "net.lookup_ip_addr": true, "opa.runtime": true, "rand.intn": true,
	"uuid.rfc4122": true, "uuid.parse": false, "io.jwt.encode_sign": true, "io.jwt.encode_sign_raw": true,
	"trace": true, "print": true,
}

// Capabilities returns the OPA capabilities policies are compiled with.
func Capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	kept := c.Builtins[:0:0]
	for _, b := range c.Builtins {
		if !removedBuiltins[b.Name] {
			kept = append(kept, b)
		}
	}
	c.Builtins = kept
	c.AllowNet = []string{}
	return c
}

// Policy is a prepared policy and manifest. It is safe for concurrent use.
type Policy struct {
	query    rego.PreparedEvalQuery
	manifest *manifest.Manifest
	mview    map[string]any
	mvalue   ast.Value // mview, converted once
	rules    *manifest.RuleSet
	domains  *regexp.Regexp
	denied   *regexp.Regexp // network.denied_domains
	digest   string
	guard    *guard
	modules  map[string]*ast.Module // test files included, for Test
	data     map[string]any
	// forbidden are the policy's forbidden_command_patterns, compiled
	// once: the engine matches them (input.action.forbidden_commands).
	forbidden []forbiddenPattern
	gatesOpen bool // GatesOpen
}

// forbiddenPattern is one of a policy's forbidden_command_patterns.
type forbiddenPattern struct {
	ID     string `json:"id"`
	Re     string `json:"re"`
	Reason string `json:"reason"`
	re     *regexp.Regexp
}

// forbiddenPatterns reads a policy's forbidden_command_patterns (none
// when the policy has no such rule) and compiles them.
func forbiddenPatterns(ctx context.Context, opts []func(*rego.Rego)) ([]forbiddenPattern, error) {
	opts = append(slices.Clone(opts), rego.Query(forbiddenQuery))
	rs, err := rego.New(opts...).Eval(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPolicy, forbiddenQuery, err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(rs[0].Expressions[0].Value)
	if err != nil {
		return nil, err
	}
	var out []forbiddenPattern
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPolicy, forbiddenQuery, err)
	}
	for i := range out {
		if out[i].re, err = regexp.Compile(out[i].Re); err != nil {
			return nil, fmt.Errorf("%w: %s[%d] (%s): %w", ErrPolicy, forbiddenQuery, i, out[i].ID, err)
		}
	}
	return out, nil
}

// forbiddenQuery names the policy's forbidden command patterns.
const forbiddenQuery = "data.agentledger.policy.forbidden_command_patterns"

// Load reads a policy from a directory or bundle file (path "" is the
// embedded default) and prepares it with manifest m. Errors name the file
// and line.
func Load(ctx context.Context, path string, m *manifest.Manifest) (*Policy, error) {
	return LoadLayers(ctx, []string{path}, m)
}

// LoadManifest reads a capability manifest file; "" is the built-in
// default manifest.
func LoadManifest(path string) (*manifest.Manifest, error) {
	if path == "" {
		return DefaultManifest(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := manifest.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// LoadLayers reads several policy directories or bundle files ("" or
// "default" is the embedded default bundle) as one policy: their modules
// are compiled together, so a layer can add rules (signals, helpers) to
// another's packages. Two layers may not hold the same file path or the
// same top-level data key.
func LoadLayers(ctx context.Context, paths []string, m *manifest.Manifest) (*Policy, error) {
	if len(paths) == 0 {
		paths = []string{""}
	}
	var merged *bundle.Bundle
	seen := map[string]string{}
	for _, path := range paths {
		if path == "default" {
			path = ""
		}
		var b *bundle.Bundle
		var err error
		if path == "" {
			b, err = loader.NewFileLoader().WithFS(DefaultBundle()).WithCapabilities(Capabilities()).AsBundle(".")
		} else {
			b, err = loader.NewFileLoader().WithCapabilities(Capabilities()).AsBundle(path)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: load %s: %w", ErrPolicy, nameOf(path), err)
		}
		for i, f := range b.Modules {
			// A module is named by its path inside the layer, so that a
			// policy's digest does not depend on where it was loaded from.
			if st, err := os.Stat(path); err == nil && st.IsDir() {
				if rel, err := filepath.Rel(path, f.Path); err == nil {
					f.Path = "/" + filepath.ToSlash(rel)
					b.Modules[i].Path = f.Path
				}
			}
			if other, dup := seen[f.Path]; dup {
				return nil, fmt.Errorf("%w: %s and %s both hold %s", ErrPolicy, nameOf(other), nameOf(path), f.Path)
			}
			seen[f.Path] = path
		}
		if merged == nil {
			merged = b
			continue
		}
		merged.Modules = append(merged.Modules, b.Modules...)
		for k, v := range b.Data {
			if _, dup := merged.Data[k]; dup {
				return nil, fmt.Errorf("%w: %s: data key %q is already set by an earlier layer", ErrPolicy, nameOf(path), k)
			}
			if merged.Data == nil {
				merged.Data = map[string]any{}
			}
			merged.Data[k] = v
		}
	}
	return prepare(ctx, merged, m)
}

func nameOf(path string) string {
	if path == "" {
		return "default policy"
	}
	return path
}

func prepare(ctx context.Context, b *bundle.Bundle, m *manifest.Manifest) (*Policy, error) {
	if len(b.Modules) == 0 {
		return nil, fmt.Errorf("%w: no .rego files", ErrPolicy)
	}
	p := &Policy{manifest: m, mview: m.ForPolicy(), rules: m.Compile(), guard: newGuard(m), modules: map[string]*ast.Module{}, data: b.Data}
	p.domains = regexp.MustCompile(p.mview["domains_re"].(string))
	p.denied = regexp.MustCompile(p.mview["denied_domains_re"].(string))
	opts := []func(*rego.Rego){
		rego.Capabilities(Capabilities()),
		rego.StrictBuiltinErrors(true),
		rego.EnablePrintStatements(false),
	}
	files := make([]string, 0, len(b.Modules))
	h := sha256.New()
	for _, f := range b.Modules {
		files = append(files, f.Path)
		p.modules[f.Path] = f.Parsed
	}
	sort.Strings(files)
	byPath := map[string]bundle.ModuleFile{}
	for _, f := range b.Modules {
		byPath[f.Path] = f
	}
	for _, name := range files {
		f := byPath[name]
		fmt.Fprintf(h, "module %s %d\n", strings.TrimPrefix(name, "/"), len(f.Raw))
		h.Write(f.Raw)
		if !strings.HasSuffix(name, "_test.rego") {
			opts = append(opts, rego.ParsedModule(f.Parsed))
		}
	}
	if len(b.Data) > 0 {
		data, err := canonicalJSON(b.Data)
		if err != nil {
			return nil, fmt.Errorf("%w: data: %w", ErrPolicy, err)
		}
		fmt.Fprintf(h, "data %d\n", len(data))
		h.Write(data)
		opts = append(opts, rego.Store(inmemStore(b.Data)))
	}
	mj, err := canonicalJSON(p.mview)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if p.mvalue, err = ast.InterfaceToValue(p.mview); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	fmt.Fprintf(h, "manifest %d\n", len(mj))
	h.Write(mj)
	p.digest = hex.EncodeToString(h.Sum(nil))
	q, err := rego.New(append(slices.Clone(opts), rego.Query(Query))...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	p.query = q
	if p.forbidden, err = forbiddenPatterns(ctx, opts); err != nil {
		return nil, err
	}
	return p, nil
}

func canonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canon.Canonicalize(raw, canon.Limits{MaxBytes: 64 << 20, MaxDepth: 1000})
}

// Digest is the SHA-256 over the policy's files (by path), its data and the
// manifest as the policy sees it. Every verdict records it.
func (p *Policy) Digest() string { return p.digest }

// Manifest returns the manifest the policy was prepared with.
func (p *Policy) Manifest() *manifest.Manifest { return p.manifest }

// Input is what one evaluation sees. The policy reads it as
// input.event, input.action (absent for events without an action),
// input.snapshot and input.manifest.
type Input struct {
	Event    map[string]any   // the hook event as the host sent it
	Action   *action.Analysis // the engine's reading of a tool call, or nil
	Snapshot map[string]any   // the session snapshot with this event folded in (reducer.Snapshot.Map)
	// Identity is who the sender was authenticated as (principal, agent,
	// service, scope, authenticated_by), never what the event claims:
	// input.identity. Nil reads as an empty object.
	Identity map[string]any
}

// Decision is a policy's verdict on one event.
type Decision struct {
	Decision      string         `json:"decision"`
	AARMDecision  string         `json:"aarm_decision"`
	ReasonCode    string         `json:"reason_code"`
	Category      string         `json:"category"`
	Severity      string         `json:"severity"`
	Source        string         `json:"source"`
	Confidence    float64        `json:"confidence"`
	MatchedRuleID string         `json:"matched_rule_id"`
	Reasons       []string       `json:"reasons"`
	Artifacts     []string       `json:"artifacts"`
	Constraints   map[string]any `json:"constraints"`
	Directives    map[string]any `json:"directives"`
	// Explicit is true when an allow rests on an explicit allow (a
	// manifest allow rule, an allow_always resolution) rather than on the
	// absence of any signal. Host adapters give the host's own "allow"
	// (which skips the host's permission prompt) only for explicit allows.
	Explicit     bool   `json:"explicit,omitempty"`
	PolicyDigest string `json:"policy_digest"`
}

// Verdict returns the AARTS verdict of d.
func (d *Decision) Verdict() aarts.Verdict {
	v := aarts.Verdict{
		Decision: d.Decision, Category: d.Category, Severity: d.Severity, Source: d.Source,
		Artifacts: d.Artifacts, MatchedRuleID: d.MatchedRuleID, Reasons: d.Reasons, Directives: d.Directives,
	}
	if d.Confidence < 1 {
		c := d.Confidence
		v.Confidence = &c
	}
	if d.Decision == aarts.Ask {
		v.SuggestedResolutions = []string{"allow_always", "deny_always"}
	}
	return v
}

// Evaluate runs the policy on in at time at (the envelope's timestamp).
func (p *Policy) Evaluate(ctx context.Context, in Input, at time.Time) (*Decision, error) {
	input, err := p.inputValue(in)
	if err != nil {
		return nil, fmt.Errorf("%w: input: %w", ErrPolicy, err)
	}
	// OPA would start a goroutine per evaluation to watch ctx; the
	// evaluation's cancel is tied to ctx here instead (AfterFunc starts
	// nothing until ctx is done, and a context that is never done needs
	// nothing at all).
	cancel := topdown.NewCancel()
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, cancel.Cancel)
		defer stop()
	}
	rs, err := p.query.Eval(ctx, rego.EvalParsedInput(input), rego.EvalTime(at), rego.EvalExternalCancel(cancel), rego.EvalMetrics(metrics.NoOp()))
	if err != nil {
		return nil, fmt.Errorf("%w: evaluate: %w", ErrPolicy, err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, fmt.Errorf("%w: %s is undefined", ErrPolicy, Query)
	}
	d, err := decisionOf(rs[0].Expressions[0].Value)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPolicy, Query, err)
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	d.PolicyDigest = p.digest
	return d, nil
}

// wrapperBinaries run the command that follows them; a rule may name them.
var wrapperBinaries = map[string]bool{"sudo": true, "doas": true, "env": true, "nohup": true, "nice": true, "time": true,
	"timeout": true, "stdbuf": true, "xargs": true, "exec": true, "command": true, "ionice": true, "setsid": true}

// addFacts adds to an action what the manifest says of it, computed here
// once rather than in Rego: the command lines, the subjects rules and
// patterns are tested against, the permission rules that match
// (rules.deny, rules.allow, rules.ask), the secret variables the call
// refers to, and manifest_facts.
func (p *Policy) addFacts(am map[string]any, a *action.Analysis, event map[string]any, cv coverage, shellDir string) {
	lines := make([]string, 0, len(a.Commands)+1)
	if ti, ok := event["tool_input"].(map[string]any); ok {
		if c, ok := ti["command"].(string); ok {
			lines = append(lines, c)
		}
	}
	for _, c := range a.Commands {
		lines = append(lines, strings.Join(c.Argv, " "))
		if rl := action.RuleLine(c); rl != lines[len(lines)-1] {
			lines = append(lines, rl) // git -C . push is git push to a rule
		}
		// A command run through wrappers (sudo, env, nohup, ...) is also
		// the wrappers' command line: shell(sudo:*) matches sudo systemctl.
		for i := len(c.Via) - 1; i >= 0; i-- {
			if !wrapperBinaries[c.Via[i]] {
				break
			}
			lines = append(lines, strings.Join(append(slices.Clone(c.Via[i:]), c.Argv...), " "))
		}
	}
	subjects := slices.Concat(lines, a.SQL, a.Paths, a.URLs, a.Decoded)
	m := p.rules.Match(a.Tool, a.ToolNative, subjects, a.Paths)
	am["command_lines"] = lines
	// The forbidden command patterns are matched here, with the
	// policy's own list compiled once (in Rego each evaluation built and
	// matched them: a quarter of an ordinary call's evaluation).
	forbidden := []map[string]any{}
	for _, c := range lines {
		for _, fp := range p.forbidden {
			if fp.re.MatchString(c) {
				forbidden = append(forbidden, map[string]any{"id": fp.ID, "reason": fp.Reason, "command": c})
			}
		}
	}
	am["forbidden_commands"] = forbidden
	am["subjects"] = subjects
	am["rules"] = map[string]any{"deny": m.Deny, "allow": m.Allow, "ask": m.Ask}
	am["rule_conflicts"] = p.conflicts(a, subjects, m)
	refs := []string{}
	for _, v := range p.manifest.Secrets.EnvVars {
		if p.leaksVar(a, v, subjects) {
			refs = append(refs, v)
		}
	}
	am["secret_env_refs"] = refs
	am["manifest_facts"] = manifestFacts(p.manifest, p.domains, p.denied, a, cv.binaries)
	am["changes"] = changesOf(a)
	am["protected_hits"] = orEmpty(p.guard.hits(a, shellDir))
	am["result_secrets"] = resultSecrets(event)
}

// resultSecrets names the secrets a tool result holds (detect.Secrets), for
// a PostToolUse: a result that holds one reaches the model with them taken
// out. Unlike the snapshot's data findings, they do not make the session's
// data secret (a later send is not judged exfiltration on their word).
func resultSecrets(event map[string]any) []string {
	result, ok := event["tool_result"]
	if !ok || event["hook_point"] != "PostToolUse" || result == nil {
		return []string{}
	}
	text, isString := result.(string)
	if !isString {
		b, _ := json.Marshal(result)
		text = string(b)
	}
	return orEmpty(detect.Secrets(text))
}

// matchArtifact returns the first of the action's tool, command lines and
// hosts that is in artifacts (what an *_always or *_similar resolution
// remembered), or "".
func matchArtifact(am map[string]any, a *action.Analysis, artifacts []string) string {
	if len(artifacts) == 0 {
		return ""
	}
	lines, _ := am["command_lines"].([]string)
	for _, x := range slices.Concat([]string{a.ToolNative}, lines, a.Hosts) {
		if slices.Contains(artifacts, x) {
			return x
		}
	}
	return ""
}

// inputValue builds the OPA input directly as an AST value: the manifest
// was converted once at Load, the rest is converted here, which spares OPA's
// JSON round trip of the whole input on every evaluation.
func (p *Policy) inputValue(in Input) (ast.Value, error) {
	// The input is a lazy object: OPA converts a member to its AST form
	// only when a rule reads it, and most rules read few. (An eager object
	// would hash, and so convert, everything at once.)
	identity := in.Identity
	if identity == nil {
		identity = map[string]any{}
	}
	input := map[string]any{"event": in.Event, "snapshot": in.Snapshot, "manifest": p.mvalue, "identity": identity}
	var am map[string]any
	if in.Action != nil {
		am = in.Action.Map()
		cv := p.cover(in.Action, in.Snapshot)
		shellDir, _ := in.Snapshot["shell_dir"].(string)
		p.addFacts(am, in.Action, in.Event, cv, shellDir)
		am["explicit_allow"] = cv.explicit
		am["rule_allowed"] = cv.byRule
		denied, _ := in.Snapshot["denied_artifacts"].([]string)
		am["denied_always"] = matchArtifact(am, in.Action, denied)
		input["action"] = am
	}
	input["gates"] = gates(in, p.manifest, am, p.gatesOpen)
	return ast.LazyObject(input), nil
}

// decisionOf reads the policy's decision object field by field.
func decisionOf(v any) (*Decision, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decision is %T, want an object", v)
	}
	// A field the engine does not read is refused, the first in key order
	// named (sorting only then).
	for k := range obj {
		if !decisionFields[k] {
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				if !decisionFields[k] {
					return nil, fmt.Errorf("unknown field %q", k)
				}
			}
		}
	}
	d := &Decision{}
	str := func(name string, dst *string) error {
		x, ok := obj[name]
		if !ok {
			return nil
		}
		s, ok := x.(string)
		if !ok {
			return fmt.Errorf("%s is %T, want a string", name, x)
		}
		*dst = s
		return nil
	}
	strs := func(name string, dst *[]string) error {
		x, ok := obj[name]
		if !ok {
			return nil
		}
		arr, ok := x.([]any)
		if !ok {
			return fmt.Errorf("%s is %T, want an array of strings", name, x)
		}
		out := make([]string, len(arr))
		for i, e := range arr {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("%s[%d] is %T, want a string", name, i, e)
			}
			out[i] = s
		}
		*dst = out
		return nil
	}
	object := func(name string, dst *map[string]any) error {
		x, ok := obj[name]
		if !ok {
			return nil
		}
		m, ok := x.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is %T, want an object", name, x)
		}
		*dst = plainNumbers(m).(map[string]any)
		return nil
	}
	for _, f := range []error{
		str("decision", &d.Decision), str("aarm_decision", &d.AARMDecision), str("reason_code", &d.ReasonCode),
		str("category", &d.Category), str("severity", &d.Severity), str("source", &d.Source),
		str("matched_rule_id", &d.MatchedRuleID), strs("reasons", &d.Reasons), strs("artifacts", &d.Artifacts),
		object("constraints", &d.Constraints), object("directives", &d.Directives),
	} {
		if f != nil {
			return nil, f
		}
	}
	switch x := obj["explicit"].(type) {
	case nil:
	case bool:
		d.Explicit = x
	default:
		return nil, fmt.Errorf("explicit is %T, want a boolean", x)
	}
	switch c := obj["confidence"].(type) {
	case nil:
		d.Confidence = 1
	case json.Number:
		f, err := c.Float64()
		if err != nil {
			return nil, fmt.Errorf("confidence: %w", err)
		}
		d.Confidence = f
	default:
		return nil, fmt.Errorf("confidence is %T, want a number", c)
	}
	return d, nil
}

// decisionFields are the fields of a policy's decision the engine reads.
var decisionFields = map[string]bool{
	"decision": true, "aarm_decision": true, "reason_code": true, "category": true, "severity": true, "source": true,
	"matched_rule_id": true, "reasons": true, "artifacts": true, "constraints": true, "directives": true,
	"explicit": true, "confidence": true,
}

// plainNumbers writes every number of v as JSON writes it plainly: OPA
// hands numbers that came from the input in exponent form (1048576 as
// "1.048576e+06"), which is valid JSON but which a client decoding the
// answer into an integer refuses. The value is unchanged; the record's
// canonical form was already the plain one.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return x
		}
		f, err := x.Float64()
		if err != nil {
			return x
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	case []any:
		for i := range x {
			x[i] = plainNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = plainNumbers(x[k])
		}
	}
	return v
}

var aarmDecisions = []string{aarts.AARMAllow, aarts.AARMDeny, aarts.AARMModify, aarts.AARMStepUp, aarts.AARMDefer}

func (d *Decision) check() error {
	switch {
	case d.Decision != aarts.Allow && d.Decision != aarts.Deny && d.Decision != aarts.Ask:
		return fmt.Errorf("%w: decision %q: want allow, deny or ask", ErrPolicy, d.Decision)
	case !slices.Contains(aarmDecisions, d.AARMDecision):
		return fmt.Errorf("%w: aarm_decision %q: want one of %v", ErrPolicy, d.AARMDecision, aarmDecisions)
	case aarts.AARTSFor(d.AARMDecision) != d.Decision && !(d.AARMDecision == aarts.AARMDeny && d.Decision == aarts.Deny):
		return fmt.Errorf("%w: aarm_decision %s does not go with decision %s", ErrPolicy, d.AARMDecision, d.Decision)
	case d.Severity != "info" && d.Severity != "warning" && d.Severity != "critical":
		return fmt.Errorf("%w: severity %q: want info, warning or critical", ErrPolicy, d.Severity)
	case d.Confidence < 0 || d.Confidence > 1:
		return fmt.Errorf("%w: confidence %v: want 0 to 1", ErrPolicy, d.Confidence)
	case d.Category == "":
		return fmt.Errorf("%w: category is empty: a verdict MUST say its threat category (AARTS §6.5)", ErrPolicy)
	case d.Source == "":
		return fmt.Errorf("%w: source is empty: a verdict MUST say which method produced it (AARTS §6.5)", ErrPolicy)
	}
	if d.Reasons == nil {
		d.Reasons = []string{}
	}
	if d.Artifacts == nil {
		d.Artifacts = []string{}
	}
	if d.Constraints == nil {
		d.Constraints = map[string]any{}
	}
	if d.Directives == nil {
		d.Directives = map[string]any{}
	}
	return nil
}

//go:embed default-manifest.json
var defaultManifest []byte

// DefaultManifest returns agentledger's built-in manifest, used when none
// is given.
func DefaultManifest() *manifest.Manifest {
	m, err := manifest.Parse(defaultManifest)
	if err != nil {
		panic("policy: built-in manifest: " + err.Error()) // a test keeps it valid
	}
	return m
}

// leaksVar reports whether a call refers to the secret variable v in a way
// that can put its value where it does not belong: printed (echo, printf,
// env), written into a file, piped into another program, sent to a
// destination the manifest does not list, or named by code or a command
// the analysis cannot place. A variable handed to the program that uses it
// (psql "$DATABASE_URL", a token in a header to its own listed API) is its
// use, not its leak.
func (p *Policy) leaksVar(a *action.Analysis, v string, subjects []string) bool {
	refers := func(s string) bool { return strings.Contains(s, "$"+v) || strings.Contains(s, "${"+v) }
	if !slices.ContainsFunc(subjects, refers) {
		return false
	}
	if len(a.Commands) == 0 {
		return true
	}
	found := false
	for _, c := range a.Commands {
		if !slices.ContainsFunc(c.Argv, refers) && !slices.ContainsFunc(c.Env, refers) {
			continue
		}
		found = true
		switch {
		case slices.ContainsFunc(c.Via, func(w string) bool { return w == "$()" || w == "<()" || strings.HasSuffix(w, " code") }) || len(c.Redirects) > 0:
			return true // in code, a substitution, or written to a file
		case c.Binary == "echo" || c.Binary == "printf" || c.Binary == "env" || c.Binary == "printenv" || c.Binary == "export" || c.Binary == "set":
			return true
		case slices.ContainsFunc(a.Commands, func(o action.Command) bool { return o.Piped && o.Stage > c.Stage }):
			return true // handed down a pipe
		case len(a.Hosts) > 0 && p.unlistedHost(a) != "":
			return true
		}
	}
	return !found // named where no command of the call shows it (a heredoc, decoded text)
}
