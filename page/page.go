// Package page writes agentledger's HTML pages: each one file that loads
// nothing from anywhere (a Content-Security-Policy allows only its own
// inline style and script, by hash), reads without JavaScript (the script
// only adds a filter box), follows the reader's light or dark setting and
// prints cleanly. Charts are inline SVG.
package page

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"io"
)

// style is every page's stylesheet.
const style = `:root{color-scheme:light dark;--fg:#1b1f24;--muted:#59636e;--bg:#fff;--panel:#f6f8fa;--line:#d1d9e0;--link:#0969da;
--allow:#1a7f37;--ask:#9a6700;--deny:#cf222e;--none:#59636e;--hl:#fff8c5;--hlline:#d4a72c}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--panel:#151b23;--line:#3d444d;--link:#4493f8;
--allow:#3fb950;--ask:#d29922;--deny:#f85149;--none:#9198a1;--hl:#2e2a1a;--hlline:#9e6a03}}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;padding:1.5em 2em;color:var(--fg);background:var(--bg)}
h1{font-size:1.4em;margin:0 0 .3em} h2{font-size:1.15em;margin:1.6em 0 .5em;border-bottom:1px solid var(--line);padding-bottom:.2em}
h3{font-size:1em;margin:1.2em 0 .4em} a{color:var(--link)} code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12.5px}
.muted{color:var(--muted)} .pass{color:var(--allow);font-weight:600} .fail{color:var(--deny);font-weight:600}
table{border-collapse:collapse;width:100%;margin:.4em 0} th,td{border-bottom:1px solid var(--line);padding:.3em .55em;text-align:left;vertical-align:top}
th{background:var(--panel);font-weight:600} td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.act{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12.5px;white-space:pre-wrap;word-break:break-all;max-width:48em}
tr.changed td{background:var(--hl)} tr.changed td:first-child{box-shadow:inset 3px 0 var(--hlline)} tr:target td{outline:2px solid var(--link)}
.d{display:inline-block;padding:0 .45em;border-radius:.7em;font-size:12px;font-weight:600;border:1px solid currentColor}
.d.allow{color:var(--allow)} .d.ask{color:var(--ask)} .d.deny{color:var(--deny)} .d.none,.d.unknown{color:var(--none)}
.cards{display:flex;flex-wrap:wrap;gap:.6em;margin:.6em 0} .card{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:.45em .8em;min-width:7em}
.card b{display:block;font-size:1.35em} .card span{color:var(--muted);font-size:12px}
section.box{border:1px solid var(--line);border-radius:6px;padding:.2em 1em .8em;margin:1em 0}
details>summary{cursor:pointer;color:var(--link)} ul.names{columns:3 18em;font-size:12.5px;font-family:ui-monospace,monospace}
svg text{fill:var(--fg);font:11px system-ui,sans-serif} svg .allow{fill:var(--allow)} svg .ask{fill:var(--ask)} svg .deny{fill:var(--deny)}
svg .none,svg .unknown{fill:var(--none)} svg rect.changed{stroke:var(--fg);stroke-width:2} svg .bar{fill:var(--link)} svg .grid{stroke:var(--line)}
#filter{font:inherit;padding:.35em .6em;width:24em;max-width:100%;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}
form.inline{display:inline} button{font:inherit;padding:.25em .8em;border-radius:6px;border:1px solid var(--line);background:var(--panel);color:var(--fg);cursor:pointer}
button.approve{border-color:var(--allow);color:var(--allow)} button.deny{border-color:var(--deny);color:var(--deny)}
.flash{padding:.5em .8em;border:1px solid var(--line);background:var(--panel);border-radius:6px}
pre.diff{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:.4em 0;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
pre.diff span{display:block;padding:0 .6em} pre.diff .del{color:var(--deny);background:color-mix(in srgb,var(--deny) 10%,transparent)}
pre.diff .add{color:var(--allow);background:color-mix(in srgb,var(--allow) 10%,transparent)} ul.flags{margin:.3em 0;padding-left:1.2em}
@media print{body{padding:0;font-size:11px} #filter,.noprint,form{display:none!important} details{display:block} details>*{display:block}
 section.box,tr{break-inside:avoid} a{color:inherit;text-decoration:none} tr.changed td{background:none;font-weight:600}}`

// script shows the filter box (hidden without JavaScript) and hides the
// elements whose data-filter text does not hold what is typed.
const script = `(function(){var f=document.getElementById("filter");if(!f)return;f.hidden=false;
var items=document.querySelectorAll("[data-filter]"),n=document.getElementById("filter-count");
f.addEventListener("input",function(){var q=f.value.toLowerCase().trim(),shown=0;
for(var i=0;i<items.length;i++){var hit=q===""||items[i].getAttribute("data-filter").indexOf(q)>=0;items[i].hidden=!hit;if(hit)shown++}
if(n)n.textContent=q===""?"":shown+" of "+items.length+" shown";});})();`

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// CSP is the Content-Security-Policy of every page: nothing is loaded
// from anywhere; the page's own style and script run by hash; forms post
// only to where the page came from.
var CSP = "default-src 'none'; style-src " + hash(style) + "; script-src " + hash(script) +
	"; img-src data:; form-action 'self'; base-uri 'none'"

var frame = template.Must(template.New("frame").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>{{.Title}}</title>
<style>{{.Style}}</style></head>
<body>
{{.Body}}
<script>{{.Script}}</script>
</body></html>
`))

// Write writes a whole page around body, which must come from
// html/template (so that every value in it is escaped).
func Write(w io.Writer, title string, body template.HTML) error {
	var b bytes.Buffer
	err := frame.Execute(&b, map[string]any{"CSP": CSP, "Title": title, "Style": template.CSS(style), "Script": template.JS(script), "Body": body})
	if err != nil {
		return err
	}
	_, err = w.Write(b.Bytes())
	return err
}

// Render executes t with data and writes the result as a whole page.
func Render(w io.Writer, title string, t *template.Template, data any) error {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return err
	}
	return Write(w, title, template.HTML(b.String()))
}

// Funcs are template functions every page may use.
var Funcs = template.FuncMap{
	"short":    Short,
	"bars":     Bars,
	"strip":    Strip,
	"decision": DecisionClass,
}

// Short shortens a digest or hash for people.
func Short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// DecisionClass is the CSS class of a decision: allow, ask, deny or none.
func DecisionClass(d string) string {
	switch d {
	case "allow", "ask", "deny":
		return d
	case "":
		return "none"
	}
	return "unknown"
}
