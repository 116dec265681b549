package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/replay"
	"github.com/agentledger/agentledger/replay/live"
)

// liveRun is the report of `replay live`: a summary and one report per
// session.
type liveRun struct {
	Summary struct {
		Sessions       int     `json:"sessions"`
		Faulty         int     `json:"faulty_sessions"`
		ModelSteps     int     `json:"model_steps"`
		AgreeingSteps  int     `json:"agreeing_steps"`
		AgreementRate  float64 `json:"agreement_rate"`
		Diverged       int     `json:"diverged_sessions"`
		VerdictChanges int     `json:"verdict_changes"`
		ToolResults    int     `json:"tool_results"`
		ResultDiffs    int     `json:"result_diffs"`
	} `json:"summary"`
	Sessions []*live.Report `json:"sessions"`
	Faults   []string       `json:"faults"`
}

func (a *app) live(c *cli.Context) error {
	if c.NArg() > 0 {
		return cmdline.Usage(fmt.Errorf("live takes no arguments, got %q", c.Args().First()))
	}
	format := cmdline.Resolve(c, cmdline.FlagFormat)
	if format != "text" && format != "json" && format != "html" {
		return cmdline.Usage(fmt.Errorf("--format %q: replay live writes text, json or html", format))
	}
	if (c.String("mcp-command") == "") == (c.String("mcp-url") == "") {
		return cmdline.Usage(errors.New("give one of --mcp-command or --mcp-url"))
	}
	lim, p, src, st, err := a.candidate(c)
	if err != nil {
		return err
	}
	key := ""
	if v := c.String("api-key-env"); v != "" {
		if key = os.Getenv(v); key == "" {
			return cmdline.Usage(fmt.Errorf("--api-key-env %s: the variable is empty", v))
		}
	}
	tools, err := live.ConnectMCP(c.Context, c.String("mcp-command"), c.String("mcp-url"))
	if err != nil {
		return cmdline.Unavailable(err)
	}
	defer tools.Close()
	// The live run is recorded in the ledger, the one the sessions came
	// from or the one --data/--nats names.
	rec := st
	if rec == nil {
		if rec, err = cmdline.OpenStore(c, cmdline.Write); err != nil {
			return err
		}
	}
	defer rec.Close()
	d := decide.NewDecider(p)
	d.Limits = lim
	eng, err := engine.New(d, rec)
	if err != nil {
		return err
	}
	cfg := live.Config{Model: &live.Model{BaseURL: c.String("model-url"), Name: c.String("model"), APIKey: key},
		Tools: tools, Engine: eng, Decider: d}
	out, err := runLive(c, cfg, src, st)
	if err != nil {
		return err
	}
	return a.writeLive(c.String("output"), format, out)
}

// runLive replays every session of src live and sums up the run.
func runLive(c *cli.Context, cfg live.Config, src replay.Source, st *store.Store) (*liveRun, error) {
	out := &liveRun{Sessions: []*live.Report{}, Faults: []string{}}
	stamp := time.Now().UnixMilli()
	sessions := 0
	for ch, err := range src {
		if err != nil {
			return nil, sourceErr(st, err)
		}
		sessions++
		if ch.Fault != "" {
			out.Faults = append(out.Faults, fmt.Sprintf("%s: %s", ch.Key, ch.Fault))
			continue
		}
		run := cfg
		run.SessionID = fmt.Sprintf("%s~live-%d", ch.Key.Session, stamp)
		r, err := live.Run(c.Context, run, ch.Envelopes)
		if err != nil {
			return nil, cmdline.Unavailable(fmt.Errorf("%s: %w", ch.Key, err))
		}
		out.Sessions = append(out.Sessions, r)
	}
	if sessions == 0 {
		return nil, cmdline.Usage(errors.New("no sessions to replay"))
	}
	out.summarize(sessions)
	return out, nil
}

