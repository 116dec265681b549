package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/engine"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/localengine"
)

// statusReport is what `engine status` says of a data directory.
type statusReport struct {
	DataDir string `json:"data_dir"`
	// Ledger says whether the directory holds a ledger at all.
	Ledger bool `json:"ledger"`
	// Spooled counts the calls hooks answered while no engine could, not
	// yet recorded.
	Spooled int            `json:"spooled"`
	Holder  *store.Holder  `json:"holder,omitempty"`
	Engine  *engine.Status `json:"engine,omitempty"`
}

func (a *app) status(c *cli.Context) error {
	if c.NArg() > 0 {
		return cmdline.Usage(fmt.Errorf("status takes no arguments, got %q", c.Args().First()))
	}
	format, err := cmdline.Format(c)
	if err != nil {
		return err
	}
	dir, err := cmdline.HookDataDir(c)
	if err != nil {
		return err
	}
	rep := statusReport{DataDir: dir}
	_, err = os.Stat(filepath.Join(dir, "jetstream"))
	rep.Ledger = err == nil
	if ents, err := os.ReadDir(filepath.Join(dir, engine.SpoolName)); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".json") {
				rep.Spooled++
			}
		}
	}
	if h, held := store.HeldBy(dir); held {
		rep.Holder = &h
		if h.Socket != "" {
			if st, err := engineStatus(c.Context, h.Socket); err == nil {
				rep.Engine = &st
			} else {
				fmt.Fprintf(a.stderr, "engine: %s does not answer: %v\n", h.Socket, err)
			}
		}
	}
	return cmdline.Render(a.stdout, format, rep, func(w io.Writer) error { return printStatus(w, rep) })
}

// engineStatus asks the engine on socket for its status.
func engineStatus(ctx context.Context, socket string) (engine.Status, error) {
	var st engine.Status
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://engine/v1/status", nil)
	if err != nil {
		return st, err
	}
	resp, err := localengine.UnixClient(socket).Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("status %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func printStatus(w io.Writer, rep statusReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "data directory\t%s\n", rep.DataDir)
	if !rep.Ledger {
		fmt.Fprintf(tw, "ledger\tnone yet (nothing recorded here)\n")
	}
	if rep.Spooled > 0 {
		fmt.Fprintf(tw, "spooled\t%d call(s) answered while no engine could, recorded by the next engine\n", rep.Spooled)
	}
	h := rep.Holder
	if h == nil {
		fmt.Fprintf(tw, "engine\tnone running (the next hook or ledger command starts one)\n")
		return tw.Flush()
	}
	fmt.Fprintf(tw, "held by\t%s (pid %d)\n", h.Program, h.PID)
	if h.Socket != "" {
		fmt.Fprintf(tw, "hooks socket\t%s\n", h.Socket)
	}
	if h.NATSURL != "" {
		fmt.Fprintf(tw, "ledger listener\t%s (ledger commands read through it)\n", h.NATSURL)
	}
	if st := rep.Engine; st != nil {
		fmt.Fprintf(tw, "up since\t%s\n", st.Started.Local().Format(time.DateTime))
		fmt.Fprintf(tw, "sessions\t%d in memory (%d evicted)\n", st.Sessions.Live, st.Sessions.Evicted)
		if f := st.Fleet; f != nil {
			fmt.Fprintf(tw, "fleet\tmember %s, owning %d of %d partitions %v\n", f.Engine, len(f.Owned), f.Partitions, f.Owned)
		}
		fmt.Fprintf(tw, "configurations\t%d (tenant, policy and manifest sets hooks sent)\n", st.Configs)
		fmt.Fprintf(tw, "open approvals\t%d\n", len(st.Pending))
		for _, p := range st.Pending {
			fmt.Fprintf(tw, "\t%s/%s seq %d %s %s, expires %s\n", p.Tenant, p.Session, p.ForSeq, p.ToolNative, p.ReasonCode, time.UnixMilli(p.Expires).Local().Format(time.TimeOnly))
		}
		fmt.Fprintf(tw, "last decisions\t%d\n", len(st.Recent))
		for _, r := range st.Recent {
			var monitored string
			if r.Monitored {
				monitored = " (monitor mode: recorded, not enforced)"
			}
			fmt.Fprintf(tw, "\t%s %s/%s %s %s %s %s%s\n", r.At.Local().Format(time.TimeOnly), r.Tenant, r.Session, r.HookPoint, r.Tool, r.Decision, r.ReasonCode, monitored)
		}
	}
	return tw.Flush()
}

func (a *app) stop(c *cli.Context) error {
	if c.NArg() > 0 {
		return cmdline.Usage(fmt.Errorf("stop takes no arguments, got %q", c.Args().First()))
	}
	dir, err := cmdline.HookDataDir(c)
	if err != nil {
		return err
	}
	h, held := store.HeldBy(dir)
	switch {
	case !held:
		fmt.Fprintf(a.stdout, "no engine holds %s\n", dir)
		return nil
	case h.PID == 0 || !strings.HasPrefix(h.Program, "engine"):
		return cmdline.Usage(fmt.Errorf("%s is held by %s (pid %d), not an engine: stop it where it runs", dir, h.Program, h.PID))
	}
	if err := syscall.Kill(h.PID, syscall.SIGTERM); err != nil {
		return cmdline.Fault(fmt.Errorf("stop pid %d: %w", h.PID, err))
	}
	for deadline := time.Now().Add(c.Duration("wait")); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, still := store.HeldBy(dir); !still {
			fmt.Fprintf(a.stdout, "stopped %s (pid %d)\n", h.Program, h.PID)
			return nil
		}
	}
	return cmdline.Unavailable(errors.New("the engine did not stop within --wait; it may be finishing a decision: try again"))
}

// statusCommand is `status`.
func statusCommand(a *app) *cli.Command {
	return cmdline.FormatUsage(cmdline.WithGlobals(&cli.Command{
		Name:      "status",
		Usage:     "say which engine holds the data directory, its sessions, last decisions and open approvals",
		ArgsUsage: " ",
		Action:    a.status,
	}), []string{"text", "json"})
}

// stopCommand is `stop`.
func stopCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "stop",
		Usage:     "stop the engine that holds the data directory (the next hook starts one again)",
		ArgsUsage: " ",
		Flags:     []cli.Flag{&cli.DurationFlag{Name: "wait", Value: 20 * time.Second, Usage: "how long to wait for it to finish and exit"}},
		Action:    a.stop,
	})
}
