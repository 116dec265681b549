// Package incident builds the incident view of one recorded session: the
// conversation and every action in order, each verdict with its rule and
// reasons, resolutions and who gave them, engine failures and rejected
// input, where taint and data classes changed, the receipts and whether
// they verify, the chain's head and whether a checkpoint covers it. It
// reads what the ledger holds, sealed values shown sealed unless the
// caller revealed them; WriteHTML renders it as one self-contained page.
package incident

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/detect"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/receipt"
	"github.com/agentledger/agentledger/reducer"
)

// Record is one stored envelope of the session: its bytes, the envelope
// decoded (nil when it could not be), and its payload as shown (sealed
// values sealed, or revealed).
type Record struct {
	Raw        []byte
	Env        *ledger.Envelope
	Shown      []byte
	StreamSeq  uint64
	Stream     string // the stream of StreamSeq, in a ledger of several streams
	Unreadable string
}

// Input is what the view is built from.
type Input struct {
	Key     ledger.SessionKey
	Records []Record
	// Keys are the record keys receipts are checked with; none: receipts
	// are listed, not checked.
	Keys receipt.Keyring
	// Checkpoint is the newest checkpoint recorded, and those refused.
	Checkpoint Newest
	Revealed   bool
	Limits     ledger.Limits
}

// View is a session as the incident page shows it.
type View struct {
	Key        string
	Envelopes  int
	First      string
	Last       string
	Revealed   bool
	Head       Head
	Chain      Status
	Receipts   Status
	Checkpoint Status
	Counts     map[string]int // verdicts by decision
	Rows       []Row
	Faults     []string
}

// Head is the chain's last envelope.
type Head struct {
	Seq  uint64
	Hash string
}

// Status is one check's outcome: ok, failed, or unknown (not checked), and
// what it says.
type Status struct {
	State  string
	Detail string
}

// Row is one envelope in the timeline.
type Row struct {
	Seq        uint64
	Time       string
	Type       string
	Kind       string // conversation, action, result, verdict, resolution, failure, rejected, other
	Hash       string
	Summary    string   // the readable gist: a prompt, a command, a path, a decision
	Details    []string // reasons, rule, answer, who resolved
	Decision   string   // for verdicts
	ForSeq     *uint64  // for verdicts and resolutions: the event they answer
	Receipt    string   // "verified", "not checked", or the fault
	Changes    []string // taint and data-class changes this envelope made
	Payload    string
	Fault      string // the chain fault at this seq, if any
	Unenforced bool
	// who, for a resolution, is who gave it (not redacted: see describe).
	who string
}

// Build reads in into a View. It never fails: what cannot be read is
// shown as such.
func Build(in Input) *View {
	v := &View{Key: in.Key.String(), Envelopes: len(in.Records), Revealed: in.Revealed, Counts: map[string]int{}}
	faults := verify(in)
	bySeq := map[uint64]string{}
	for _, f := range faults {
		if f.Session == in.Key.Session || f.Session == "" {
			v.Faults = append(v.Faults, detect.Redact(f.Error()))
			bySeq[f.Seq] = detect.Redact(string(f.Kind) + ": " + f.Detail)
		}
	}
	snap := reducer.Snapshot{Seq: -1}
	folding := true
	for _, r := range in.Records {
		if r.Env == nil {
			v.Rows = append(v.Rows, Row{Kind: "other", Type: "UNREADABLE", Summary: r.Unreadable, Fault: r.Unreadable})
			folding = false
			continue
		}
		e := r.Env
		row := Row{Seq: e.Seq(), Time: stamp(e.TsUnixMs()), Type: e.EventType(), Hash: e.Hash(), Payload: string(r.Shown), Fault: bySeq[e.Seq()]}
		describe(&row, r.Shown, v)
		if row.Kind == "verdict" && row.Receipt == "" {
			row.Receipt = receiptState(in, r.Shown, row.Seq, bySeq)
		}
		if folding {
			next, err := reducer.Apply(snap, e)
			if err != nil {
				folding = false
			} else {
				row.Changes = changes(snap, next)
				snap = next
			}
		}
		v.Rows = append(v.Rows, row)
		if v.First == "" {
			v.First = row.Time
		}
		v.Last = row.Time
		v.Head = Head{Seq: e.Seq(), Hash: e.Hash()}
	}
	v.Chain = chainStatus(v)
	v.Receipts = receiptsStatus(in, v)
	v.Checkpoint = checkpointStatus(in, v)
	return v
}

// verify checks the session's chain (deep) and, with keys, its records
// and receipts.
func verify(in Input) []*ledger.ChainError {
	ver := ledger.NewVerifier(ledger.Deep, in.Limits)
	if len(in.Keys) > 0 {
		ver.With(receipt.RecordCheck(in.Keys, ledger.Deep, in.Limits))
	}
	for i, r := range in.Records {
		ver.Add(r.Raw, ledger.Position{Line: i + 1, StreamSeq: r.StreamSeq, Stream: r.Stream})
	}
	return ver.Report().Faults
}

