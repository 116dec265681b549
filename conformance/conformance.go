// Package conformance is the AARTS adapter conformance suite: versioned
// packs of cases, one per host, each a native hook input of that host with
// the AARTS event an adapter must map it to and, for given verdicts, the
// answer it must give in the host's own format. It runs against the
// built-in adapters and against any adapter command, and reports per host
// the AARTS conformance level (§11) the adapter reaches, with the failing
// cases named.
//
// A level is earned, not claimed: every case of that level and below
// passes; the hook points counted are those where a deny stops something
// at the host; provenance counts only where the host's input says which
// calls are a sub-agent's and the pack has both kinds; and a pack is named
// by its digest and refused when it covers less than the host documents
// or fails to catch the adapters that game the suite (mutants.go).
package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/adapter"
	"github.com/agentledger/agentledger/hookwire"
	"github.com/agentledger/agentledger/ledger"
)

// PackVersion is the version of the pack format and of the shipped pack.
const PackVersion = "1"

//go:embed pack/v1/*.json
var shipped embed.FS

// Pack is one host's cases.
type Pack struct {
	Pack         string `json:"pack"`
	Version      string `json:"version"`
	AARTSVersion string `json:"aarts_version"`
	Host         string `json:"host"`
	// HostAsks: the host prompts the user on an ask at PreToolUse (AARTS
	// §11 level 2 "interactive prompting"). A host that cannot prompt
	// enforces an ask as a deny: its pack's ask answers are its deny.
	HostAsks bool `json:"host_asks"`
	// Tools are the canonical tool kinds the host has (AARTS §7): at least
	// those the suite knows the host has (hosts.go); a level asks for them
	// all.
	Tools []string `json:"tools,omitempty"`
	Cases []Case   `json:"cases"`

	digest  string // hex SHA-256 of the pack's canonical (RFC 8785) bytes
	shipped bool   // the pack is the one this suite ships for its host
	file    string // where it was read
}

// ID names a pack in a report: by its name and version as it states them,
// and by its digest, which is what identifies it.
type ID struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// SHA256 is the hex SHA-256 of the pack file's canonical JSON (RFC
	// 8785) form.
	SHA256 string `json:"sha256"`
	// Shipped: the pack is the one this suite ships for the host.
	Shipped bool `json:"shipped"`
}

// ID is the pack's identity.
func (p *Pack) ID() ID {
	return ID{Name: p.Pack, Version: p.Version, SHA256: p.digest, Shipped: p.shipped}
}

// String is the pack as every report names it.
func (id ID) String() string {
	s := fmt.Sprintf("%s v%s sha256:%s", id.Name, id.Version, id.SHA256)
	if id.Shipped {
		return s + " (the shipped pack)"
	}
	return s + " (not the shipped pack)"
}

// Case is one native input and what an adapter must make of it.
type Case struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input,omitempty"`
	// InputText is the input as text, for input that is not I-JSON (a
	// member twice): the pack file itself stays I-JSON, so that it has
	// the canonical form its digest is of.
	InputText string `json:"input_text,omitempty"`
	Expect    Expect `json:"expect"`
	// Rewrite is the tool input of the "modify" verdict.
	Rewrite map[string]any `json:"rewrite,omitempty"`
	// Answers are, per verdict (Verdicts), a pattern of the host answer.
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
}

// Expect is the AARTS event a case's input must map to.
type Expect struct {
	// Rejected: the adapter must refuse the input (and answer a deny).
	Rejected bool `json:"rejected,omitempty"`
	// NotJudged: the host event has no AARTS hook point.
	NotJudged      bool             `json:"not_judged,omitempty"`
	HookPoint      string           `json:"hook_point,omitempty"`
	ToolName       string           `json:"tool_name,omitempty"`
	ToolNameNative string           `json:"tool_name_native,omitempty"`
	Artifacts      []aarts.Artifact `json:"artifacts,omitempty"`
	// ToolInput is the event's tool_input, compared whole: no member
	// missing, none added, none changed.
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
	// Fields is a pattern of the rest of the event (see Match).
	Fields map[string]any `json:"fields,omitempty"`
}

// Verdicts are the verdicts a case's answers are given for: an explicit
// allow, an allow that rests on no explicit rule (the host's own flow
// decides), deny, an ask in each form a host carries one out — its own
// prompt (ask), a deny held for an approver where no one can be prompted
// (ask_held), a deferral of the call to the run's caller (ask_defer) —
// and an allow that rewrites the tool input.
var Verdicts = []string{"allow", "allow_default", "deny", "ask", "ask_held", "ask_defer", "modify"}

