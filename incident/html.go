package incident

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/page"
)

var incidentPage = template.Must(template.New("incident").Funcs(page.Funcs).Parse(`
<header>
<h1>Session <code>{{.V.Key}}</code></h1>
<p class="muted">{{.V.Envelopes}} envelopes{{if .V.First}}, {{.V.First}} to {{.V.Last}} UTC{{end}}. {{if .V.Revealed}}Sealed values are <b>revealed</b>: this reveal is recorded.{{else}}Sealed values are shown sealed (‹sealed:kind›).{{end}}</p>
<div class="cards" id="status">
<div class="card" id="chain-status"><b class="{{.Chain}}">{{.V.Chain.State}}</b><span>chain</span></div>
<div class="card" id="receipt-status"><b class="{{.Receipts}}">{{.V.Receipts.State}}</b><span>receipts</span></div>
<div class="card" id="checkpoint-status"><b class="{{.Checkpoint}}">{{.V.Checkpoint.State}}</b><span>checkpoint</span></div>
<div class="card"><b id="head-seq">{{.V.Head.Seq}}</b><span>head seq</span></div>
{{range .Decisions}}<div class="card"><b id="n-{{.Label}}">{{.Count}}</b><span>{{.Label}}</span></div>{{end}}
</div>
<ul class="muted">
<li>Chain: {{.V.Chain.Detail}}</li>
<li>Head: seq {{.V.Head.Seq}}, <code>{{.V.Head.Hash}}</code></li>
<li>Receipts: {{.V.Receipts.Detail}}</li>
<li>Checkpoint: {{.V.Checkpoint.Detail}}</li>
</ul>
{{if .V.Faults}}<section class="box" id="faults"><h3>Faults</h3><ul>{{range .V.Faults}}<li class="fault">{{.}}</li>{{end}}</ul></section>{{end}}
</header>
<h2>Decisions over the session</h2>
<p class="muted">One square per verdict, in order.</p>
{{strip "Verdicts in order" .Cells}}
<h2>Timeline</h2>
<p class="noprint"><input id="filter" type="search" placeholder="Filter: a command, a rule, deny…" aria-label="Filter the timeline" hidden> <span id="filter-count" class="muted"></span></p>
<table id="timeline"><tr><th class="num">seq</th><th>time (UTC)</th><th>event</th><th>what</th><th>changes</th><th>hash</th></tr>
{{range .V.Rows}}<tr id="seq-{{.Seq}}" class="row {{.Kind}}{{if .Fault}} faulty{{end}}" data-filter="{{.Filter}}">
<td class="num">{{.Seq}}</td><td class="mono">{{.Time}}</td><td>{{.Type}}</td>
<td>{{if .Decision}}<span class="d {{decision .Decision}}">{{.Decision}}</span> {{end}}<span class="{{if eq .Kind "action" "result"}}act{{end}}">{{.Summary}}</span>{{if .ForSeq}} <a href="#seq-{{.ForSeq}}">↑ seq {{.ForSeq}}</a>{{end}}
{{range .Details}}<div class="muted">{{.}}</div>{{end}}
{{if .Receipt}}<div class="receipt muted">receipt: {{.Receipt}}</div>{{end}}
{{if .Fault}}<div class="fail">{{.Fault}}</div>{{end}}
<details class="noprint"><summary>payload</summary><pre class="act">{{.Payload}}</pre></details></td>
<td>{{range .Changes}}<div class="change">{{.}}</div>{{end}}</td>
<td><code title="{{.Hash}}">{{short .Hash}}</code></td></tr>
{{end}}</table>
`))

type htmlRow struct {
	Row
	Filter string
}

// WriteHTML writes v as one self-contained page (package page).
func WriteHTML(w io.Writer, v *View) error {
	class := func(s Status) string {
		return map[string]string{"ok": "pass", "failed": "fail"}[s.State]
	}
	var cells []page.Cell
	rows := make([]htmlRow, 0, len(v.Rows))
	for _, r := range v.Rows {
		rows = append(rows, htmlRow{Row: r, Filter: filterText(r)})
		if r.Kind != "verdict" {
			continue
		}
		cells = append(cells, page.Cell{Seq: r.Seq, Decision: r.Decision, Href: fmt.Sprintf("#seq-%d", r.Seq),
			Title: fmt.Sprintf("seq %d: %s", r.Seq, r.Summary)})
	}
	var decisions []page.Bar
	for _, d := range []string{"allow", "ask", "deny"} {
		decisions = append(decisions, page.Bar{Label: d, Count: v.Counts[d]})
	}
	data := struct {
		V                           viewWithRows
		Chain, Receipts, Checkpoint string
		Cells                       []page.Cell
		Decisions                   []page.Bar
	}{V: viewWithRows{v, rows}, Chain: class(v.Chain), Receipts: class(v.Receipts), Checkpoint: class(v.Checkpoint), Cells: cells, Decisions: decisions}
	return page.Render(w, "agentledger — "+v.Key, incidentPage, data)
}

// viewWithRows is a view whose rows carry their filter text.
type viewWithRows struct {
	*View
	Rows []htmlRow
}

func filterText(r Row) string {
	parts := slices.Concat([]string{r.Type, r.Kind, r.Summary, r.Decision}, r.Details, r.Changes)
	return strings.ToLower(strings.Join(parts, " "))
}
