package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/seal"
)

// app holds the program's streams, so tests run it in process.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	now            func() time.Time
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, now: time.Now}
	return &cli.App{
		Name:            "ledger",
		Usage:           "hash-chained audit envelopes on NATS JetStream",
		Writer:          stdout,
		Version:         cmdline.Version(),
		Flags:           cmdline.GlobalFlags(),
		Reader:          stdin,
		HideHelpCommand: false,
		Commands: []*cli.Command{
			serveCommand(a),
			appendCommand(a),
			verifyCommand(a),
			checkpointCommand(a),
			exportCommand(a),
			importCommand(a),
			sessionsCommand(a),
			showCommand(a),
			shredCommand(a),
			tailCommand(a),
		},
	}
}

// filterFlags select a tenant or a session.
func filterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "tenant", Usage: "only this `TENANT`"},
		&cli.StringFlag{Name: "session", Usage: "only this session `ID`"},
	}
}

func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return cmdline.Usage(fmt.Errorf("%s: unexpected argument %q (flags go before arguments)", c.Command.Name, c.Args().First()))
	}
	return nil
}

func (a *app) serve(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	cfg, err := cmdline.StoreConfig(c)
	if err != nil {
		return err
	}
	if cfg.URL != "" {
		return cmdline.Usage(errors.New("serve runs the embedded server; it takes no --nats"))
	}
	cfg.Listen = c.String("listen")
	s, err := store.Open(c.Context, cfg)
	if err != nil {
		return cmdline.Unavailable(err)
	}
	defer s.Close()
	fmt.Fprintf(a.stderr, "ledger: serving stream %s from %s on %s (sync %s); clients need the writer secret in %s (give --data %s, or put it in the URL); interrupt to stop\n",
		s.StreamName(), cfg.DataDir, store.RedactURL(s.ClientURL()), cfg.Sync, filepath.Join(cfg.DataDir, store.WriterSecretFile), cfg.DataDir)
	s.Announce("ledger serve", "")
	<-c.Context.Done()
	return nil
}

// openInput opens FILE, or stdin for "-" or no argument.
func (a *app) openInput(name string) (io.Reader, func(), error) {
	if name == "" || name == "-" {
		return a.stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, cmdline.Usage(err)
	}
	return f, func() { f.Close() }, nil
}

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
	s, err := cmdline.OpenStore(c)
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

func filterOf(c *cli.Context) store.Filter {
	f := store.Filter{Tenant: c.String("tenant"), Session: c.String("session")}
	if f.Session != "" && f.Tenant == "" {
		f.Tenant = ledger.DefaultTenant
	}
	return f
}

func (a *app) verify(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	format, err := cmdline.Format(c)
	if err != nil {
		return err
	}
	mode := ledger.Fast
	if c.Bool("deep") {
		mode = ledger.Deep
	}
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	ring, ck, err := verifyKeys(c)
	if err != nil {
		return err
	}
	v := ledger.NewVerifier(mode, lim)
	if ring != nil {
		v.With(receipt.RecordCheck(ring, mode, lim))
	}
	if err := a.feedVerifier(c, v); err != nil {
		return err
	}
	f := filterOf(c)
	rep := v.Report().Only(f.Tenant, f.Session)
	if ck != nil {
		ck.Heads = slices.DeleteFunc(ck.Heads, func(h checkpoint.Head) bool { return !f.Match(ledger.SessionKey{Tenant: h.Tenant, Session: h.Session}) })
		faults, err := ck.Check(c.Context, checkpoint.InVerifier(v))
		if err != nil {
			return err
		}
		rep.Faults = append(rep.Faults, faults...)
	}
	if err := cmdline.Render(a.stdout, format, rep, func(w io.Writer) error { return writeReport(w, rep) }); err != nil {
		return err
	}
	if !rep.OK() {
		return cmdline.Fault(fmt.Errorf("%d integrity faults", len(rep.Faults)))
	}
	return nil
}