// AskForms are the verdicts that are an ask, one per form.
var AskForms = []string{"ask", "ask_held", "ask_defer"}

// Verdict is the engine's answer as an adapter is given it: the members of
// the engine's hook response a host's answer depends on.
type Verdict struct {
	Decision   string         `json:"decision"`
	Reasons    []string       `json:"reasons,omitempty"`
	ReasonCode string         `json:"reason_code"`
	HostAnswer string         `json:"host_answer,omitempty"`
	Directives map[string]any `json:"directives,omitempty"`
	// PendingID names an ask held for an approver (ask_held, ask_defer):
	// the host's answer must name it, so that the agent (or the run's
	// caller) knows the call waits for an approval and may be sent again.
	PendingID string `json:"pending_id,omitempty"`
}

// verdict is the engine answer a case's verdict stands for. An ask goes
// as the engine sends it: to be prompted for (host answer ask), held for
// an approver (host answer deny) or deferred (host answer defer), the last
// two with the pending ask's id.
func verdict(host, name string, c *Case) Verdict {
	r := Verdict{ReasonCode: "CONFORMANCE"}
	r.Reasons = []string{"conformance " + name}
	switch name {
	case "allow", "modify":
		r.Decision, r.HostAnswer = aarts.Allow, aarts.Allow
		if name == "modify" {
			r.Directives = map[string]any{"tool_input": c.Rewrite}
		}
	case "allow_default":
		r.Decision, r.HostAnswer = aarts.Allow, aarts.HostAnswerNone
	case "deny":
		r.Decision, r.HostAnswer = aarts.Deny, aarts.Deny
	case "ask":
		r.Decision, r.HostAnswer = aarts.Ask, aarts.Ask
	case "ask_held", "ask_defer":
		r.Decision, r.HostAnswer = aarts.Ask, aarts.Deny
		if name == "ask_defer" {
			r.HostAnswer = aarts.HostAnswerDefer
		}
		sum := sha256.Sum256([]byte(host + "\x00" + c.Name + "\x00" + name))
		r.PendingID = "pending-" + hex.EncodeToString(sum[:6])
	}
	return r
}

// Request is what an adapter is given for one case and verdict (one JSON
// object on an adapter command's stdin).
type Request struct {
	Conformance string          `json:"aarts_conformance"`
	Host        string          `json:"host"`
	Input       json.RawMessage `json:"input"`
	Verdict     Verdict         `json:"verdict"`
}

// Result is what an adapter makes of a request (one JSON object on an
// adapter command's stdout): the AARTS event (null when the host event has
// no hook point), or why it refused the input, and the host answer for the
// verdict (for refused input, its deny).
type Result struct {
	Event    json.RawMessage `json:"event"`
	Rejected string          `json:"rejected,omitempty"`
	Answer   json.RawMessage `json:"answer"`
}

// Adapter runs one request.
type Adapter interface {
	Run(ctx context.Context, req Request) (Result, error)
}

// Builtin is agentledger's own adapter for a host, as the engine runs it:
// the input must be I-JSON within the default limits, then it is mapped
// and the verdict rendered.
type Builtin struct{}

// Run maps and renders req with the built-in adapter of req.Host.
func (Builtin) Run(_ context.Context, req Request) (Result, error) {
	h := adapter.Named(req.Host)
	if h == nil {
		return Result{}, fmt.Errorf("no built-in adapter for %q", req.Host)
	}
	var res Result
	var m adapter.Mapped
	_, err := ledger.Canonicalize(req.Input, ledger.Limits{})
	if err == nil {
		m, err = h.Map(req.Input, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), false)
	}
	event := m.Native
	if err != nil {
		res.Rejected = err.Error()
		event = hookwire.Probe(req.Input).HostEvent
	} else if m.Event != nil {
		res.Event = m.Event
	} else {
		res.Event = json.RawMessage("null")
	}
	v := req.Verdict
	rewrite, _ := v.Directives["tool_input"].(map[string]any)
	reasons := v.Reasons
	if v.PendingID != "" && (v.HostAnswer == aarts.Deny || v.HostAnswer == aarts.HostAnswerDefer) {
		// As the engine says it: no one in the host to ask, an approver
		// may release the call.
		reasons = append(slices.Clone(reasons), "held for an approver as pending "+v.PendingID+"; once approved, the same call sent again runs once")
	}
	res.Answer = h.Render(event, req.Input, adapter.Answer{Decision: v.Decision, HostAnswer: v.HostAnswer, Reasons: reasons, ReasonCode: v.ReasonCode, Rewrite: rewrite})
	return res, nil
}

