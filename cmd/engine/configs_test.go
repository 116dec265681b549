package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/ledger/store"
)

// oneEngineConfigs are two hooks' configurations on one data directory:
// two tenants, two manifests. `git log` tells them apart: the
// coding-agent manifest explicitly allows it (shell(git *)), the built-in
// one leaves it to Claude Code (no decision).
var oneEngineConfigs = []struct {
	tenant string
	args   []string
	want   string // permissionDecision of git log
}{
	{"acme", []string{"--tenant", "acme", "--manifest", "../../fixtures/manifests/coding-agent.json"}, "allow"},
	{"beta", []string{"--tenant", "beta"}, ""},
}

// call is one hook process of a run: its input, and what it answered.
type call struct {
	tenant, turn, input, out string
	failed                   bool // answered by the failure policy
}

// fireConfigs runs perConfig hooks of every configuration at once, and
// calls during (if set) once `after` of them have answered.
func fireConfigs(t *testing.T, bin, data string, run, perConfig, after int, during func()) []*call {
	t.Helper()
	var calls []*call
	for ci, c := range oneEngineConfigs {
		for i := range perConfig {
			turn := fmt.Sprintf("toolu_%s_%d_%d", c.tenant, run, i)
			in := ccSession(fmt.Sprintf("cfg-%s-%d", c.tenant, i%4), "PreToolUse", fmt.Sprintf(`,"tool_name":"Bash","tool_input":{"command":"git log -n %d"},"tool_use_id":"%s"`, run*100+i+1, turn))
			calls = append(calls, &call{tenant: oneEngineConfigs[ci].tenant, turn: turn, input: in})
		}
	}
	var answered atomic.Int32
	var once sync.Once
	var wg sync.WaitGroup
	for _, cl := range calls {
		args := oneEngineConfigs[0].args
		if cl.tenant == "beta" {
			args = oneEngineConfigs[1].args
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := hookCmd(bin, data, cl.input, args...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				cl.out = "exit " + err.Error() + ": " + errb.String()
			} else {
				cl.out = out.String()
				cl.failed = strings.Contains(errb.String(), "no engine could decide")
			}
			if int(answered.Add(1)) == after && during != nil {
				once.Do(during)
			}
		}()
	}
	wg.Wait()
	return calls
}

// checkOnRecord checks that every call's answer is on the data
// directory's record: a verdict of its turn, in its own tenant, with the
// host answer its configuration gives; or, for a call the failure policy
// answered, an EngineFailure holding its input's digest.
func checkOnRecord(t *testing.T, data string, calls []*call) {
	t.Helper()
	envs := recorded(t, data)
	verdicts := map[string]string{} // tenant/turn -> host_answer
	failures := map[string]bool{}   // tenant/sha256 of the input
	for i, e := range envs {
		switch e.EventType() {
		case "PreToolUse":
			var ev struct {
				TurnID string `json:"turn_id"`
			}
			json.Unmarshal(e.Payload(), &ev)
			if i+1 < len(envs) && envs[i+1].EventType() == ledger.EventVerdict && envs[i+1].Key() == e.Key() {
				var v struct {
					HostAnswer string `json:"host_answer"`
				}
				json.Unmarshal(envs[i+1].Payload(), &v)
				verdicts[e.Key().Tenant+"/"+ev.TurnID] = v.HostAnswer
			}
		case ledger.EventEngineFailure:
			var f struct {
				Event struct {
					SHA256 string `json:"sha256"`
				} `json:"event"`
			}
			json.Unmarshal(e.Payload(), &f)
			failures[e.Key().Tenant+"/"+f.Event.SHA256] = true
		}
	}
	for _, c := range calls {
		sum := sha256.Sum256([]byte(c.input))
		switch {
		case c.failed:
			if !failures[c.tenant+"/"+hex.EncodeToString(sum[:])] {
				t.Errorf("%s %s: answered by the failure policy, but no EngineFailure with its digest is on record", c.tenant, c.turn)
			}
		default:
			want := "none"
			if c.tenant == "acme" {
				want = "allow"
			}
			if got, ok := verdicts[c.tenant+"/"+c.turn]; !ok || got != want {
				t.Errorf("%s %s: verdict on record %q (found %v), want host answer %q", c.tenant, c.turn, got, ok, want)
			}
		}
	}
}

// TestOneEngineServesEveryConfiguration: hooks of two tenants with two
// manifests, 32 of each at once, three runs, on one data directory: one
// local engine decides every call under the hook's own configuration and
// records it in the hook's tenant; no engine is stopped for another's
// configuration, so no call is left to the failure policy.
func TestOneEngineServesEveryConfiguration(t *testing.T) {
	bin := buildEngine(t)
	data := t.TempDir()
	t.Cleanup(func() { stopLocalEngine(t, data) })
	var all []*call
	for run := range 3 {
		calls := fireConfigs(t, bin, data, run, 32, 0, nil)
		for _, c := range calls {
			want := oneEngineConfigs[0].want
			if c.tenant == "beta" {
				want = oneEngineConfigs[1].want
			}
			if c.failed || decisionOf(t, c.out) != want {
				t.Errorf("run %d %s %s: answered %q (failure policy %v), want permissionDecision %q", run, c.tenant, c.turn, c.out, c.failed, want)
			}
		}
		all = append(all, calls...)
	}
	stopLocalEngine(t, data)
	checkOnRecord(t, data, all)
}

// TestEveryAnswerOnRecordAfterKill: the same, with the engine SIGKILLed
// while the hooks run: calls in flight are answered by the failure policy
// and spooled, later ones start a new engine; after the next start every
// answer is on record.
func TestEveryAnswerOnRecordAfterKill(t *testing.T) {
	bin := buildEngine(t)
	data := t.TempDir()
	t.Cleanup(func() { stopLocalEngine(t, data) })
	runHook(t, bin, data, ccInput("SessionStart", `,"source":"startup"`)) // the engine is up
	kill := func() {
		if pid := store.ReadHolder(data).PID; pid != 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	calls := fireConfigs(t, bin, data, 0, 32, 12, kill)
	failed := 0
	for _, c := range calls {
		if strings.HasPrefix(c.out, "exit") {
			t.Errorf("%s %s: %s", c.tenant, c.turn, c.out)
		}
		if c.failed {
			failed++
		}
	}
	t.Logf("%d of %d calls answered by the failure policy around the kill", failed, len(calls))
	stopLocalEngine(t, data)
	runHook(t, bin, data, ccInput("SessionStart", `,"source":"resume"`)) // the next engine drains the spool at its start
	stopLocalEngine(t, data)
	checkOnRecord(t, data, calls)
}
