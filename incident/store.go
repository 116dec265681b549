package incident

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/checkpoint"
	"github.com/agentledger/agentledger/ledger/store"
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
			out = append(out, Record{Raw: m.Data, StreamSeq: m.StreamSeq, Unreadable: fmt.Sprintf("stream seq %d  UNREADABLE: %v", m.StreamSeq, err)})
			return nil
		}
		shown := seal.Render(e.Payload())
		if show != nil {
			if shown, err = show(e); err != nil {
				return fmt.Errorf("seq %d: %w", e.Seq(), err)
			}
		}
		out = append(out, Record{Raw: m.Data, Env: e, Shown: shown, StreamSeq: m.StreamSeq})
		return nil
	})
	return out, err
}

// NewestCheckpoint is the last checkpoint recorded in session k of st
// (where the engine records them), nil when there is none. It is parsed,
// not opened: the view reports what the record says, and ledger verify
// checks the signature.
func NewestCheckpoint(ctx context.Context, st *store.Store, k ledger.SessionKey) (*checkpoint.Checkpoint, error) {
	var newest *checkpoint.Checkpoint
	err := st.ReadSession(ctx, k, func(m store.Msg) error {
		e, err := ledger.Decode(m.Data, ledger.Limits{})
		if err != nil || e.EventType() != ledger.EventCheckpoint {
			return nil // verify names it
		}
		var rec struct {
			Note string `json:"note"`
		}
		if json.Unmarshal(e.Payload(), &rec) == nil {
			if cp, err := checkpoint.ParseNote([]byte(rec.Note)); err == nil {
				newest = cp
			}
		}
		return nil
	})
	return newest, err
}