// Command is an external adapter: a shell command given each request on
// stdin, its result read from stdout.
type Command struct {
	Line    string
	Timeout time.Duration
}

// Run runs the command for req.
func (c Command) Run(ctx context.Context, req Request) (Result, error) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	in, err := json.Marshal(req)
	if err != nil {
		return Result{}, err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", c.Line)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("adapter: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return Result{}, fmt.Errorf("adapter output is not a result object: %w: %.200q", err, out.String())
	}
	return res, nil
}

// LoadPacks reads the packs in dir, or the shipped ones when dir is "".
// Every file must be a pack of this format version; a case needs a name,
// an input and an expectation. A pack is refused (an error wrapping
// ErrCoverage) when it covers less than its host documents (Coverage) or
// lets an adapter that games the suite keep its level (Strength).
func LoadPacks(dir string) ([]*Pack, error) {
	packs, err := readPacks(dir)
	if err != nil {
		return nil, err
	}
	for _, p := range packs {
		if err := Coverage(p); err != nil {
			return nil, fmt.Errorf("%s: %w", p.file, err)
		}
		if err := Strength(context.Background(), p); err != nil {
			return nil, fmt.Errorf("%s: %w", p.file, err)
		}
	}
	return packs, nil
}

// readPacks reads and parses the packs in dir (shipped: ""), each named
// by its digest.
func readPacks(dir string) ([]*Pack, error) {
	var fsys fs.FS = os.DirFS(dir)
	if dir == "" {
		sub, err := fs.Sub(shipped, "pack/v1")
		if err != nil {
			return nil, err
		}
		fsys, dir = sub, "(shipped)"
	}
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no pack files (*.json)", dir)
	}
	var packs []*Pack
	seen := map[string]string{}
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		file := filepath.Join(dir, name)
		p, err := parsePack(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if other, ok := seen[p.Host]; ok {
			return nil, fmt.Errorf("%s: a second pack for %s (the first is %s)", file, p.Host, other)
		}
		seen[p.Host] = file
		p.file, p.shipped = file, p.digest == shippedDigest(p.Host)
		packs = append(packs, p)
	}
	sort.Slice(packs, func(i, j int) bool { return packs[i].Host < packs[j].Host })
	return packs, nil
}

// shippedDigest is the digest of the pack this suite ships for host, or
// "".
func shippedDigest(host string) string {
	data, err := fs.ReadFile(shipped, "pack/v1/"+host+".json")
	if err != nil {
		return ""
	}
	sum, err := digest(data)
	if err != nil {
		return ""
	}
	return sum
}

// digest is the hex SHA-256 of data's canonical JSON form.
func digest(data []byte) (string, error) {
	canonical, err := ledger.Canonicalize(data, ledger.Limits{})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

func parsePack(data []byte) (*Pack, error) {
	var p Pack
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	sum, err := digest(data)
	if err != nil {
		return nil, err
	}
	p.digest = sum
	switch {
	case p.Version != PackVersion:
		return nil, fmt.Errorf("pack version %q, this suite reads %q", p.Version, PackVersion)
	case p.Host == "":
		return nil, errors.New("no host")
	}
	seen := map[string]bool{}
	for i, c := range p.Cases {
		switch {
		case c.Name == "" || seen[c.Name]:
			return nil, fmt.Errorf("case %d: a name is missing or used twice (%q)", i, c.Name)
		case len(c.Input) > 0 && c.InputText != "":
			return nil, fmt.Errorf("case %q: both input and input_text", c.Name)
		case len(c.Input) == 0 && c.InputText == "":
			return nil, fmt.Errorf("case %q: no input", c.Name)
		case !c.Expect.Rejected && !c.Expect.NotJudged && c.Expect.HookPoint == "":
			return nil, fmt.Errorf("case %q: expect names no hook_point (nor rejected, nor not_judged)", c.Name)
		}
		for v := range c.Answers {
			if !slices.Contains(Verdicts, v) {
				return nil, fmt.Errorf("case %q: answer for %q, want one of %s", c.Name, v, strings.Join(Verdicts, ", "))
			}
		}
		if _, ok := c.Answers["modify"]; ok && c.Rewrite == nil {
			return nil, fmt.Errorf("case %q: a modify answer needs a rewrite", c.Name)
		}
		if c.InputText != "" {
			p.Cases[i].Input = json.RawMessage(c.InputText)
		}
		seen[c.Name] = true
	}
	return &p, nil
}
