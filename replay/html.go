package replay

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/page"
)

// htmlReport is the report page's body: the gate and summary on top, then
// faulty sessions, each changed session as a timeline, and the identical
// ones collapsed into one list.
var htmlReport = template.Must(template.New("report").Funcs(page.Funcs).Parse(`
<header>
<h1>agentledger replay: gate {{if .Failed}}<span class="fail" id="gate">failed</span>{{else}}<span class="pass" id="gate">passed</span>{{end}}</h1>
<p class="muted">{{if .Gate.FailOn}}--fail-on {{.Gate.FailOn}}. {{end}}Policy {{range $i, $d := .S.PolicyBefore}}{{if $i}}, {{end}}<code>{{short $d}}</code>{{else}}none{{end}} → <code>{{short .S.PolicyAfter}}</code></p>
<div class="cards" id="summary">
<div class="card"><b id="n-sessions">{{.S.Sessions}}</b><span>sessions</span></div>
<div class="card"><b id="n-steps">{{.S.Steps}}</b><span>steps</span></div>
<div class="card"><b id="n-identical">{{.S.Identical}}</b><span>identical</span></div>
<div class="card"><b id="n-changed">{{.S.Changed}}</b><span>changed</span></div>
<div class="card"><b id="n-faulty">{{.S.Faulty}}</b><span>faulty</span></div>
<div class="card"><b id="n-diffs">{{.S.Diffs}}</b><span>differences</span></div>
</div>
{{if .Failures}}<section class="box" id="gate-failures"><h3>Why the gate failed</h3><ul>{{range .Failures}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
</header>
{{if or .Transitions .Rules}}<h2>What changed</h2>
<table id="transitions"><tr><th>transition</th><th class="num">steps</th></tr>{{range .Transitions}}<tr><td>{{.Label}}</td><td class="num">{{.Count}}</td></tr>{{end}}</table>
{{if .Rules}}<h3>Changed decisions by rule</h3>{{bars "Changed decisions by rule" .Rules}}{{end}}{{end}}
{{if .WouldBlock}}<h2>Monitor mode: what enforcing would have stopped</h2>
{{bars "Would-be blocks by rule" .WouldBlockRules}}
<table id="would-block"><tr><th>session</th><th class="num">seq</th><th>hook</th><th>action</th><th>decision</th><th>rule</th></tr>
{{range .WouldBlock}}<tr class="would-block"><td><code>{{.Key}}</code></td><td class="num">{{.Seq}}</td><td>{{.HookPoint}}</td><td class="act">{{.Tool}}</td><td><span class="d {{decision .Decision}}">{{.Decision}}</span></td><td>{{.Rule}}</td></tr>
{{end}}</table>{{end}}
{{if .Filter}}<p class="noprint"><input id="filter" type="search" placeholder="Filter sessions, tools, rules…" aria-label="Filter sessions" hidden> <span id="filter-count" class="muted"></span></p>{{end}}
{{if .Faulty}}<h2>Faulty sessions ({{len .Faulty}})</h2>
{{range .Faulty}}<section class="box faulty" data-filter="{{.Filter}}"><h3><code>{{.Key}}</code> <span class="d deny">faulty</span></h3>
{{if .Faults}}<table><tr><th>kind</th><th class="num">seq</th><th>where</th><th>detail</th></tr>{{range .Faults}}<tr class="fault"><td>{{.Kind}}</td><td class="num">{{.Seq}}</td><td>{{.Where}}</td><td>{{.Detail}}</td></tr>{{end}}</table>{{else}}<p>{{.Fault}}</p>{{end}}
</section>{{end}}{{end}}
{{if .Changed}}<h2>Changed sessions ({{len .Changed}})</h2>
{{range .Changed}}<section class="box session" id="{{.ID}}" data-filter="{{.Filter}}">
<h3><code>{{.Key}}</code> <span class="muted">{{.Steps}} steps, {{.Diffs}} differences{{if .Source}}, from {{.Source}}{{end}}</span></h3>
<p class="muted">Replayed decisions, one square per step; changed steps are outlined.</p>
{{strip (printf "Decisions of %s" .Key) .Cells}}
<table class="timeline"><tr><th class="num">seq</th><th>hook point</th><th>action</th><th>recorded</th><th>replayed</th><th>differences</th></tr>
{{range .Rows}}<tr id="{{.ID}}" class="step{{if .Changed}} changed{{end}}"><td class="num">{{.Seq}}</td><td>{{.HookPoint}}</td><td class="act">{{.Tool}}</td>
<td>{{if .Recorded}}<span class="d {{decision .Recorded}}">{{.Recorded}}</span>{{else}}<span class="d none">none recorded</span>{{end}}{{if .RuleBefore}}<br><span class="muted">{{.RuleBefore}}</span>{{end}}</td>
<td><span class="d {{decision .Replayed}}">{{.Replayed}}</span>{{if .RuleAfter}}<br><span class="muted">{{.RuleAfter}}</span>{{end}}</td>
<td>{{range .Diffs}}<div class="diff">{{.Field}}: {{.Recorded}} → {{.Replayed}}{{if .CausedBy}} <a class="caused-by" href="#{{.CausedBy}}">follows from seq {{.CausedSeq}}</a>{{end}}{{if .Expected}} <span class="muted">(expected)</span>{{end}}{{if .Shredded}} <span class="muted">(shredded)</span>{{end}}</div>{{end}}</td></tr>
{{end}}</table></section>
{{end}}{{end}}
{{if .Identical}}<h2>Identical sessions ({{len .Identical}})</h2>
<details id="identical"><summary>Show the {{len .Identical}} sessions that replayed identically</summary>
<ul class="names">{{range .Identical}}<li data-filter="{{.Filter}}">{{.Key}} <span class="muted">({{.Steps}})</span></li>{{end}}</ul></details>{{end}}
`))

