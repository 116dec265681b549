package main

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/seal"
)

// AuditSession is where reveals and shreds are recorded.
var AuditSession = ledger.SessionKey{Tenant: "agentledger", Session: "audit"}

func (a *app) show(c *cli.Context) error {
	if c.NArg() != 1 {
		return cmdline.Usage(errors.New("show takes one SESSION"))
	}
	format := cmdline.Resolve(c, cmdline.FlagFormat)
	if format != "text" && format != "json" && format != "html" {
		return cmdline.Usage(fmt.Errorf("--format %q: want text, json or html", format))
	}
	s, err := cmdline.OpenStore(c)
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
			shown, err = seal.Transform(e.Payload(), func(r seal.Ref) (any, error) {
				v, err := seal.Open(r, keys)
				if errors.Is(err, seal.ErrShredded) {
					return "‹shredded: " + r.Kind + "›", nil
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

// audit records a Reveal or Shred of session k's keys, signed with the
// data directory's record key, as who runs this command.
func (a *app) audit(c *cli.Context, st *store.Store, eventType string, k ledger.SessionKey, subject string, kids map[string]bool) error {
	signer, _, err := cmdline.Signer("", cmdline.Resolve(c, cmdline.FlagData))
	if err != nil {
		return err
	}
	who := engine.LocalIdentity()
	rec := seal.AuditRecord{By: who.Principal, AuthenticatedBy: who.By, Tenant: k.Tenant, Session: k.Session, Subject: subject, Kids: sortedKeys(kids)}
	payload, err := rec.JSON()
	if err != nil {
		return err
	}
	_, err = st.Append(c.Context, ledger.Event{TenantID: AuditSession.Tenant, SessionID: AuditSession.Session, EventType: eventType,
		TsUnixMs: nowMs(), Payload: payload, Signer: signer})
	return err
}

func (a *app) shred(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	k := ledger.SessionKey{Tenant: c.String("tenant"), Session: c.String("session")}
	subject := c.String("subject")
	if (k.Session == "") == (subject == "") {
		return cmdline.Usage(errors.New("shred needs --session ID or --subject ID (one of them)"))
	}
	keys, err := cmdline.KeyStore(cmdline.Resolve(c, cmdline.FlagData))
	if err != nil {
		return err
	}
	st, err := cmdline.OpenStore(c)
	if err != nil {
		return err
	}
	defer st.Close()
	scope, what := seal.Scope{Tenant: k.Tenant, Session: k.Session, Subject: subject}, k.String()
	if subject != "" {
		k.Session, what = "", k.Tenant+" subject "+subject
	}
	destroyed, err := keys.Shred(scope)
	if err != nil {
		return fmt.Errorf("shred %s: %w", what, err)
	}
	kids := map[string]bool{}
	for _, kid := range destroyed {
		kids[kid] = true
	}
	if err := a.audit(c, st, ledger.EventShred, k, subject, kids); err != nil {
		return fmt.Errorf("record the shred (the keys are destroyed): %w", err)
	}
	fmt.Fprintf(a.stdout, "shredded %s: %d data keys destroyed; recorded in %s\n", what, len(destroyed), AuditSession)
	return nil
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

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// nowMs is the time a Reveal or Shred is recorded at.
func nowMs() int64 { return time.Now().UnixMilli() }