func chainStatus(v *View) Status {
	if len(v.Faults) == 0 {
		return Status{State: "ok", Detail: fmt.Sprintf("%d envelopes chain from genesis to seq %d", v.Envelopes, v.Head.Seq)}
	}
	return Status{State: "failed", Detail: fmt.Sprintf("%d faults: %s", len(v.Faults), v.Faults[0])}
}

func receiptsStatus(in Input, v *View) Status {
	n := 0
	for _, r := range v.Rows {
		if r.Kind == "verdict" && r.Receipt != "none" {
			n++
		}
	}
	switch {
	case n == 0:
		return Status{State: "unknown", Detail: "no receipts in this session"}
	case len(in.Keys) == 0:
		return Status{State: "unknown", Detail: fmt.Sprintf("%d receipts, not checked: no public key (ledger show checks them with the data directory's key)", n)}
	}
	bad := 0
	for _, r := range v.Rows {
		if r.Kind == "verdict" && r.Receipt != "verified" && r.Receipt != "none" {
			bad++
		}
	}
	if bad > 0 {
		return Status{State: "failed", Detail: fmt.Sprintf("%d of %d receipts do not verify", bad, n)}
	}
	return Status{State: "ok", Detail: fmt.Sprintf("%d receipts verify with key %s", n, strings.Join(slices.Sorted(maps.Keys(in.Keys)), ", "))}
}

// receiptState says whether a verdict's receipt verifies, from its payload
// as recorded (not the redacted text the page shows).
func receiptState(in Input, shown []byte, seq uint64, bySeq map[uint64]string) string {
	var rec struct {
		Receipt json.RawMessage `json:"receipt"`
	}
	if json.Unmarshal(shown, &rec) != nil || len(rec.Receipt) == 0 {
		return "none"
	}
	if f := bySeq[seq]; f != "" {
		return f
	}
	if len(in.Keys) == 0 {
		return "not checked"
	}
	return "verified"
}

func checkpointStatus(in Input, v *View) Status {
	cp := in.Checkpoint.Checkpoint
	if n := len(in.Checkpoint.Refused); n > 0 {
		return Status{State: "failed", Detail: fmt.Sprintf("%d recorded checkpoints refused (the newest: %s)", n, in.Checkpoint.Refused[n-1])}
	}
	if cp == nil {
		return Status{State: "unknown", Detail: "no checkpoint recorded (ledger checkpoint records one)"}
	}
	if !in.Checkpoint.Checked {
		return Status{State: "unknown", Detail: fmt.Sprintf("the newest checkpoint (log size %d) was not checked: no checkpoint key (give the checkpoint public key)", cp.Size)}
	}
	for _, h := range cp.Heads {
		if h.Tenant != in.Key.Tenant || h.Session != in.Key.Session {
			continue
		}
		switch {
		case h.Seq == v.Head.Seq && h.Hash == v.Head.Hash:
			return Status{State: "ok", Detail: fmt.Sprintf("the newest checkpoint (log size %d) covers the head, seq %d", cp.Size, h.Seq)}
		case h.Seq < v.Head.Seq:
			return Status{State: "unknown", Detail: fmt.Sprintf("the newest checkpoint (log size %d) covers seq 0-%d; seq %d-%d came after it", cp.Size, h.Seq, h.Seq+1, v.Head.Seq)}
		default:
			return Status{State: "failed", Detail: fmt.Sprintf("the newest checkpoint names head seq %d %s; the record's is seq %d %s", h.Seq, short(h.Hash), v.Head.Seq, short(v.Head.Hash))}
		}
	}
	return Status{State: "unknown", Detail: fmt.Sprintf("the newest checkpoint (log size %d) came before this session", cp.Size)}
}

// describe fills a row's kind, summary and details from its payload.
func describe(row *Row, shown []byte, v *View) {
	var m map[string]any
	parsed := json.Unmarshal(shown, &m) == nil
	str := func(k string) string { s, _ := m[k].(string); return s }
	switch typ := row.Type; {
	case !parsed:
		row.Kind, row.Summary = "other", string(shown)
	default:
		describeKind(row, typ, shown, m, str, v)
	}
	finish(row, v)
}

