package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentledger/agentledger/ledger"
)

// Atomic batch publish (stream allow_atomic, nats-server 2.12+): every
// message of a batch is stored, or none is.
const (
	batchIDHeader     = "Nats-Batch-Id"
	batchSeqHeader    = "Nats-Batch-Sequence"
	batchCommitHeader = "Nats-Batch-Commit"

	// maxBatch is how many envelopes one atomic batch carries; the server
	// takes up to 1000 by default.
	maxBatch = 1000
	// maxBatchBytes bounds the bytes of one batch.
	maxBatchBytes = 8 << 20
)

// errBatchUnsupported means the stream or server cannot take atomic batches.
var errBatchUnsupported = errors.New("atomic batch publish unsupported")

// batchAck is the answer to a batch commit: a publish acknowledgement or an
// API error.
type batchAck struct {
	Stream string              `json:"stream"`
	Seq    uint64              `json:"seq"`
	Count  int                 `json:"count"`
	Error  *jetstream.APIError `json:"error,omitempty"`
}

// run is consecutive envelopes of one session whose first links to the
// message at stream sequence expect on the session's subject (0: none).
type run struct {
	key    ledger.SessionKey
	envs   []*ledger.Envelope
	expect uint64
	// fence, when set, is the partition fence the run's second envelope
	// asserts (see Fence): the run lands only while its writer owns the
	// session's partition.
	fence *Fence
}

// publishBatch stores runs, each of a different session of one stream, as
// one atomic batch: every run's first envelope asserts its subject's last
// stream sequence, every envelope carries its hash as Nats-Msg-Id. It
// returns the stream sequence of each run's last envelope. A wrong
// expected sequence anywhere fails the whole batch with ErrConflict.
func (s *Store) publishBatch(ctx context.Context, runs []run) ([]uint64, error) {
	if len(runs) == 0 {
		return nil, errors.New("empty batch")
	}
	id := nuid.Next()
	total := 0
	sh := s.shardOf(runs[0].key)
	for _, r := range runs {
		total += len(r.envs)
		if s.shardOf(r.key) != sh {
			return nil, fmt.Errorf("one atomic batch holds sessions of streams %s and %s", sh.name, s.StreamOf(r.key))
		}
		if r.fence != nil && s.shardOfSubject(r.fence.Subject) != sh {
			return nil, fmt.Errorf("the fence %s asserted for %s is not in the session's stream %s", r.fence.Subject, r.key, sh.name)
		}
	}
	n := 0
	for _, r := range runs {
		subj := sh.subj.of(r.key)
		for i, e := range r.envs {
			n++
			h := nats.Header{
				batchIDHeader:         []string{id},
				batchSeqHeader:        []string{strconv.Itoa(n)},
				jetstream.MsgIDHeader: []string{e.Hash()},
			}
			switch {
			case i == 0:
				h[jetstream.ExpectedLastSubjSeqHeader] = []string{strconv.FormatUint(r.expect, 10)}
			case i == 1 && r.fence != nil:
				// One expected-subject check per message: the first holds
				// the chain, the second the writer's fence.
				h[jetstream.ExpectedLastSubjSeqHeader] = []string{strconv.FormatUint(r.fence.Seq, 10)}
				h[jetstream.ExpectedLastSubjSeqSubjHeader] = []string{r.fence.Subject}
			}
			msg := &nats.Msg{Subject: subj, Data: e.Bytes(), Header: h}
			if n < total {
				if err := s.nc.PublishMsg(msg); err != nil {
					return nil, s.wrap("publish batch", err)
				}
				continue
			}
			h[batchCommitHeader] = []string{"1"}
			last, err := s.commitBatch(ctx, msg, total)
			if err != nil {
				return nil, err
			}
			if err := s.durable(ctx); err != nil {
				return nil, err
			}
			// A batch is stored contiguously: the runs end at the
			// sequences before last in reverse order of their lengths.
			seqs := make([]uint64, len(runs))
			end := last
			for j := len(runs) - 1; j >= 0; j-- {
				seqs[j] = end
				end -= uint64(len(runs[j].envs))
			}
			return seqs, nil
		}
	}
	return nil, errors.New("empty batch")
}

// commitBatch sends a batch's last message, the commit, and returns the
// stream sequence of the batch's last message.
func (s *Store) commitBatch(ctx context.Context, msg *nats.Msg, total int) (uint64, error) {
	rctx, cancel := context.WithTimeout(ctx, 2*s.cfg.Timeout)
	reply, err := s.nc.RequestMsgWithContext(rctx, msg)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, s.wrap("commit batch", err)
	}
	var ack batchAck
	if err := json.Unmarshal(reply.Data, &ack); err != nil {
		return 0, fmt.Errorf("commit batch: bad answer %q: %w", reply.Data, err)
	}
	if ack.Error != nil {
		switch {
		case isConflict(ack.Error):
			return 0, fmt.Errorf("%w: %w", ErrConflict, ack.Error)
		case ack.Error.ErrorCode == jsErrBatchDuplicateID:
			// Envelopes of the batch are stored already (a re-append of
			// the same input): the caller reads the head back.
			return 0, fmt.Errorf("%w: stored already: %w", ErrConflict, ack.Error)
		case ack.Error.ErrorCode == jsErrAtomicPublishDisabled:
			return 0, fmt.Errorf("%w: %w", errBatchUnsupported, ack.Error)
		}
		return 0, fmt.Errorf("commit batch: %w", ack.Error)
	}
	if ack.Count != total {
		return 0, fmt.Errorf("commit batch: stored %d of %d envelopes", ack.Count, total)
	}
	return ack.Seq, nil
}

// jsErrAtomicPublishDisabled is the server's error code for a batch sent to
// a stream without allow_atomic.
const jsErrAtomicPublishDisabled = 10174

// jsErrBatchDuplicateID is the server's error code for a batch holding a
// message id the stream has stored within its duplicate window.
const jsErrBatchDuplicateID = 10201

// chunks splits envs into batches within maxBatch and maxBatchBytes.
func chunks(envs []*ledger.Envelope) [][]*ledger.Envelope {
	var out [][]*ledger.Envelope
	start, size := 0, 0
	for i, e := range envs {
		if i > start && (i-start == maxBatch || size+len(e.Bytes()) > maxBatchBytes) {
			out = append(out, envs[start:i])
			start, size = i, 0
		}
		size += len(e.Bytes())
	}
	if start < len(envs) {
		out = append(out, envs[start:])
	}
	return out
}
