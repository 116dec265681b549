package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/internal/junit"
)

// Formats are the report formats Render writes.
var Formats = []string{"text", "json", "markdown", "junit", "github", "html"}

// Render writes rep in format (one of Formats).
func Render(w io.Writer, format string, rep *Report) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "text":
		return renderText(w, rep)
	case "markdown":
		return renderMarkdown(w, rep)
	case "junit":
		return renderJUnit(w, rep)
	case "github":
		return renderGitHub(w, rep)
	case "html":
		return renderHTML(w, rep)
	}
	return fmt.Errorf("--format %q: want one of %s", format, strings.Join(Formats, ", "))
}

func value(v any) string {
	if v == nil {
		return "none"
	}
	if s, ok := v.(string); ok {
		return s
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

// short shortens digests and hashes for people.
func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func (d Diff) line() string {
	s := fmt.Sprintf("seq %d %s %s: %s → %s", d.Seq, d.HookPoint, d.Field, value(d.Recorded), value(d.Replayed))
	if d.Field == "snapshot_hash" {
		s = fmt.Sprintf("seq %d %s %s: %s → %s", d.Seq, d.HookPoint, d.Field, short(value(d.Recorded)), short(value(d.Replayed)))
	}
	if d.RuleBefore != d.RuleAfter {
		s += fmt.Sprintf(" (rule %s → %s)", orDash(d.RuleBefore), orDash(d.RuleAfter))
	} else if d.RuleAfter != "" {
		s += fmt.Sprintf(" (rule %s)", d.RuleAfter)
	}
	if d.CausedBy != nil {
		s += fmt.Sprintf(" [follows from seq %d]", *d.CausedBy)
	}
	if d.Expected {
		s += " [expected]"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func renderText(w io.Writer, rep *Report) error {
	s := rep.Summary
	var b strings.Builder
	for _, r := range rep.Sessions {
		switch {
		case r.Fault != "":
			fmt.Fprintf(&b, "FAULTY    %s/%s: %s\n", r.TenantID, r.SessionID, r.Fault)
		case r.Identical:
			fmt.Fprintf(&b, "identical %s/%s (%d steps)\n", r.TenantID, r.SessionID, r.StepsReplayed)
		default:
			fmt.Fprintf(&b, "CHANGED   %s/%s (%d steps, %d diffs)\n", r.TenantID, r.SessionID, r.StepsReplayed, len(r.Diffs))
			for _, d := range r.Diffs {
				fmt.Fprintf(&b, "    %s\n", d.line())
			}
		}
	}
	fmt.Fprintf(&b, "\n%d sessions, %d steps: %d identical, %d changed, %d faulty; %d diffs\n", s.Sessions, s.Steps, s.Identical, s.Changed, s.Faulty, s.Diffs)
	fmt.Fprintf(&b, "transitions: %s\nrules: %s\n", counts(s.Transitions), counts(s.Rules))
	fmt.Fprintf(&b, "policy: %s → %s\n", shortAll(s.PolicyBefore), short(s.PolicyAfter))
	if len(s.WouldBlock) > 0 {
		fmt.Fprintf(&b, "monitor mode: enforcing would have stopped %s (rules: %s)\n", counts(s.WouldBlock), counts(s.WouldBlockRules))
		for _, r := range rep.Sessions {
			for _, blk := range r.WouldBlock {
				fmt.Fprintf(&b, "    %s/%s seq %d %s: %s (%s) %s\n", r.TenantID, r.SessionID, blk.Seq, blk.HookPoint, blk.Decision, orDash(blk.Rule), blk.Tool)
			}
		}
	}
	b.WriteString(gateLine(rep.Gate))
	_, err := io.WriteString(w, b.String())
	return err
}

func shortAll(ds []string) string {
	if len(ds) == 0 {
		return "none"
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = short(d)
	}
	return strings.Join(out, ", ")
}

func gateLine(g GateResult) string {
	if g.FailOn == "" {
		return ""
	}
	if g.Passed {
		return fmt.Sprintf("gate (--fail-on %s): passed\n", g.FailOn)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "gate (--fail-on %s): FAILED\n", g.FailOn)
	for _, f := range g.Failures {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	return b.String()
}

// mdEscape keeps text from breaking a Markdown table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(s)
}

func renderMarkdown(w io.Writer, rep *Report) error {
	s := rep.Summary
	var b strings.Builder
	status := "passed"
	if rep.Gate.FailOn != "" && !rep.Gate.Passed {
		status = "**failed**"
	}
	fmt.Fprintf(&b, "## agentledger replay: gate %s\n\n", status)
	b.WriteString("| sessions | steps | identical | changed | faulty | diffs |\n|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d |\n\n", s.Sessions, s.Steps, s.Identical, s.Changed, s.Faulty, s.Diffs)
	fmt.Fprintf(&b, "Policy `%s` → `%s`. Transitions: %s. Rules: %s.\n", shortAll(s.PolicyBefore), short(s.PolicyAfter), counts(s.Transitions), counts(s.Rules))
	if len(s.WouldBlock) > 0 {
		fmt.Fprintf(&b, "\nMonitor mode: enforcing would have stopped %s. Rules: %s.\n\n", counts(s.WouldBlock), counts(s.WouldBlockRules))
		b.WriteString("| session | seq | hook | tool call | decision | rule |\n|---|---:|---|---|---|---|\n")
		for _, r := range rep.Sessions {
			for _, blk := range r.WouldBlock {
				fmt.Fprintf(&b, "| `%s/%s` | %d | %s | `%s` | %s | %s |\n", mdEscape(r.TenantID), mdEscape(r.SessionID), blk.Seq, blk.HookPoint,
					mdEscape(blk.Tool), blk.Decision, orDash(blk.Rule))
			}
		}
	}
	if rep.Gate.FailOn != "" && !rep.Gate.Passed {
		fmt.Fprintf(&b, "\nGate `--fail-on %s` failed:\n\n", rep.Gate.FailOn)
		for _, f := range rep.Gate.Failures {
			fmt.Fprintf(&b, "- %s\n", mdEscape(f))
		}
	}
	for _, r := range rep.Sessions {
		if r.Identical {
			continue
		}
		fmt.Fprintf(&b, "\n### `%s/%s`\n\n", mdEscape(r.TenantID), mdEscape(r.SessionID))
		if r.Fault != "" {
			fmt.Fprintf(&b, "Faulty, not replayed: %s\n", mdEscape(r.Fault))
			continue
		}
		b.WriteString("| seq | hook | tool call | field | recorded | replayed | rule | note |\n|---:|---|---|---|---|---|---|---|\n")
		for _, d := range r.Diffs {
			rec, rep := value(d.Recorded), value(d.Replayed)
			if d.Field == "snapshot_hash" {
				rec, rep = short(rec), short(rep)
			}
			note := ""
			if d.CausedBy != nil {
				note = fmt.Sprintf("follows from seq %d", *d.CausedBy)
			}
			if d.Expected {
				note = strings.TrimPrefix(note+"; expected", "; ")
			}
			fmt.Fprintf(&b, "| %d | %s | `%s` | %s | %s | %s | %s → %s | %s |\n", d.Seq, d.HookPoint, mdEscape(d.Tool), d.Field,
				mdEscape(rec), mdEscape(rep), orDash(d.RuleBefore), orDash(d.RuleAfter), note)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// renderJUnit writes one testcase per session: a faulty session is an
// error, a session with a difference the gate fails on is a failure.
func renderJUnit(w io.Writer, rep *Report) error {
	suite := junit.Suite{Name: "agentledger replay " + ModeExact}
	for _, r := range rep.Sessions {
		c := junit.Case{Name: r.TenantID + "/" + r.SessionID, Classname: "replay." + r.Mode}
		var lines []string
		failing := 0
		for _, d := range r.Diffs {
			lines = append(lines, d.line())
			if !d.Expected && fails(rep.Gate.FailOn, d) {
				failing++
			}
		}
		switch {
		case r.Fault != "":
			c.Error = &junit.Failure{Message: "faulty session", Type: "fault", Text: r.Fault}
		case failing > 0:
			c.Failure = &junit.Failure{Message: fmt.Sprintf("%d differences fail --fail-on %s", failing, rep.Gate.FailOn), Type: "diff", Text: strings.Join(lines, "\n")}
		case len(lines) > 0:
			c.SystemOut = strings.Join(lines, "\n")
		}
		suite.Add(c)
	}
	return junit.Write(w, "agentledger replay", suite)
}

// ghEscape escapes a workflow command's message.
func ghEscape(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProp escapes a workflow command's property value.
func ghProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// renderGitHub writes GitHub Actions workflow commands: an error per faulty
// session and per difference the gate fails on, a warning per other
// difference, and a notice with the summary.
func renderGitHub(w io.Writer, rep *Report) error {
	var b strings.Builder
	for _, r := range rep.Sessions {
		title := ghProp("replay " + r.TenantID + "/" + r.SessionID)
		if r.Fault != "" {
			fmt.Fprintf(&b, "::error file=%s,title=%s::%s\n", ghProp(r.Source), title, ghEscape("faulty session: "+r.Fault))
			continue
		}
		for _, d := range r.Diffs {
			level := "warning"
			if !d.Expected && fails(rep.Gate.FailOn, d) {
				level = "error"
			}
			fmt.Fprintf(&b, "::%s file=%s,title=%s::%s\n", level, ghProp(r.Source), title, ghEscape(d.line()))
		}
	}
	s := rep.Summary
	fmt.Fprintf(&b, "::notice title=agentledger replay::%s\n", ghEscape(fmt.Sprintf("%d sessions, %d steps: %d identical, %d changed, %d faulty; transitions: %s; gate %s",
		s.Sessions, s.Steps, s.Identical, s.Changed, s.Faulty, counts(s.Transitions), map[bool]string{true: "passed", false: "failed"}[rep.Gate.Passed])))
	_, err := io.WriteString(w, b.String())
	return err
}