type htmlSession struct {
	ID, Key, Filter, Source, Fault string
	Steps, Diffs                   int
	Faults                         []htmlFault
	Cells                          []page.Cell
	Rows                           []htmlRow
}

type htmlFault struct {
	Kind, Where, Detail string
	Seq                 uint64
}

type htmlRow struct {
	Step
	ID    string
	Diffs []htmlDiff
}

type htmlDiff struct {
	Field, Recorded, Replayed, CausedBy string
	CausedSeq                           uint64
	Expected, Shredded                  bool
}

type htmlBlock struct {
	Block
	Key string
}

// renderHTML writes rep as one self-contained page (package page).
func renderHTML(w io.Writer, rep *Report) error {
	s := rep.Summary
	data := map[string]any{"S": s, "Gate": rep.Gate, "Failed": rep.Gate.FailOn != "" && !rep.Gate.Passed, "Failures": rep.Gate.Failures,
		"Transitions": countBars(s.Transitions), "Rules": countBars(s.Rules), "WouldBlockRules": wouldBlockBars(rep)}
	var faulty, altered, identical []htmlSession
	var blocks []htmlBlock
	for i, r := range rep.Sessions {
		key := r.TenantID + "/" + r.SessionID
		hs := htmlSession{ID: fmt.Sprintf("s%d", i), Key: key, Source: r.Source, Fault: r.Fault, Steps: r.StepsReplayed, Diffs: len(r.Diffs)}
		filter := []string{key}
		for _, b := range r.WouldBlock {
			blocks = append(blocks, htmlBlock{Block: b, Key: key})
		}
		switch {
		case r.Fault != "":
			for _, f := range r.Faults {
				where := ""
				if f.Line > 0 {
					where = fmt.Sprintf("line %d", f.Line)
				} else if f.StreamSeq > 0 {
					where = fmt.Sprintf("stream seq %d", f.StreamSeq)
				}
				hs.Faults = append(hs.Faults, htmlFault{Kind: string(f.Kind), Seq: f.Seq, Where: where, Detail: cmp.Or(f.Detail, strings.TrimSpace(f.Want+" "+f.Got))})
				filter = append(filter, string(f.Kind))
			}
			hs.Filter = strings.ToLower(strings.Join(filter, " "))
			faulty = append(faulty, hs)
		case !changed(r):
			hs.Filter = strings.ToLower(key)
			identical = append(identical, hs)
		default:
			hs.Rows, hs.Cells = htmlTimeline(hs.ID, r)
			for _, row := range hs.Rows {
				filter = append(filter, row.Tool, row.RuleBefore, row.RuleAfter)
			}
			hs.Filter = strings.ToLower(strings.Join(filter, " "))
			altered = append(altered, hs)
		}
	}
	data["Faulty"], data["Changed"], data["Identical"], data["WouldBlock"] = faulty, altered, identical, blocks
	data["Filter"] = len(rep.Sessions) > 1
	title := "agentledger replay: gate passed"
	if data["Failed"].(bool) {
		title = "agentledger replay: gate failed"
	}
	return page.Render(w, title, htmlReport, data)
}