// summarize fills in the run's summary over its session reports.
func (out *liveRun) summarize(sessions int) {
	s := &out.Summary
	s.Sessions, s.Faulty = sessions, len(out.Faults)
	for _, r := range out.Sessions {
		s.ModelSteps += r.ModelSteps
		s.AgreeingSteps += r.AgreeingSteps
		if r.FirstDivergent != nil {
			s.Diverged++
		}
		s.VerdictChanges += len(r.VerdictChanges)
		s.ToolResults += len(r.ToolResults)
		for _, t := range r.ToolResults {
			if !t.Same {
				s.ResultDiffs++
			}
		}
	}
	if s.ModelSteps > 0 {
		s.AgreementRate = float64(s.AgreeingSteps) / float64(s.ModelSteps)
	}
}

// writeLive writes the run to path (stdout when empty); faulty sessions
// fail the command after it is written.
func (a *app) writeLive(path, format string, out *liveRun) error {
	w := a.stdout
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return cmdline.Unavailable(err)
		}
		defer f.Close()
		w = f
	}
	render := func() error {
		if format == "html" {
			return live.WriteHTML(w, out.Sessions, out.Faults)
		}
		return cmdline.Render(w, format, out, func(w io.Writer) error { return liveText(w, out) })
	}
	if err := render(); err != nil {
		return cmdline.Unavailable(err)
	}
	if len(out.Faults) > 0 {
		return cmdline.Fault(fmt.Errorf("%d faulty sessions were not replayed; first: %s", len(out.Faults), out.Faults[0]))
	}
	return nil
}

func liveText(w io.Writer, out *liveRun) error {
	var b strings.Builder
	for _, f := range out.Faults {
		fmt.Fprintf(&b, "FAULTY %s\n", f)
	}
	for _, r := range out.Sessions {
		fmt.Fprintf(&b, "%s/%s → %s (model %s): %d/%d model steps agree", r.TenantID, r.SessionID, r.LiveSessionID, r.Model, r.AgreeingSteps, r.ModelSteps)
		if r.FirstDivergent != nil {
			fmt.Fprintf(&b, ", first divergence at seq %d", *r.FirstDivergent)
		}
		b.WriteString("\n")
		for _, st := range r.Steps {
			if st.Agree {
				continue
			}
			rec, _ := json.Marshal(st.RecordedCalls)
			cand, _ := json.Marshal(st.CandidateCalls)
			fmt.Fprintf(&b, "    seq %d: recorded %s (%s), candidate %s (%s)\n", st.Seq, rec, st.RecordedStop, cand, st.CandidateStop)
			for _, j := range st.Judged {
				fmt.Fprintf(&b, "      the policy would %s %s %s (%s)\n", j.Decision, j.Call.Name, j.Call.Arguments, j.Rule)
			}
		}
		for _, t := range r.ToolResults {
			if !t.Same {
				fmt.Fprintf(&b, "    seq %d %s: result differs from the recording\n", t.Seq, t.Tool)
			}
		}
		for _, v := range r.VerdictChanges {
			fmt.Fprintf(&b, "    seq %d %s: verdict %s → %s (%s)\n", v.Seq, v.Hook, v.Recorded, v.Live, v.Rule)
		}
		fmt.Fprintf(&b, "    latency recorded %d ms, candidate %d ms; candidate tokens %d in, %d out\n",
			r.Recorded.LatencyMs, r.Candidate.LatencyMs, r.Candidate.PromptTokens, r.Candidate.OutputTokens)
	}
	s := out.Summary
	fmt.Fprintf(&b, "\n%d sessions (%d faulty): %d/%d model steps agree (%.0f%%), %d sessions diverged, %d verdict changes, %d/%d tool results differ\n",
		s.Sessions, s.Faulty, s.AgreeingSteps, s.ModelSteps, 100*s.AgreementRate, s.Diverged, s.VerdictChanges, s.ResultDiffs, s.ToolResults)
	_, err := io.WriteString(w, b.String())
	return err
}