// describeKind fills a row from a payload that parses, by its type.
func describeKind(row *Row, typ string, shown []byte, m map[string]any, str func(string) string, v *View) {
	switch typ {
	case ledger.EventVerdict:
		var rec aarts.VerdictRecord
		_ = json.Unmarshal(shown, &rec)
		row.Kind, row.Decision = "verdict", rec.Verdict.Decision
		row.ForSeq = &rec.ForSeq
		v.Counts[cmp.Or(rec.Verdict.Decision, "none")]++
		row.Summary = fmt.Sprintf("%s (%s) for seq %d", rec.Verdict.Decision, rec.ReasonCode, rec.ForSeq)
		if rec.Verdict.MatchedRuleID != "" {
			row.Details = append(row.Details, "rule "+rec.Verdict.MatchedRuleID)
		}
		row.Details = append(row.Details, rec.Verdict.Reasons...)
		if rec.HostAnswer != "" {
			row.Details = append(row.Details, "host answered: "+rec.HostAnswer)
		}
		if !rec.IsEnforced() {
			row.Unenforced = true
			row.Details = append(row.Details, "monitor mode: not enforced")
		}
	case ledger.EventResolution:
		var rec aarts.ResolutionRecord
		_ = json.Unmarshal(shown, &rec)
		row.Kind, row.ForSeq = "resolution", &rec.ForSeq
		row.Summary = fmt.Sprintf("%s for seq %d", rec.Resolution, rec.ForSeq)
		if rec.Scope != "" && strings.Contains(rec.Resolution, "_") {
			// Where an allow_always or deny_similar holds; approved and
			// denied answer the one call.
			row.Details = append(row.Details, "holds for the "+rec.Scope)
		}
		if rec.By != "" {
			// Who resolved it is the engine's own record of an approver
			// token's identity, never the agent's text: shown as it is
			// (an e-mail address or a token name would read as a secret).
			row.who = "by " + rec.By + authBy(rec.AuthenticatedBy)
		}
	case ledger.EventEngineFailure:
		row.Kind, row.Summary = "failure", cmp.Or(str("error"), str("reason"), string(shown))
	case ledger.EventRejected:
		row.Kind, row.Summary = "rejected", cmp.Or(str("defect"), str("error"), string(shown))
	case "PreUserInput":
		row.Kind, row.Summary = "conversation", "user: "+textOf(m["raw_input"])
	case "PostLLMResponse":
		row.Kind, row.Summary = "conversation", "model: "+textOf(m["response_text"])
	case "PreOutputDeliver":
		row.Kind, row.Summary = "conversation", "to user: "+textOf(m["output_text"])
	case "PreLLMRequest":
		row.Kind, row.Summary = "conversation", "model request to "+cmp.Or(str("model_id"), "the model")
	case "PreToolUse", "PostToolUse":
		row.Kind = "action"
		if row.Type == "PostToolUse" {
			row.Kind = "result"
		}
		row.Summary = cmp.Or(str("tool_name_native"), str("tool_name")) + ": " + actionOf(m["tool_input"])
		if row.Type == "PostToolUse" {
			if r := textOf(m["tool_result"]); r != "" {
				row.Details = append(row.Details, "result: "+r)
			}
		}
	default:
		row.Kind, row.Summary = "other", gist(m)
	}
}

// finish redacts a row (unless the session was revealed) and then cuts it.
func finish(row *Row, v *View) {
	// A recording made without sealing holds values in the clear: they
	// are redacted whole, then cut (a cut first could split a secret past
	// its detector). A recorded reveal shows what it decrypted.
	if !v.Revealed {
		row.Summary = detect.Redact(row.Summary)
		for i := range row.Details {
			row.Details[i] = detect.Redact(row.Details[i])
		}
		row.Payload = detect.RedactJSONText(row.Payload)
	}
	row.Summary = cut(row.Summary, 400)
	for i := range row.Details {
		row.Details[i] = cut(row.Details[i], 300)
	}
	if row.who != "" {
		row.Details = append([]string{cut(row.who, 300)}, row.Details...)
	}
}

func authBy(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// Action is a tool call in readable form: the tool's name and its
// command, path or URL when its input has one.
func Action(tool string, input any) string {
	if a := actionOf(input); a != "" {
		return tool + ": " + a
	}
	return tool
}

// actionOf is a tool input in readable form: the command, path or URL when
// it has one.
func actionOf(in any) string {
	if m, ok := in.(map[string]any); ok {
		for _, k := range []string{"command", "cmd", "file_path", "path", "url", "query", "pattern"} {
			if s, ok := m[k].(string); ok && s != "" {
				return s
			}
		}
	}
	return textOf(in)
}

// textOf is a value as text: a string as it is, anything else as JSON.
func textOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func gist(m map[string]any) string {
	for _, k := range []string{"resolution", "reason", "delegated_task", "content", "server_uri", "result", "detail", "note", "source"} {
		if s := textOf(m[k]); s != "" {
			return k + ": " + s
		}
	}
	return ""
}

// changes says what folding an envelope changed in taint and data classes.
func changes(before, after reducer.Snapshot) []string {
	var out []string
	if after.IsTainted && !before.IsTainted {
		out = append(out, "session tainted ("+strings.Join(after.TaintKinds, ", ")+")")
	} else if added := added(before.TaintKinds, after.TaintKinds); len(added) > 0 {
		out = append(out, "taint: + "+strings.Join(added, ", "))
	}
	if added := added(before.DataClasses, after.DataClasses); len(added) > 0 {
		out = append(out, "data classes: + "+strings.Join(added, ", "))
	}
	if after.LoopViolation != "" && before.LoopViolation == "" {
		out = append(out, "loop: "+after.LoopViolation)
	}
	return out
}

func added(before, after []string) []string {
	var out []string
	for _, s := range after {
		if !slices.Contains(before, s) {
			out = append(out, s)
		}
	}
	return out
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") }