// htmlTimeline lays a changed session's steps out as rows, with each
// step's differences, and as a strip of decisions.
func htmlTimeline(id string, r *SessionReport) ([]htmlRow, []page.Cell) {
	bySeq := map[uint64][]Diff{}
	for _, d := range r.Diffs {
		bySeq[d.Seq] = append(bySeq[d.Seq], d)
	}
	rowID := func(seq uint64) string { return fmt.Sprintf("%s-%d", id, seq) }
	var rows []htmlRow
	var cells []page.Cell
	for _, st := range r.Timeline {
		row := htmlRow{Step: st, ID: rowID(st.Seq)}
		for _, d := range bySeq[st.Seq] {
			rec, rep := value(d.Recorded), value(d.Replayed)
			if d.Field == "snapshot_hash" {
				rec, rep = short(rec), short(rep)
			}
			hd := htmlDiff{Field: d.Field, Recorded: rec, Replayed: rep, Expected: d.Expected, Shredded: d.Shredded}
			if d.CausedBy != nil {
				hd.CausedBy, hd.CausedSeq = rowID(*d.CausedBy), *d.CausedBy
			}
			row.Diffs = append(row.Diffs, hd)
		}
		rows = append(rows, row)
		title := fmt.Sprintf("seq %d %s: %s", st.Seq, st.HookPoint, cmp.Or(row.Replayed, "none"))
		if st.Changed {
			title += fmt.Sprintf(" (recorded %s)", cmp.Or(row.Recorded, "none"))
		}
		cells = append(cells, page.Cell{Seq: st.Seq, Decision: row.Replayed, Title: title, Changed: st.Changed, Href: "#" + row.ID})
	}
	return rows, cells
}

// countBars turns counts into bars, largest first.
// wouldBlockBars counts rep's would-be blocks by rule, each bar coloured
// by what enforcing would have done (an ask is not drawn as a deny); a rule
// that would have done both has a bar for each.
func wouldBlockBars(rep *Report) []page.Bar {
	type key struct{ rule, decision string }
	counts := map[key]int{}
	decisions := map[string]map[string]bool{}
	for _, r := range rep.Sessions {
		for _, b := range r.WouldBlock {
			rule := cmp.Or(b.Rule, "(no rule)")
			counts[key{rule, b.Decision}]++
			if decisions[rule] == nil {
				decisions[rule] = map[string]bool{}
			}
			decisions[rule][b.Decision] = true
		}
	}
	var out []page.Bar
	for k, n := range counts {
		label := k.rule
		if len(decisions[k.rule]) > 1 {
			label += " (" + k.decision + ")"
		}
		out = append(out, page.Bar{Label: label, Count: n, Class: page.DecisionClass(k.decision)})
	}
	slices.SortFunc(out, func(a, b page.Bar) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Label, b.Label)) })
	return out
}

func countBars(m map[string]int) []page.Bar {
	var out []page.Bar
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, page.Bar{Label: k, Count: m[k]})
	}
	slices.SortStableFunc(out, func(a, b page.Bar) int { return cmp.Compare(b.Count, a.Count) })
	return out
}
