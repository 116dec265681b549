package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentledger/agentledger/aarts"
	"github.com/agentledger/agentledger/ledger"
)

// ServeStdio speaks the AARTS subprocess model on in and out: the first
// line must be the version check ({"aarts_version": "0.1"}, answered like
// POST /v1/version); after it every line is a hook event, answered with one
// line (a HookResponse), or a resolution ({"pending_id", "resolution"}),
// answered with the Resolution. A line that cannot be decided gets
// {"error": "..."} and the session goes on. It returns at the end of in.
func ServeStdio(ctx context.Context, e *Engine, tenant string, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), ledger.DefaultMaxBytes+4096)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	first := true
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if first {
			var v struct {
				AARTSVersion string `json:"aarts_version"`
				HookPoint    string `json:"hook_point"`
			}
			if err := json.Unmarshal([]byte(line), &v); err != nil || v.AARTSVersion == "" || v.HookPoint != "" {
				_ = enc.Encode(apiError{Error: fmt.Sprintf(`line %d: the first line must be the version check {"aarts_version": %q}`, n, aarts.Version)})
				return errors.New("stdio: no version check")
			}
			if err := enc.Encode(versionAnswer(v.AARTSVersion)); err != nil {
				return err
			}
			first = false
			continue
		}
		var probe struct {
			PendingID  string `json:"pending_id"`
			Resolution string `json:"resolution"`
			By         string `json:"by"`
		}
		_ = json.Unmarshal([]byte(line), &probe)
		var answer any
		if probe.PendingID != "" {
			r, err := e.Resolve(ctx, tenant, probe.PendingID, probe.Resolution, probe.By)
			if err != nil {
				answer = apiError{Error: fmt.Sprintf("line %d: %v", n, err)}
			} else {
				answer = r
			}
		} else if step, err := e.Decide(ctx, tenant, []byte(line)); err != nil {
			answer = apiError{Error: fmt.Sprintf("line %d: %v", n, err)}
		} else {
			answer = ResponseOf(step)
		}
		if err := enc.Encode(answer); err != nil {
			return err
		}
	}
	return sc.Err()
}

// versionAnswer answers an AARTS version check.
func versionAnswer(requested string) map[string]any {
	major, _, _ := strings.Cut(requested, ".")
	want, _, _ := strings.Cut(aarts.Version, ".")
	return map[string]any{"compatible": major == want && requested <= aarts.Version, "engine_id": ID, "engine_version": Version}
}
