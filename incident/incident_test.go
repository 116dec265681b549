package incident

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/seal"
)

// vectors reads the default/vectors session of the format vectors: every
// record type, in order.
func vectors(t *testing.T, edit func(seq int, line []byte) []byte) Input {
	t.Helper()
	f, err := os.Open("../fixtures/vectors/formats/records.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := Input{Key: ledger.SessionKey{Tenant: "default", Session: "vectors"}}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		line := bytes.Clone(sc.Bytes())
		if !bytes.Contains(line, []byte(`"session_id":"vectors","tenant_id":"default"`)) && !bytes.Contains(line, []byte(`"tenant_id":"default"`)) {
			continue
		}
		if edit != nil {
			line = edit(len(in.Records), line)
		}
		e, err := ledger.Decode(line, ledger.Limits{})
		if err != nil {
			in.Records = append(in.Records, Record{Raw: line, Unreadable: err.Error()})
			continue
		}
		in.Records = append(in.Records, Record{Raw: line, Env: e, Shown: seal.Render(e.Payload())})
	}
	return in
}

func TestEveryRecordKindIsShown(t *testing.T) {
	v := Build(vectors(t, nil))
	if v.Chain.State != "ok" {
		t.Fatalf("chain %+v %v", v.Chain, v.Faults)
	}
	kinds := map[string]int{}
	for _, r := range v.Rows {
		kinds[r.Kind]++
	}
	for _, k := range []string{"rejected", "resolution", "failure", "verdict", "action"} {
		if kinds[k] == 0 {
			t.Errorf("no %s row: %v", k, kinds)
		}
	}
	if v.Receipts.State != "unknown" || !strings.Contains(v.Receipts.Detail, "not checked") {
		t.Errorf("receipts without a key: %+v", v.Receipts)
	}
	for _, r := range v.Rows {
		if r.Kind == "verdict" && strings.Contains(r.Payload, `"receipt"`) && r.Receipt != "not checked" {
			t.Errorf("seq %d: receipt %q", r.Seq, r.Receipt)
		}
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, v); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), `<tr id="seq-`); n != len(v.Rows) {
		t.Errorf("%d rows written, want %d", n, len(v.Rows))
	}
}

// TestATamperedRecordIsShownAsSuch edits one verdict's decision: the chain fails and
// the row says where.
func TestATamperedRecordIsShownAsSuch(t *testing.T) {
	in := vectors(t, func(seq int, line []byte) []byte {
		if seq != 3 {
			return line
		}
		for _, d := range [][2]string{{`"decision":"allow"`, `"decision":"deny"`}, {`"decision":"deny"`, `"decision":"allow"`}} {
			if bytes.Contains(line, []byte(d[0])) {
				return bytes.Replace(line, []byte(d[0]), []byte(d[1]), 1)
			}
		}
		t.Fatalf("seq 3 is no verdict: %s", line)
		return nil
	})
	v := Build(in)
	if v.Chain.State != "failed" {
		t.Fatalf("a tampered chain shows %+v", v.Chain)
	}
	faulty := 0
	for _, r := range v.Rows {
		if r.Fault != "" {
			faulty++
		}
	}
	if faulty == 0 {
		t.Fatalf("no row names the fault: %v", v.Faults)
	}
}

// TestASecretAtTheCutIsRedacted: a token that straddles where the summary
// is cut is redacted whole first, so no part of it is shown.
func TestASecretAtTheCutIsRedacted(t *testing.T) {
	token := "ghp_" + strings.Repeat("R7dKq2", 6) + "sP2a"
	payload := `{"hook_point":"PreToolUse","tool_name":"shell","tool_name_native":"Bash","tool_input":{"command":"echo ` + strings.Repeat("x", 360) + ` ` + token + `"}}`
	e, err := ledger.Seal(ledger.Head{}, ledger.Event{TenantID: "default", SessionID: "cut", EventType: "PreToolUse", TsUnixMs: 1, Payload: []byte(payload)}, ledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	v := Build(Input{Key: e.Key(), Records: []Record{{Raw: e.Bytes(), Env: e, Shown: e.Payload()}}})
	var b bytes.Buffer
	if err := WriteHTML(&b, v); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), token[:20]) {
		t.Fatalf("part of the token is on the page: %s", v.Rows[0].Summary)
	}
}
