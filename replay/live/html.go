package live

import (
	"fmt"
	"html/template"
	"io"

	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/page"
)

var livePage = template.Must(template.New("live").Funcs(page.Funcs).Parse(`
<h1>agentledger replay live: {{.Model}}</h1>
<p class="muted">Each recorded model request was sent to the candidate model; its planned tool calls are set beside the recorded ones and judged by the policy.</p>
<div class="cards" id="summary">
<div class="card"><b id="n-sessions">{{len .Sessions}}</b><span>sessions</span></div>
<div class="card"><b id="n-agree">{{.Agree}}/{{.Steps}}</b><span>model steps agree</span></div>
<div class="card"><b id="n-diverged">{{.Diverged}}</b><span>sessions diverged</span></div>
<div class="card"><b id="n-verdicts">{{.Verdicts}}</b><span>verdict changes</span></div>
<div class="card"><b id="n-faulty">{{len .Faults}}</b><span>faulty</span></div>
</div>
{{if .Faults}}<section class="box" id="faults"><h3>Faulty sessions, not replayed</h3><ul>{{range .Faults}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
{{if .Agreement}}<h3>Agreeing model steps per session</h3>{{bars "Agreeing model steps per session" .Agreement}}{{end}}
{{range .Sessions}}<section class="box session" id="{{.ID}}">
<h2><code>{{.Key}}</code> → <code>{{.Live}}</code></h2>
<p class="muted">{{.R.AgreeingSteps}}/{{.R.ModelSteps}} model steps agree{{if .R.FirstDivergent}}; first divergence at seq {{.R.FirstDivergent}}{{end}}.
Latency recorded {{.R.Recorded.LatencyMs}} ms, candidate {{.R.Candidate.LatencyMs}} ms; candidate tokens {{.R.Candidate.PromptTokens}} in, {{.R.Candidate.OutputTokens}} out.</p>
<table class="side-by-side"><tr><th class="num">seq</th><th>recorded model</th><th>candidate model</th><th>the policy on the candidate's calls</th></tr>
{{range .Steps}}<tr class="step{{if not .Agree}} changed{{end}}"><td class="num">{{.Seq}}</td>
<td class="act">{{range .Recorded}}{{.}}
{{end}}<span class="muted">stop: {{.RecordedStop}}</span></td>
<td class="act">{{range .Candidate}}{{.}}
{{end}}<span class="muted">stop: {{.CandidateStop}}</span></td>
<td>{{range .Judged}}<div><span class="d {{decision .Decision}}">{{.Decision}}</span> {{.Call}} <span class="muted">{{.Rule}}</span></div>{{end}}</td></tr>
{{end}}</table>
{{if .Tools}}<h3>Re-executed tool calls</h3><table><tr><th class="num">seq</th><th>tool</th><th>result</th></tr>
{{range .Tools}}<tr{{if not .Same}} class="changed"{{end}}><td class="num">{{.Seq}}</td><td>{{.Tool}}</td><td>{{if .Same}}as recorded{{else}}differs from the recording{{end}}{{if .IsError}} (error){{end}}</td></tr>{{end}}</table>{{end}}
{{if .R.VerdictChanges}}<h3>Verdict changes</h3><table><tr><th class="num">seq</th><th>hook</th><th>recorded</th><th>live</th><th>rule</th></tr>
{{range .R.VerdictChanges}}<tr class="changed"><td class="num">{{.Seq}}</td><td>{{.Hook}}</td><td><span class="d {{decision .Recorded}}">{{.Recorded}}</span></td><td><span class="d {{decision .Live}}">{{.Live}}</span></td><td>{{.Rule}}</td></tr>{{end}}</table>{{end}}
</section>{{end}}
`))

type htmlStep struct {
	Seq                         uint64
	Agree                       bool
	Recorded, Candidate         []string
	RecordedStop, CandidateStop string
	Judged                      []htmlJudged
}

type htmlJudged struct{ Decision, Call, Rule string }

type htmlSession struct {
	ID, Key, Live string
	R             *Report
	Steps         []htmlStep
	Tools         []ToolDiff
}

// WriteHTML writes a live run (its sessions and the faulty ones not
// replayed) as one self-contained page: each session's recorded and
// candidate model side by side.
func WriteHTML(w io.Writer, sessions []*Report, faults []string) error {
	data := struct {
		Model                            string
		Sessions                         []htmlSession
		Faults                           []string
		Agree, Steps, Diverged, Verdicts int
		Agreement                        []page.Bar
	}{Faults: faults}
	for i, r := range sessions {
		data.Model = r.Model
		hs := htmlSession{ID: fmt.Sprintf("s%d", i), Key: r.TenantID + "/" + r.SessionID, Live: r.LiveSessionID, R: r, Tools: r.ToolResults}
		for _, st := range r.Steps {
			hs.Steps = append(hs.Steps, htmlStep{Seq: st.Seq, Agree: st.Agree, Recorded: calls(st.RecordedCalls), Candidate: calls(st.CandidateCalls),
				RecordedStop: st.RecordedStop, CandidateStop: st.CandidateStop, Judged: judged(st.Judged)})
		}
		data.Sessions = append(data.Sessions, hs)
		data.Agree += r.AgreeingSteps
		data.Steps += r.ModelSteps
		data.Verdicts += len(r.VerdictChanges)
		if r.FirstDivergent != nil {
			data.Diverged++
		}
		data.Agreement = append(data.Agreement, page.Bar{Label: fmt.Sprintf("%s (of %d)", r.SessionID, r.ModelSteps), Count: r.AgreeingSteps})
	}
	return page.Render(w, "agentledger replay live", livePage, data)
}

// calls shows planned calls as NAME ARGUMENTS, redacted.
func calls(cs []PlannedCall) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = detect.Redact(c.Name + " " + c.Arguments)
	}
	return out
}

func judged(js []JudgedCall) []htmlJudged {
	out := make([]htmlJudged, len(js))
	for i, j := range js {
		out[i] = htmlJudged{Decision: j.Decision, Call: detect.Redact(j.Call.Name + " " + j.Call.Arguments), Rule: j.Rule}
	}
	return out
}
