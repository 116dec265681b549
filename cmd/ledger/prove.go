package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/agentledger/agentledger/cmd/internal/cmdline"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/receipt"
)

// InclusionOutput is what `ledger prove inclusion` prints: the proof, the
// envelope it proves (its stored bytes), where it is, and the signed
// checkpoint whose root the proof reaches.
type InclusionOutput struct {
	checkpoint.InclusionProof
	Envelope  json.RawMessage `json:"envelope"`
	StreamSeq uint64          `json:"stream_seq"`
	// Stream is the stream of StreamSeq in a ledger of several streams
	// (the stream whose log the checkpoint signs).
	Stream     string `json:"stream,omitempty"`
	Checkpoint string `json:"checkpoint"`
}

// ConsistencyOutput is what `ledger prove consistency` prints: the proof
// and the two signed checkpoints.
type ConsistencyOutput struct {
	checkpoint.ConsistencyProof
	Old string `json:"old_checkpoint"`
	New string `json:"new_checkpoint"`
}

// proveCommand is `prove`.
func proveCommand(a *app) *cli.Command {
	cp := &cli.StringFlag{Name: "checkpoint-pubkey", Usage: "check the checkpoints' signatures with the checkpoint key in PEM `FILE` (default: DATA/keys/checkpoint-ed25519.pub.pem)"}
	return &cli.Command{
		Name:  "prove",
		Usage: "print RFC 6962 proofs over the ledger's log: an envelope in a checkpoint, or one checkpoint a prefix of another",
		Subcommands: []*cli.Command{
			cmdline.WithGlobals(&cli.Command{
				Name:      "inclusion",
				Usage:     "prove an envelope (or a session's head) is in the log a checkpoint signs",
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "checkpoint", Required: true, Usage: "the signed checkpoint `FILE`"}, cp,
					&cli.StringFlag{Name: "tenant", Value: ledger.DefaultTenant, Usage: "the session's `TENANT`"},
					&cli.StringFlag{Name: "session", Usage: "the envelope's session `ID`"},
					&cli.Int64Flag{Name: "seq", Value: -1, Usage: "the envelope's `SEQ` in its session (default: the session's head in the checkpoint)"},
				},
				Action: a.proveInclusion,
			}),
			cmdline.WithGlobals(&cli.Command{
				Name:      "consistency",
				Usage:     "prove the log an older checkpoint signs is a prefix of the log a newer one signs",
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "old", Required: true, Usage: "the older checkpoint `FILE`"},
					&cli.StringFlag{Name: "new", Required: true, Usage: "the newer checkpoint `FILE`"}, cp,
				},
				Action: a.proveConsistency,
			}),
		},
	}
}

// readCheckpoint reads a format 2 checkpoint file, its signature checked
// with the checkpoint key of --checkpoint-pubkey (or the data directory's).
func readCheckpoint(c *cli.Context, path string) (*checkpoint.Checkpoint, []byte, error) {
	msg, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, cmdline.Usage(err)
	}
	keyFile := c.String("checkpoint-pubkey")
	if keyFile == "" {
		_, keyFile = receipt.KeyFiles(cmdline.Resolve(c, cmdline.FlagData), receipt.KeyCheckpoints)
	}
	var keys receipt.Keys
	raw, err := os.ReadFile(keyFile)
	if err == nil {
		err = keys.Add(raw, receipt.PurposeCheckpoints)
	}
	if err != nil {
		return nil, nil, cmdline.Usage(fmt.Errorf("checkpoint key %s: %w", keyFile, err))
	}
	cp, err := checkpoint.OpenWith(msg, keys.Checkpoints)
	if err != nil {
		return nil, nil, cmdline.Fault(fmt.Errorf("%s: %w", path, err))
	}
	if cp.Version < checkpoint.Version2 {
		return nil, nil, cmdline.Usage(fmt.Errorf("%s is a format %d checkpoint: it commits to session heads, not to a log", path, cp.Version))
	}
	return cp, msg, nil
}