// verifyKeys reads --pubkey into a keyring and opens --checkpoint with it.
func verifyKeys(c *cli.Context) (receipt.Keyring, *checkpoint.Checkpoint, error) {
	pubkeys, cp := c.StringSlice("pubkey"), c.String("checkpoint")
	if cp != "" && len(pubkeys) == 0 {
		return nil, nil, cmdline.Usage(errors.New("--checkpoint needs --pubkey, the public key that signed it"))
	}
	if len(pubkeys) == 0 {
		return nil, nil, nil
	}
	ring, err := readKeyring(pubkeys)
	if err != nil || cp == "" {
		return ring, nil, err
	}
	msg, err := os.ReadFile(cp)
	if err != nil {
		return nil, nil, cmdline.Usage(err)
	}
	ck, err := checkpoint.OpenWith(msg, ring)
	if errors.Is(err, checkpoint.ErrSignature) {
		return nil, nil, cmdline.Fault(fmt.Errorf("%s: %w", cp, err))
	}
	if err != nil {
		return nil, nil, cmdline.Usage(fmt.Errorf("%s: %w", cp, err))
	}
	return ring, ck, nil
}

// feedVerifier reads --bundle, or the sessions of the ledger the filter
// selects, into v: one pass, whatever v checks.
func (a *app) feedVerifier(c *cli.Context, v *ledger.Verifier) error {
	if b := c.String("bundle"); b != "" {
		in, closeIn, err := a.openInput(b)
		if err != nil {
			return err
		}
		defer closeIn()
		if err := v.ReadBundle(in); err != nil {
			return cmdline.Usage(err)
		}
		return nil
	}
	st, err := cmdline.OpenStore(c)
	if err != nil {
		return err
	}
	defer st.Close()
	p := cmdline.NewProgress(a.stderr, "verify")
	defer p.Done()
	return st.Feed(c.Context, filterOf(c), v, p.Update)
}

func (a *app) checkpoint(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	key, _, err := cmdline.SigningKey(c.String("key"), cmdline.Resolve(c, cmdline.FlagData), cmdline.KeyCheckpoints)
	if err != nil {
		return err
	}
	st, err := cmdline.OpenStore(c)
	if err != nil {
		return err
	}
	defer st.Close()
	infos, err := st.Sessions(c.Context, store.Filter{})
	if err != nil {
		return err
	}
	heads := make([]checkpoint.Head, len(infos))
	for i, in := range infos {
		heads[i] = checkpoint.Head{Tenant: in.Tenant, Session: in.Session, Seq: in.HeadSeq, Hash: in.HeadHash}
	}
	signed, err := checkpoint.New("agentledger/"+st.StreamName(), heads).Sign(key)
	if err != nil {
		return err
	}
	if out := c.String("output"); out != "" {
		if err := os.WriteFile(out, signed, 0o644); err != nil {
			return cmdline.Usage(err)
		}
		fmt.Fprintf(a.stderr, "checkpoint of %d sessions written to %s\n", len(heads), out)
		return nil
	}
	_, err = a.stdout.Write(signed)
	return err
}

func writeReport(w io.Writer, r *ledger.Report) error {
	for _, f := range r.Faults {
		fmt.Fprintf(w, "FAULT %s\n", f)
	}
	status := "OK"
	if !r.OK() {
		status = "FAILED"
	}
	_, err := fmt.Fprintf(w, "%s: %d envelopes in %d sessions verified (%s), %d faults\n",
		status, r.Envelopes, len(r.Sessions), r.Mode, len(r.Faults))
	return err
}

