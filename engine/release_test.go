package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/decide"
	"github.com/agentledger/agentledger/reducer"
)

// TestApprovalReleasesTheActionOnce (AARM R4.3): Codex cannot prompt at
// PreToolUse, so an ask is answered deny, naming the approval it waits
// for. The host polls GET /v1/pending/{id}; an approver approves the
// asked action; the poll returns approved. The agent sends the same call
// again (a new tool_use_id): it is allowed once, recorded as the approved
// one (APPROVED, released_by the Resolution's seq); a third time it is
// asked again. Another action, and an ask an approver denied, are never
// released.
func TestApprovalReleasesTheActionOnce(t *testing.T) {
	srv, _ := aarmServer(t)
	codex := func(id, command string) HookResponse {
		t.Helper()
		body := `{"session_id":"release","turn_id":"turn-1","transcript_path":null,"cwd":"/workspace/shop","hook_event_name":"PreToolUse","model":"gpt-5","permission_mode":"default","tool_name":"Bash","tool_input":{"command":` + fmt.Sprintf("%q", command) + `},"tool_use_id":"` + id + `"}`
		code, out := call(t, srv, "POST", "/v1/hooks/codex", "host-acme", []byte(body))
		var r HookResponse
		if code != 200 || json.Unmarshal(out, &r) != nil {
			t.Fatalf("codex hook: %d %s", code, out)
		}
		return r
	}
	poll := func(token, id, wait string) (int, PendingStatus) {
		t.Helper()
		code, out := call(t, srv, "GET", "/v1/pending/"+id+"?wait="+wait, token, nil)
		var st PendingStatus
		_ = json.Unmarshal(out, &st)
		return code, st
	}
	resolve := func(id, resolution, action string) Resolution {
		t.Helper()
		body, _ := json.Marshal(ResolutionRequest{PendingID: id, Resolution: resolution, ActionSHA256: action})
		code, out := call(t, srv, "POST", "/v1/resolutions", "approver-acme", body)
		var res Resolution
		if code != 200 || json.Unmarshal(out, &res) != nil {
			t.Fatalf("resolve %s: %d %s", resolution, code, out)
		}
		return res
	}

	asked := codex("call_1", "rm -rf build")
	if asked.Decision != aarts.Ask || asked.HostAnswer != aarts.Deny || asked.PendingID == "" ||
		!strings.Contains(string(asked.HostOutput), asked.PendingID) || !strings.Contains(string(asked.HostOutput), `"permissionDecision":"deny"`) {
		t.Fatalf("rm -rf build: %s host %s pending %q, answer %s", asked.Decision, asked.HostAnswer, asked.PendingID, asked.HostOutput)
	}
	if code, st := poll("host-acme", asked.PendingID, "0s"); code != 200 || st.Status != "open" || st.ActionSHA256 == "" {
		t.Fatalf("poll before approval: %d %+v", code, st)
	}
	if code, _ := poll("host-beta", asked.PendingID, "0s"); code != 404 {
		t.Errorf("another tenant's host polls the approval: %d, want 404", code)
	}
	other := codex("call_2", "rm -rf dist")
	if other.PendingID == "" {
		t.Fatalf("rm -rf dist: %+v", other)
	}
	done := make(chan PendingStatus)
	go func() {
		_, st := poll("host-acme", asked.PendingID, "20s")
		done <- st
	}()
	res := resolve(asked.PendingID, "approved", mustStatus(t, poll, asked.PendingID).ActionSHA256)
	if st := <-done; st.Status != "approved" || st.Seq != res.Seq || st.ReleasedUntilUnixMs != res.AtMs+reducer.ReleaseTTLMs {
		t.Fatalf("long poll: %+v, want approved at seq %d", st, res.Seq)
	}
	resolve(other.PendingID, "denied", mustStatus(t, poll, other.PendingID).ActionSHA256)

	again := codex("call_3", "rm -rf build")
	if again.Decision != aarts.Allow || again.ReasonCode != decide.ReasonApproved || again.HostAnswer != aarts.Allow {
		t.Fatalf("the approved call sent again: %s %s host %s %v", again.Decision, again.ReasonCode, again.HostAnswer, again.Reasons)
	}
	if r := codex("call_4", "rm -rf build"); r.Decision != aarts.Ask {
		t.Errorf("the approved call a second time: %s %s, want asked again", r.Decision, r.ReasonCode)
	}
	if r := codex("call_5", "rm -rf dist"); r.Decision != aarts.Ask {
		t.Errorf("the denied call sent again: %s %s, want asked again", r.Decision, r.ReasonCode)
	}
	code, body := call(t, srv, "GET", "/v1/sessions/release/verify", "host-acme", nil)
	if code != 200 || !strings.Contains(string(body), `"faults":[]`) || !strings.Contains(string(body), `"mode":"deep"`) {
		t.Fatalf("verify: %d %s", code, body)
	}
	code, body = call(t, srv, "GET", "/v1/sessions/release/snapshot", "host-acme", nil)
	var snap reducer.Snapshot
	if code != 200 || json.Unmarshal(body, &snap) != nil || len(snap.Released) != 0 {
		t.Errorf("snapshot after the release: %d released %+v", code, snap.Released)
	}
}

// mustStatus is an approval's status, now.
func mustStatus(t *testing.T, poll func(token, id, wait string) (int, PendingStatus), id string) PendingStatus {
	t.Helper()
	code, st := poll("approver-acme", id, "0s")
	if code != 200 {
		t.Fatalf("poll %s: %d", id, code)
	}
	return st
}
