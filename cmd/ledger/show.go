package main

import (
	"errors"
	"fmt"
	"html/template"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/seal"
)

// showCommand is `show`.
func showCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "show",
		Usage:     "print a session as a readable timeline (--format text, json or html)",
		ArgsUsage: "SESSION",
		Description: "Sealed values are shown as sealed (‹sealed:kind›). --reveal decrypts them with the\n" +
			"data directory's sealing keys and records the reveal (who, which session, which keys)\n" +
			"as a signed Reveal record in session audit of tenant agentledger.",
		Flags: []cli.Flag{&cli.StringFlag{Name: "tenant", Value: ledger.DefaultTenant, Usage: "the session's `TENANT`"},
			&cli.BoolFlag{Name: "reveal", Usage: "decrypt sealed values (recorded)"}},
		Action: a.show,
	})
}

func (a *app) show(c *cli.Context) error {
	if c.NArg() != 1 {
		return cmdline.Usage(errors.New("show takes one SESSION"))
	}
	format := cmdline.Resolve(c, cmdline.FlagFormat)
	if format != "text" && format != "json" && format != "html" {
		return cmdline.Usage(fmt.Errorf("--format %q: want text, json or html", format))
	}
	s, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return err
	}
	defer s.Close()
	k := ledger.SessionKey{Tenant: c.String("tenant"), Session: c.Args().First()}
	var keys seal.KeyStore
	if c.Bool("reveal") {
		if keys, err = cmdline.KeyStore(cmdline.Resolve(c, cmdline.FlagData)); err != nil {
			return err
		}
	}
	rows, kids, err := a.showRows(c, s, k, keys)
	if err != nil {
		return err
	}
	if keys != nil {
		// The reveal is on record before anything revealed is printed.
		if err := a.audit(c, s, ledger.EventReveal, k, "", kids); err != nil {
			return fmt.Errorf("record the reveal: %w", err)
		}
	}
	return a.writeRows(format, k, rows, keys != nil)
}

// showRows reads a session's envelopes as show prints them, revealing
// sealed values with keys when given; kids are the sealing keys used.
func (a *app) showRows(c *cli.Context, s *store.Store, k ledger.SessionKey, keys seal.KeyStore) ([]row, map[string]bool, error) {
	lim, err := cmdline.Limits(c)
	if err != nil {
		return nil, nil, err
	}
	var rows []row
	kids := map[string]bool{}
	err = s.ReadSession(c.Context, k, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, lim)
		if err != nil {
			rows = append(rows, row{raw: m.Data, unreadable: fmt.Sprintf("stream seq %d  UNREADABLE: %v", m.StreamSeq, err)})
			return nil
		}
		shown := seal.Render(e.Payload())
		if keys != nil && seal.Has(e.Payload()) {
			scopes := seal.ScopesOf(e.Payload(), e.TenantID(), e.SessionID())
			shown, err = seal.Transform(e.Payload(), func(r seal.Ref) (any, error) {
				v, err := seal.OpenIn(r, keys, scopes)
				if errors.Is(err, seal.ErrShredded) {
					return "‹shredded: " + r.Kind + "›", nil
				}
				if errors.Is(err, seal.ErrForeign) {
					return "‹foreign: " + r.Kind + " sealed for another session; not opened›", nil
				}
				kids[r.Kid] = true
				return v, err
			})
			if err != nil {
				return fmt.Errorf("seq %d: %w", e.Seq(), err)
			}
		}
		rows = append(rows, row{env: e, raw: m.Data, shown: shown})
		return nil
	})
	if err == nil && len(rows) == 0 {
		err = cmdline.Usage(fmt.Errorf("no session %s", k))
	}
	return rows, kids, err
}

// writeRows prints show's rows as text, NDJSON or an HTML timeline.
func (a *app) writeRows(format string, k ledger.SessionKey, rows []row, revealed bool) error {
	switch format {
	case "html":
		return writeTimeline(a.stdout, k, rows, revealed)
	case "json":
		for _, r := range rows {
			out := r.raw
			if revealed && r.env != nil {
				out = fmt.Appendf(nil, `{"revealed_payload":%s,"envelope":%s}`, r.shown, r.raw)
			}
			if _, err := fmt.Fprintf(a.stdout, "%s\n", out); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range rows {
		if r.env == nil {
			fmt.Fprintln(a.stdout, r.unreadable)
			continue
		}
		width := 120
		if revealed {
			width = 0 // a reveal shows everything it decrypted
		}
		if err := a.printRow(r.env, r.shown, width); err != nil {
			return err
		}
	}
	return nil
}

type row struct {
	env        *ledger.Envelope
	raw, shown []byte
	unreadable string
}

var timeline = template.Must(template.New("t").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>agentledger — {{.Key}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1b1f24}
h1{font-size:1.3em} table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #d0d7de;padding:.35em .6em;text-align:left;vertical-align:top}
th{background:#f6f8fa} td.p{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;word-break:break-all}
td.t{white-space:nowrap} .Verdict td{background:#fbfbfd} .note{color:#57606a}
details summary{cursor:pointer;color:#0969da;font-family:system-ui,sans-serif}
</style></head><body>
<h1>Session {{.Key}}</h1>
<p class="note">{{len .Rows}} envelopes. {{if .Revealed}}Sealed values are <b>revealed</b>; this reveal is recorded.{{else}}Sealed values are shown as ‹sealed:kind›.{{end}}</p>
<table><tr><th>seq</th><th>time (UTC)</th><th>type</th><th>hash</th><th>what</th></tr>
{{range .Rows}}<tr class="{{.Type}}"><td>{{.Seq}}</td><td class="t">{{.Time}}</td><td>{{.Type}}</td><td><code>{{.Hash}}</code></td><td class="p">{{.Gist}}<details><summary>payload</summary>{{.Payload}}</details></td></tr>
{{end}}</table></body></html>
`))

// writeTimeline writes a session as an HTML page (every value escaped).
func writeTimeline(w io.Writer, k ledger.SessionKey, rows []row, revealed bool) error {
	type line struct{ Seq, Time, Type, Hash, Gist, Payload string }
	var lines []line
	for _, r := range rows {
		if r.env == nil {
			lines = append(lines, line{Type: "UNREADABLE", Payload: r.unreadable})
			continue
		}
		lines = append(lines, line{Seq: fmt.Sprint(r.env.Seq()), Time: stamp(r.env.TsUnixMs()), Type: r.env.EventType(),
			Hash: short(r.env.Hash()), Gist: string(gist(r.shown)), Payload: string(r.shown)})
	}
	return timeline.Execute(w, map[string]any{"Key": k.String(), "Rows": lines, "Revealed": revealed})
}