// logFor reads the log of the stream the checkpoint names (a one-stream
// ledger's only log), as far as size at least, and requires its root at
// size to be root: the log the checkpoint signed.
func logFor(c *cli.Context, st *store.Store, cp *checkpoint.Checkpoint, index bool) (*store.LogState, error) {
	log, err := st.LogOf(checkpoint.StreamOf(cp.Origin), index)
	if err != nil {
		return nil, cmdline.Fault(fmt.Errorf("the ledger holds no log the checkpoint (%s) signs: %w", cp.Origin, err))
	}
	if err := st.CatchUp(c.Context, log); err != nil {
		return nil, err
	}
	if f := cp.CheckLog(&log.Log); f != nil {
		return nil, cmdline.Fault(fmt.Errorf("the ledger is not the log the checkpoint signs: %s", f))
	}
	return log, nil
}

func (a *app) proveInclusion(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	cp, msg, err := readCheckpoint(c, c.String("checkpoint"))
	if err != nil {
		return err
	}
	k := ledger.SessionKey{Tenant: c.String("tenant"), Session: c.String("session")}
	if k.Session == "" {
		return cmdline.Usage(errors.New("prove inclusion needs --session (and --seq, or the session's head is proved)"))
	}
	seq := c.Int64("seq")
	for _, h := range cp.Heads {
		if seq < 0 && h.Tenant == k.Tenant && h.Session == k.Session {
			seq = int64(h.Seq)
		}
	}
	if seq < 0 {
		return cmdline.Usage(fmt.Errorf("%s is not in the checkpoint (%s)", k, cp.Origin))
	}
	st, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return err
	}
	defer st.Close()
	log, err := logFor(c, st, cp, true)
	if err != nil {
		return err
	}
	i, ok := log.LeafOf(k, uint64(seq))
	if !ok || i >= cp.Size {
		return cmdline.Usage(fmt.Errorf("%s seq %d is not in the log the checkpoint signs (%d envelopes)%s", k, seq, cp.Size, otherStream(st, log, k)))
	}
	p, err := log.Log.ProveInclusion(i, cp.Size)
	if err != nil {
		return err
	}
	out := InclusionOutput{InclusionProof: *p, StreamSeq: log.Place(i).StreamSeq, Stream: log.Stream, Checkpoint: string(msg)}
	if out.Envelope, err = st.GetAt(c.Context, log.Stream, out.StreamSeq); err != nil {
		return err
	}
	return writeJSON(a, out)
}

func (a *app) proveConsistency(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	old, oldMsg, err := readCheckpoint(c, c.String("old"))
	if err != nil {
		return err
	}
	cur, newMsg, err := readCheckpoint(c, c.String("new"))
	if err != nil {
		return err
	}
	if old.Origin != cur.Origin || old.Size > cur.Size {
		return cmdline.Usage(fmt.Errorf("--old (%s, %d envelopes) is not an earlier checkpoint of --new's log (%s, %d)", old.Origin, old.Size, cur.Origin, cur.Size))
	}
	st, err := cmdline.OpenStore(c, cmdline.Read)
	if err != nil {
		return err
	}
	defer st.Close()
	log, err := logFor(c, st, cur, false)
	if err != nil {
		return err
	}
	if f := old.CheckLog(&log.Log); f != nil {
		return cmdline.Fault(fmt.Errorf("the older checkpoint is not a prefix of the log: %s", f))
	}
	p, err := log.Log.ProveConsistency(old.Size, cur.Size)
	if err != nil {
		return err
	}
	return writeJSON(a, ConsistencyOutput{ConsistencyProof: *p, Old: string(oldMsg), New: string(newMsg)})
}

// otherStream says, when session k is in another stream than log's, which
// one's checkpoint proves it.
func otherStream(st *store.Store, log *store.LogState, k ledger.SessionKey) string {
	if log.Stream == "" || st.StreamOf(k) == log.Stream {
		return ""
	}
	return fmt.Sprintf(": the checkpoint is of stream %s; %s is in stream %s, whose checkpoint proves it", log.Stream, k, st.StreamOf(k))
}

func writeJSON(a *app, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(append(b, '\n'))
	return err
}
