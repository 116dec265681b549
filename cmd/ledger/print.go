package main

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
	"github.com/agentledger/agentledger/seal"
)

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
		_, werr := fmt.Fprintf(a.stdout, "%s  UNREADABLE: %v\n", m.Where(), err)
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
	if _, ok := m["resolution"]; ok && m["for_seq"] != nil {
		var rec struct {
			Resolution string `json:"resolution"`
			ForSeq     uint64 `json:"for_seq"`
			By         string `json:"by"`
			AuthBy     string `json:"authenticated_by"`
		}
		json.Unmarshal(payload, &rec)
		out := fmt.Sprintf("%s for seq %d", rec.Resolution, rec.ForSeq)
		if rec.By != "" {
			out += " by " + rec.By
			if rec.AuthBy != "" && rec.AuthBy != rec.By {
				out += " (" + rec.AuthBy + ")"
			}
		}
		return []byte(out)
	}
	if _, ok := m["verdict"]; ok {
		var rec aarts.VerdictRecord
		if json.Unmarshal(payload, &rec) != nil {
			return payload
		}
		return []byte(verdictGist(rec))
	}
	return payload
}

// verdictGist is a verdict as a timeline shows it: its decision and reason,
// and what the host was told where that is not the decision (an allow the
// host got no decision for is not an allow it was given).
func verdictGist(rec aarts.VerdictRecord) string {
	out := rec.Verdict.Decision + " " + rec.ReasonCode
	if !rec.IsEnforced() {
		out += " [monitor mode: recorded, not enforced]"
	}
	switch rec.HostAnswer {
	case "", rec.Verdict.Decision:
	case aarts.HostAnswerNone:
		out += " [host given no decision: its own rules decided]"
	default:
		out += " [host answered " + rec.HostAnswer + "]"
	}
	return out
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
