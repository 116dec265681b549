// Package conformance is the AARTS adapter conformance suite: versioned
// packs of cases, one per host, each a native hook input of that host with
// the AARTS event an adapter must map it to and, for given verdicts, the
// answer it must give in the host's own format. It runs against the
// built-in adapters and against any adapter command, and reports per host
// the AARTS conformance level (§11) the adapter reaches, with the failing
// cases named.
package conformance

import (
	"bytes"
	"context"
	"embed"
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
	// Tools are the canonical tool kinds the host has (AARTS §7); a level
	// asks only for those. Empty: every kind applies.
	Tools []string `json:"tools,omitempty"`
	Cases []Case   `json:"cases"`
}

// Case is one native input and what an adapter must make of it.
type Case struct {
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	Expect Expect          `json:"expect"`
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
	// Fields is a pattern of the event (see Match).
	Fields map[string]any `json:"fields,omitempty"`
}

// Verdicts are the verdicts a case's answers are given for: an explicit
// allow, an allow that rests on no explicit rule (the host's own flow
// decides), deny, ask, and an allow that rewrites the tool input.
var Verdicts = []string{"allow", "allow_default", "deny", "ask", "modify"}

// Verdict is the engine's answer as an adapter is given it: the members of
// the engine's hook response a host's answer depends on.
type Verdict struct {
	Decision   string         `json:"decision"`
	Reasons    []string       `json:"reasons,omitempty"`
	ReasonCode string         `json:"reason_code"`
	HostAnswer string         `json:"host_answer,omitempty"`
	Directives map[string]any `json:"directives,omitempty"`
}

// verdict is the engine answer a case's verdict stands for, for a host
// that prompts for an ask (hostAsks) or is answered deny for one.
func verdict(name string, c *Case, hostAsks bool) Verdict {
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
		if !hostAsks {
			r.HostAnswer = aarts.Deny
		}
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
	res.Answer = h.Render(event, req.Input, adapter.Answer{Decision: v.Decision, HostAnswer: v.HostAnswer, Reasons: v.Reasons, ReasonCode: v.ReasonCode, Rewrite: rewrite})
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
// an input and an expectation.
func LoadPacks(dir string) ([]*Pack, error) {
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
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		p, err := parsePack(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
		}
		packs = append(packs, p)
	}
	sort.Slice(packs, func(i, j int) bool { return packs[i].Host < packs[j].Host })
	return packs, nil
}

func parsePack(data []byte) (*Pack, error) {
	var p Pack
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
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
		case len(c.Input) == 0:
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
		seen[c.Name] = true
	}
	return &p, nil
}
