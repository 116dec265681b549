package page

import (
	"bytes"
	"fmt"
	"html/template"
)

// Bar is one labelled count of a bar chart.
type Bar struct {
	Label string
	Count int
	// Class colours the bar (allow, ask, deny); the default is "bar".
	Class string
}

var barsSVG = template.Must(template.New("bars").Parse(`<svg role="img" aria-label="{{.Title}}" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}">
<title>{{.Title}}</title>{{range .Rows}}
<text x="{{$.LabelW}}" y="{{.TextY}}" text-anchor="end" dx="-6">{{.Label}}</text><rect class="{{.Class}}" x="{{$.LabelW}}" y="{{.Y}}" width="{{.Width}}" height="14" rx="2"/><text x="{{.CountX}}" y="{{.TextY}}" dx="4">{{.Count}}</text>{{end}}
</svg>`))

// Bars draws counts as a horizontal bar chart, one row per bar.
func Bars(title string, bars []Bar) template.HTML {
	if len(bars) == 0 {
		return ""
	}
	const labelW, plotW, rowH = 220, 320, 20
	top := 1
	for _, b := range bars {
		top = max(top, b.Count)
	}
	type row struct {
		Label, Class            string
		Count                   int
		Y, TextY, Width, CountX int
	}
	var rows []row
	for i, b := range bars {
		w := b.Count * plotW / top
		if b.Count > 0 && w < 2 {
			w = 2
		}
		label := b.Label
		if r := []rune(label); len(r) > 34 {
			label = string(r[:33]) + "…"
		}
		class := b.Class
		if class == "" {
			class = "bar"
		}
		rows = append(rows, row{Label: label, Class: class, Count: b.Count, Y: i*rowH + 3, TextY: i*rowH + 14, Width: w, CountX: labelW + w})
	}
	return exec(barsSVG, map[string]any{"Title": title, "W": labelW + plotW + 50, "H": len(bars)*rowH + 4, "LabelW": labelW, "Rows": rows})
}

// Cell is one step of a decision strip.
type Cell struct {
	Seq      uint64
	Decision string
	Title    string
	Changed  bool
	// Href, when set, links the cell (to the step's row).
	Href string
}

var stripSVG = template.Must(template.New("strip").Parse(`<svg role="img" aria-label="{{.Title}}" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}">
<title>{{.Title}}</title>{{range .Cells}}{{if .Href}}<a href="{{.Href}}">{{end}}<rect class="{{.Class}}{{if .Changed}} changed{{end}}" x="{{.X}}" y="{{.Y}}" width="{{$.Size}}" height="{{$.Size}}" rx="2"><title>{{.Title}}</title></rect>{{if .Href}}</a>{{end}}{{end}}
</svg>`))

// Strip draws a session's decisions in order, one square per step, wrapped
// into rows; changed steps are outlined.
func Strip(title string, cells []Cell) template.HTML {
	if len(cells) == 0 {
		return ""
	}
	const size, gap, perRow = 12, 3, 60
	type cell struct {
		Class, Title, Href string
		X, Y               int
		Changed            bool
	}
	var out []cell
	for i, c := range cells {
		out = append(out, cell{Class: DecisionClass(c.Decision), Title: c.Title, Href: c.Href, Changed: c.Changed,
			X: (i%perRow)*(size+gap) + 1, Y: (i/perRow)*(size+gap) + 1})
	}
	cols := min(len(cells), perRow)
	rows := (len(cells) + perRow - 1) / perRow
	return exec(stripSVG, map[string]any{"Title": title, "W": cols*(size+gap) + 2, "H": rows*(size+gap) + 2, "Size": size, "Cells": out})
}

func exec(t *template.Template, data any) template.HTML {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return template.HTML(template.HTMLEscapeString(fmt.Sprintf("(chart: %v)", err)))
	}
	return template.HTML(b.String())
}
