package main

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/seal"
)

// shredCommand is `shred`.
func shredCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "shred",
		Usage:     "destroy a session's (or a data subject's) sealing keys: the sealed values become unrecoverable, every chain still verifies",
		ArgsUsage: " ",
		Description: "The shred is recorded as a signed Shred record (who, what scope, which keys) in session\n" +
			"audit of tenant agentledger. Copies exported before sealing, and plaintext kept by hosts,\n" +
			"are beyond its reach.",
		Flags: []cli.Flag{&cli.StringFlag{Name: "session", Usage: "the `SESSION` whose keys to destroy"},
			&cli.StringFlag{Name: "subject", Usage: "the data subject `ID` (events' data_subject) whose keys to destroy, in every session"},
			&cli.StringFlag{Name: "tenant", Value: ledger.DefaultTenant, Usage: "the `TENANT`"}},
		Action: a.shred,
	})
}

// AuditSession is where reveals and shreds are recorded.
var AuditSession = ledger.SessionKey{Tenant: "agentledger", Session: "audit"}

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
	if _, err = st.Append(c.Context, ledger.Event{TenantID: AuditSession.Tenant, SessionID: AuditSession.Session, EventType: eventType,
		TsUnixMs: nowMs(), Payload: payload, Signer: signer}); err != nil {
		return err
	}
	// A checkpoint at once, kept outside the stream as well: a Reveal or
	// Shred cut off the ledger's tail later is caught by it.
	data := cmdline.Resolve(c, cmdline.FlagData)
	key, _, err := cmdline.SigningKey("", data, cmdline.KeyCheckpoints)
	if err != nil {
		return err
	}
	paths, err := engine.NewCheckpointer(st, key, filepath.Join(data, "checkpoints"), signer).WriteAll(c.Context)
	if err != nil {
		return fmt.Errorf("checkpoint after the %s: %w", eventType, err)
	}
	fmt.Fprintf(a.stderr, "the %s is recorded; checkpoint %s\n", eventType, strings.Join(paths, ", "))
	return nil
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
	st, err := cmdline.OpenStore(c, cmdline.Write)
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

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// nowMs is the time a Reveal or Shred is recorded at.
func nowMs() int64 { return time.Now().UnixMilli() }
