package incident

import (
	"context"
	"fmt"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/seal"
)

// Read reads a session's envelopes from st, each payload shown by show
// (nil: sealed values shown sealed). A record that cannot be decoded is
// kept, as unreadable.
func Read(ctx context.Context, st *store.Store, k ledger.SessionKey, lim ledger.Limits, show func(*ledger.Envelope) ([]byte, error)) ([]Record, error) {
	var out []Record
	err := st.ReadSession(ctx, k, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, lim)
		if err != nil {
			out = append(out, Record{Raw: m.Data, StreamSeq: m.StreamSeq, Stream: m.Stream, Unreadable: fmt.Sprintf("%s  UNREADABLE: %v", m.Where(), err)})
			return nil
		}
		shown := seal.Render(e.Payload())
		if show != nil {
			if shown, err = show(e); err != nil {
				return fmt.Errorf("seq %d: %w", e.Seq(), err)
			}
		}
		out = append(out, Record{Raw: m.Data, Env: e, Shown: shown, StreamSeq: m.StreamSeq, Stream: m.Stream})
		return nil
	})
	return out, err
}

// Newest is the newest checkpoint recorded in a session, as far as the
// view may rely on it.
type Newest struct {
	// Checkpoint is the newest recorded checkpoint that was not refused;
	// nil when there is none.
	Checkpoint *checkpoint.Checkpoint
	// Checked says a checkpoint key opened its note; without one given,
	// the note is read unchecked.
	Checked bool
	// Refused names, newest last, the Checkpoint records refused: a note
	// signed with a records key (in any format), one no checkpoint key
	// given opens, or a record that disagrees with its note.
	Refused []string
}

// NewestCheckpoint reads the checkpoints recorded in session k of st
// (where the engine records them), each note opened with a key of
// checkpoints (checkpoint keys only; none: read unchecked) and refused
// when a key of records signed it. In a ledger of several streams, only
// the checkpoints of the stream holding session viewed count: each stream
// has checkpoints of its own.
func NewestCheckpoint(ctx context.Context, st *store.Store, k, viewed ledger.SessionKey, checkpoints, records receipt.Keyring) (Newest, error) {
	var newest Newest
	err := st.ReadSession(ctx, k, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil || e.EventType() != ledger.EventCheckpoint {
			return nil // verify names it
		}
		cp, fault := checkpoint.Recorded(e, checkpoints, records)
		if fault != nil {
			newest.Refused = append(newest.Refused, fault.Error())
			return nil
		}
		if len(st.Streams()) > 1 && checkpoint.StreamOf(cp.Origin) != st.StreamOf(viewed) {
			return nil
		}
		newest.Checkpoint, newest.Checked = cp, len(checkpoints) > 0
		return nil
	})
	return newest, err
}