func (a *app) export(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	s, err := cmdline.OpenStore(c)
	if err != nil {
		return err
	}
	defer s.Close()
	out := a.stdout
	path := c.String("output")
	var tmp *os.File
	if path != "" && path != "-" {
		// Write beside the target and rename, so a failed export never
		// leaves a truncated bundle under the requested name.
		tmp, err = os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
		if err != nil {
			return cmdline.Usage(err)
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		out = tmp
	}
	p := cmdline.NewProgress(a.stderr, "export")
	err = s.Export(c.Context, filterOf(c), ledger.NewBundleWriter(out), p.Update)
	p.Done()
	if err != nil {
		return err
	}
	if tmp != nil {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := tmp.Close(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	return nil
}

func (a *app) importBundle(c *cli.Context) error {
	if c.NArg() != 1 {
		return cmdline.Usage(errors.New("import takes one bundle FILE (or - for stdin)"))
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
	chains, rep, err := ledger.LoadBundle(in, lim)
	if err != nil {
		return cmdline.Usage(err)
	}
	if !rep.OK() {
		_ = writeReport(a.stderr, rep)
		return cmdline.Fault(fmt.Errorf("refusing to import a bundle with %d integrity faults; nothing was imported", len(rep.Faults)))
	}
	s, err := cmdline.OpenStore(c)
	if err != nil {
		return err
	}
	defer s.Close()
	p := cmdline.NewProgress(a.stderr, "import")
	p.Total = uint64(rep.Envelopes)
	res, err := s.Import(c.Context, chains, p.Update)
	p.Done()
	if err != nil {
		return err
	}
	return cmdline.Render(a.stdout, format, res, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "imported %d sessions: %d envelopes appended, %d already present\n", res.Sessions, res.Appended, res.Unchanged)
		return err
	})
}

func (a *app) sessions(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	format, err := cmdline.Format(c)
	if err != nil {
		return err
	}
	s, err := cmdline.OpenStore(c)
	if err != nil {
		return err
	}
	defer s.Close()
	infos, err := s.Sessions(c.Context, store.Filter{Tenant: c.String("tenant")})
	if err != nil {
		return err
	}
	if infos == nil {
		infos = []store.SessionInfo{}
	}
	return cmdline.Render(a.stdout, format, infos, func(w io.Writer) error {
		fmt.Fprintf(w, "%-12s %-28s %8s  %-24s  %-24s  %s\n", "TENANT", "SESSION", "COUNT", "FIRST", "LAST", "HEAD")
		for _, i := range infos {
			fmt.Fprintf(w, "%-12s %-28s %8d  %-24s  %-24s  %s\n", i.Tenant, printable(i.Session, 28), i.Count,
				stamp(i.FirstTs), stamp(i.LastTs), short(i.HeadHash))
		}
		return nil
	})
}

func stamp(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func short(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}

// printable quotes s when it holds anything a terminal would act on, and
// cuts it to n runes.
func printable(s string, n int) string {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			s = fmt.Sprintf("%q", s)
			break
		}
	}
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n-1]) + "…"
	}
	return s
}

// printEnvelope prints one stored envelope: its bytes as they are under
// json, a timeline row under text (sealed values shown as sealed).
func (a *app) printEnvelope(format string, lim ledger.Limits, m store.Msg) error {
	if format == "json" {
		_, err := fmt.Fprintf(a.stdout, "%s\n", m.Data)
		return err
	}
	e, err := ledger.Decode(m.Data, lim)
	if err != nil {
		_, werr := fmt.Fprintf(a.stdout, "stream seq %d  UNREADABLE: %v\n", m.StreamSeq, err)
		return werr
	}
	return a.printRow(e, seal.Render(e.Payload()), 120)
}

// printRow prints a timeline row: a tool call as its tool and input, a
// verdict as its decision, anything else as its payload; cut to width runes
// (0: whole).
func (a *app) printRow(e *ledger.Envelope, payload []byte, width int) error {
	_, err := fmt.Fprintf(a.stdout, "%s  %s/%s #%-4d %-18s %s  %s\n", stamp(e.TsUnixMs()), e.TenantID(),
		printable(e.SessionID(), 40), e.Seq(), e.EventType(), short(e.Hash()), summary(gist(payload), width))
	return err
}

// gist is the part of a payload a timeline shows.
func gist(payload []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(payload, &m) != nil {
		return payload
	}
	if in, ok := m["tool_input"]; ok {
		var native string
		json.Unmarshal(m["tool_name_native"], &native)
		return append([]byte(native+" "), in...)
	}
	if v, ok := m["verdict"]; ok {
		var verdict struct {
			Decision string `json:"decision"`
		}
		var reason string
		json.Unmarshal(v, &verdict)
		json.Unmarshal(m["reason_code"], &reason)
		return []byte(verdict.Decision + " " + reason)
	}
	return payload
}

