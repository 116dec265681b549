package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// maxReported bounds how many bad lines one run lists.
const maxReported = 20

func (a *app) append(c *cli.Context) error {
	if c.NArg() > 1 {
		return cmdline.Usage(fmt.Errorf("append takes one input, got %d", c.NArg()))
	}
	format, err := cmdline.Format(c)
	if err != nil {
		return err
	}
	in, closeIn, err := a.openInput(c.Args().First())
	if err != nil {
		return err
	}
	defer closeIn()
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	events, bad, err := store.ReadDrafts(in, lim, a.now().UnixMilli())
	if err != nil {
		return cmdline.Usage(fmt.Errorf("%w; nothing was appended", err))
	}
	if len(bad) > 0 {
		return cmdline.Usage(badLines(bad))
	}
	if len(events) == 0 {
		return cmdline.Usage(errors.New("append: no events in the input"))
	}
	s, err := cmdline.OpenStore(c, cmdline.Write)
	if err != nil {
		return err
	}
	defer s.Close()
	envs, already, err := s.AppendDrafts(c.Context, events)
	sessions := map[ledger.SessionKey]bool{}
	for _, e := range envs {
		if e == nil {
			continue
		}
		sessions[e.Key()] = true
		if format == "json" {
			if err := cmdline.Render(a.stdout, format, appended{e.TenantID(), e.SessionID(), e.Seq(), e.Hash()}, nil); err != nil {
				return err
			}
		}
	}
	if err != nil {
		return err
	}
	if format == "text" {
		switch {
		case already == len(events):
			fmt.Fprintf(a.stdout, "all %d events are stored already, as they are (%d sessions); nothing appended\n", len(events), len(sessions))
		case already > 0:
			fmt.Fprintf(a.stdout, "appended %d envelopes to %d sessions (%d events were stored already)\n", len(events)-already, len(sessions), already)
		default:
			fmt.Fprintf(a.stdout, "appended %d envelopes to %d sessions\n", len(events), len(sessions))
		}
	}
	return nil
}

// appended is the JSON line append prints per envelope.
type appended struct {
	Tenant  string `json:"tenant_id"`
	Session string `json:"session_id"`
	Seq     uint64 `json:"seq"`
	Hash    string `json:"hash"`
}

func badLines(errs []error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d invalid input lines; nothing was appended", len(errs))
	for i, err := range errs {
		if i == maxReported {
			fmt.Fprintf(&b, "\n  ... and %d more", len(errs)-maxReported)
			break
		}
		fmt.Fprintf(&b, "\n  %v", err)
	}
	return cmdline.Usage(errors.New(b.String()))
}

// appendCommand is `append`.
func appendCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "append",
		Usage:     "seal NDJSON events onto their sessions' chains",
		ArgsUsage: "[FILE|-]",
		Description: "Each input line is {\"tenant_id\"?, \"session_id\", \"event_type\", \"payload\", \"ts_unix_ms\"?};\n" +
			"tenant_id defaults to \"default\", ts_unix_ms to now. Every line is validated\n" +
			"before anything is appended: one bad line and nothing is appended.",
		Action: a.append,
	})
}