// summary shortens a payload for one line.
func summary(p []byte, n int) string {
	s := string(p)
	if n > 0 && utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n-1]) + "…"
	}
	return s
}

func (a *app) tail(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	format, err := cmdline.Format(c)
	if err != nil {
		return err
	}
	s, err := cmdline.OpenStore(c)
	if err != nil {
		return err
	}
	defer s.Close()
	lim, err := cmdline.Limits(c)
	if err != nil {
		return err
	}
	return s.Tail(c.Context, filterOf(c), 0, func(m store.Msg) error { return a.printEnvelope(format, lim, m) })
}

// readKeyring reads the Ed25519 public keys of PEM files.
func readKeyring(paths []string) (receipt.Keyring, error) {
	ring := receipt.Keyring{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, cmdline.Usage(err)
		}
		if err := ring.Add(raw); err != nil {
			return nil, cmdline.Usage(fmt.Errorf("%s: %w", p, err))
		}
	}
	return ring, nil
}

// serveCommand is `serve`.
func serveCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "serve",
		Usage:     "run the embedded server for other processes until interrupted",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:4222", Usage: "`HOST:PORT` to accept NATS clients on"},
		},
		Action: a.serve,
	})
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

// verifyCommand is `verify`.
func verifyCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "verify",
		Usage:     "verify chains in the store or in a bundle; exit 1 on any fault",
		ArgsUsage: " ",
		Flags: append(filterFlags(),
			&cli.StringFlag{Name: "bundle", Usage: "verify this bundle `FILE` instead of the store (- for stdin)"},
			&cli.BoolFlag{Name: "deep", Usage: "also re-canonicalize every envelope and require its stored bytes to be its RFC 8785 form"},
			&cli.StringSliceFlag{Name: "pubkey", Usage: "also check every engine record's signature, receipt and resolution with the Ed25519 public keys in PEM `FILE` (repeat it for several keys, e.g. the receipt and the checkpoint key)"},
			&cli.StringFlag{Name: "checkpoint", Usage: "also check the ledger against this signed checkpoint `FILE` (needs --pubkey with its key): finds truncated and rewritten sessions"},
		),
		Action: a.verify,
	})
}

// checkpointCommand is `checkpoint`.
func checkpointCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "checkpoint",
		Usage:     "write a signed checkpoint of every session's head (C2SP signed note, Ed25519)",
		ArgsUsage: " ",
		Description: "A later `ledger verify --checkpoint FILE --pubkey KEY.pub.pem` finds every session that is\n" +
			"shorter than the checkpoint says or differs at its checkpointed seq — the truncations and\n" +
			"rewritten suffixes a hash chain alone cannot show. The key defaults to the engine's receipt key\n" +
			"(DATA/keys/receipt-ed25519.pem, generated on first use, public key beside it).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Usage: "Ed25519 PKCS#8 PEM `FILE` to sign with"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
		},
		Action: a.checkpoint,
	})
}

// exportCommand is `export`.
func exportCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "export",
		Usage:     "write sessions as an NDJSON bundle ordered by tenant, session, seq",
		ArgsUsage: " ",
		Flags: append(filterFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
		),
		Action: a.export,
	})
}

// importCommand is `import`.
func importCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "import",
		Usage:     "verify a bundle, then append it keeping every hash",
		ArgsUsage: "FILE|-",
		Action:    a.importBundle,
	})
}

// sessionsCommand is `sessions`.
func sessionsCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "sessions",
		Usage:     "list sessions with count, head hash and first and last time",
		ArgsUsage: " ",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "tenant", Usage: "only this `TENANT`"}},
		Action:    a.sessions,
	})
}

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

// tailCommand is `tail`.
func tailCommand(a *app) *cli.Command {
	return cmdline.WithGlobals(&cli.Command{
		Name:      "tail",
		Usage:     "follow new envelopes until interrupted",
		ArgsUsage: " ",
		Flags:     filterFlags(),
		Action:    a.tail,
	})
}
