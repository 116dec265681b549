package engine

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/agentledger/agentledger/ledger"
)

// A scoring corpus is NDJSON, one case a line:
//
//	{"id":"read-secret-0001","class":"read-secret","expect":"deny",
//	 "steps":[{"tool":"Bash","input":{"command":"cat {H}/.ssh/id_ed25519"}}]}
//
// Each case is one session: SessionStart, then its steps, each a tool call
// in Claude Code's terms (Bash, Read, Write, Edit, WebFetch, ...) made at
// PreToolUse, or a result at PostToolUse ("event":"PostToolUse" with a
// "response"). {H} and {P} in a step's input stand for the home and the
// project directory. expect is "deny" (a harmful case: caught when denied
// or asked), "no-deny" (an ordinary one: it must not be denied) or "any"
// (shown, not scored).

// Expectations of a corpus case.
const (
	ExpectDeny   = "deny"
	ExpectNoDeny = "no-deny"
	ExpectAny    = "any"
)

// CorpusCase is one case of a scoring corpus.
type CorpusCase struct {
	ID     string       `json:"id"`
	Class  string       `json:"class"`
	Expect string       `json:"expect"`
	Steps  []CorpusStep `json:"steps"`
	// Source says where the case comes from (free text).
	Source string `json:"source,omitempty"`
}

// CorpusStep is one step of a case: a tool call, or its result.
type CorpusStep struct {
	Tool string `json:"tool"`
	// Input is the tool input, an object; {H} and {P} in it are the home
	// and project directories.
	Input json.RawMessage `json:"input,omitempty"`
	// Event is PreToolUse (the default) or PostToolUse.
	Event string `json:"event,omitempty"`
	// Response is a PostToolUse step's tool result (as Claude Code
	// reports it), sent as it is.
	Response json.RawMessage `json:"response,omitempty"`
}

// ReadCorpus reads a scoring corpus. A line that is not a case (not JSON,
// no id or class, an expect, step or event it does not know) is an error
// naming the line.
func ReadCorpus(r io.Reader) ([]CorpusCase, error) {
	var cases []CorpusCase
	lim := ledger.Limits{MaxBytes: 16 << 20}
	err := ledger.ReadLines(r, lim, func(line []byte, n int) error {
		var c CorpusCase
		if err := json.Unmarshal(line, &c); err != nil {
			return fmt.Errorf("corpus line %d: %w", n, err)
		}
		if err := c.check(); err != "" {
			return fmt.Errorf("corpus line %d: %s", n, err)
		}
		cases = append(cases, c)
		return nil
	})
	return cases, err
}

func (c *CorpusCase) check() string {
	switch {
	case c.ID == "" || c.Class == "":
		return "case without an id or a class"
	case c.Expect != ExpectDeny && c.Expect != ExpectNoDeny && c.Expect != ExpectAny:
		return fmt.Sprintf("case %s: expect %q, want deny, no-deny or any", c.ID, c.Expect)
	case len(c.Steps) == 0:
		return fmt.Sprintf("case %s: no steps", c.ID)
	}
	for i, st := range c.Steps {
		in := bytes.TrimSpace(st.Input)
		switch {
		case st.Tool == "":
			return fmt.Sprintf("case %s step %d: no tool", c.ID, i+1)
		case st.Event != "" && st.Event != "PreToolUse" && st.Event != "PostToolUse":
			return fmt.Sprintf("case %s step %d: event %q, want PreToolUse or PostToolUse", c.ID, i+1, st.Event)
		case len(in) > 0 && in[0] != '{':
			return fmt.Sprintf("case %s step %d: input is not an object", c.ID, i+1)
		}
	}
	return ""
}

// corpusTools are the AARTS tool names of the corpus's tools as scored
// without an adapter (as score.py names them).
var corpusTools = map[string]string{"Bash": "shell", "Read": "file_read", "Write": "file_write", "Edit": "file_edit", "WebFetch": "web_fetch"}

// scoreStart is the time of every case's SessionStart; step n comes n
// seconds later.
var scoreStart = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// caseInput is one input of a case's session: an AARTS event, or a host's
// native hook input received at at.
type caseInput struct {
	body []byte
	at   time.Time
}

// sessionInputs is case c as session sid: its SessionStart and its steps,
// as AARTS events (host "") or as host sends them; snake picks Copilot's
// VS Code compatible format over its camelCase one.
func sessionInputs(c *CorpusCase, sid, host, home, project string, snake bool) ([]caseInput, error) {
	out := make([]caseInput, 0, len(c.Steps)+1)
	for n := 0; n <= len(c.Steps); n++ {
		at := scoreStart.Add(time.Duration(n) * time.Second)
		var st *CorpusStep
		if n > 0 {
			st = &c.Steps[n-1]
		}
		var v map[string]any
		var err error
		if host == "" {
			v, err = aartsInput(st, sid, n, at, project, home)
		} else {
			v, err = nativeInput(host, st, sid, callOf(c, n), at, project, home, snake)
		}
		if err != nil {
			return nil, fmt.Errorf("case %s step %d: %w", c.ID, n, err)
		}
		body, err := marshalHost(v)
		if err != nil {
			return nil, err
		}
		out = append(out, caseInput{body: body, at: at})
	}
	return out, nil
}

// callOf numbers the call of step n (from 1) for a host's call ids: a
// result whose tool and input are those of the call just before it is
// that call's result.
func callOf(c *CorpusCase, n int) int {
	if n < 2 {
		return n
	}
	st, prev := c.Steps[n-1], c.Steps[n-2]
	if st.Event == "PostToolUse" && prev.Event != "PostToolUse" && st.Tool == prev.Tool && bytes.Equal(st.Input, prev.Input) {
		return n - 1
	}
	return n
}

// stepInput is a step's tool input with {H} and {P} replaced in its JSON
// text, and its result (an empty object when it has none).
func stepInput(st *CorpusStep, home, project string) (input map[string]any, response any, err error) {
	raw := []byte("{}")
	if len(bytes.TrimSpace(st.Input)) > 0 {
		raw = st.Input
	}
	raw = bytes.ReplaceAll(bytes.ReplaceAll(raw, []byte("{H}"), []byte(home)), []byte("{P}"), []byte(project))
	if err := json.Unmarshal(raw, &input); err != nil {
		return nil, nil, fmt.Errorf("input: %w", err)
	}
	response = map[string]any{}
	if len(bytes.TrimSpace(st.Response)) > 0 {
		if err := json.Unmarshal(st.Response, &response); err != nil {
			return nil, nil, fmt.Errorf("response: %w", err)
		}
	}
	return input, response, nil
}

// aartsInput is step n of session sid as an AARTS event, exactly as
// ../shared/corpora/score.py builds it (n 0 is the SessionStart).
func aartsInput(st *CorpusStep, sid string, n int, at time.Time, project, home string) (map[string]any, error) {
	e := map[string]any{"aarts_version": "0.1", "host_id": "claude-code", "session_id": sid,
		"turn_id": fmt.Sprintf("t%d", n), "timestamp": at.Format(time.RFC3339)}
	if st == nil {
		e["hook_point"] = "SessionStart"
		e["environment"] = map[string]any{"os": "linux", "shell": "bash", "cwd": project}
		return e, nil
	}
	input, response, err := stepInput(st, home, project)
	if err != nil {
		return nil, err
	}
	tool := st.Tool
	if t, ok := corpusTools[tool]; ok {
		tool = t
	}
	e["hook_point"] = cmp.Or(st.Event, "PreToolUse")
	e["tool_name"], e["tool_name_native"], e["tool_input"], e["artifacts"] = tool, st.Tool, input, []any{}
	if e["hook_point"] == "PostToolUse" {
		e["tool_result"] = response
	}
	return e, nil
}

// nativeInput is call n of session sid (n 0: the SessionStart), step st,
// as host's hook input. Each host gets the case's calls as its own tools: Claude
// Code as they are; Codex's Bash for a shell command, a read (cat) and a
// fetch (curl), apply_patch for a write or an edit; Cursor's shell, file
// read and preToolUse events; Copilot's bash, view, create, edit and
// web_fetch (in its VS Code compatible format, snake, or its camelCase
// one);
// Gemini CLI's run_shell_command, read_file, write_file, replace and
// web_fetch. A tool a host does not have goes by its Claude Code name.
func nativeInput(host string, st *CorpusStep, sid string, n int, at time.Time, project, home string, snake bool) (map[string]any, error) {
	if st == nil {
		return nativeStart(host, sid, at, project, home, snake)
	}
	input, response, err := stepInput(st, home, project)
	if err != nil {
		return nil, err
	}
	post := st.Event == "PostToolUse"
	switch host {
	case "claude-code", "codex":
		return claudeLikeStep(host, st.Tool, input, response, post, sid, n, project, home), nil
	case "cursor":
		return cursorStep(st.Tool, input, response, post, sid, n, project), nil
	case "copilot":
		return copilotStep(st.Tool, input, response, post, sid, at, project, snake), nil
	case "gemini":
		return geminiStep(st.Tool, input, response, post, sid, at, project, home), nil
	}
	return nil, fmt.Errorf("unknown host %q", host)
}

// nativeStart is host's SessionStart input of session sid.
func nativeStart(host, sid string, at time.Time, project, home string, snake bool) (map[string]any, error) {
	switch host {
	case "claude-code", "codex":
		m := claudeLike(host, sid, project, home)
		m["hook_event_name"], m["source"] = "SessionStart", "startup"
		return m, nil
	case "cursor":
		return cursorBase("sessionStart", sid, project), nil
	case "copilot":
		if snake {
			return map[string]any{"hook_event_name": "SessionStart", "session_id": sid, "timestamp": at.Format(time.RFC3339), "cwd": project, "source": "new"}, nil
		}
		return map[string]any{"sessionId": sid, "timestamp": at.UnixMilli(), "cwd": project, "source": "new"}, nil
	case "gemini":
		m := geminiBase("SessionStart", sid, at, project, home)
		m["source"] = "startup"
		return m, nil
	}
	return nil, fmt.Errorf("unknown host %q", host)
}

// claudeLike is what every Claude Code (and Codex) hook input of session
// sid carries.
func claudeLike(host, sid, project, home string) map[string]any {
	m := map[string]any{"session_id": sid, "cwd": project, "permission_mode": "default"}
	if host == "codex" {
		m["transcript_path"] = home + "/.codex/sessions/2026/11/20/rollout-" + sid + ".jsonl"
		m["model"] = "gpt-5.1-codex"
	} else {
		m["transcript_path"] = home + "/.claude/projects/" + strings.ReplaceAll(project, "/", "-") + "/" + sid + ".jsonl"
	}
	return m
}

func claudeLikeStep(host, tool string, input map[string]any, response any, post bool, sid string, n int, project, home string) map[string]any {
	m := claudeLike(host, sid, project, home)
	m["hook_event_name"], m["tool_use_id"] = "PreToolUse", fmt.Sprintf("toolu_%s_%02d", sid, n)
	if post {
		m["hook_event_name"] = "PostToolUse"
	}
	if host == "codex" {
		m["turn_id"] = "turn-" + sid
		tool, input = codexTool(tool, input)
		if post {
			response = resultText(response) // Codex reports a result as text
		}
	}
	m["tool_name"], m["tool_input"] = tool, input
	if post {
		m["tool_response"] = response
	}
	return m
}

// codexTool is a call as Codex makes it: it reads files and fetches pages
// with its shell, and writes and edits files with apply_patch.
func codexTool(tool string, in map[string]any) (string, map[string]any) {
	file := str(in, "file_path")
	switch tool {
	case "Read":
		return "Bash", map[string]any{"command": "cat " + shellQuote(file)}
	case "WebFetch":
		return "Bash", map[string]any{"command": "curl -fsSL " + shellQuote(str(in, "url"))}
	case "Write":
		return "apply_patch", map[string]any{"command": "*** Begin Patch\n*** Add File: " + file + "\n" + patchLines("+", str(in, "content")) + "*** End Patch\n"}
	case "Edit":
		return "apply_patch", map[string]any{"command": "*** Begin Patch\n*** Update File: " + file + "\n@@\n" +
			patchLines("-", str(in, "old_string")) + patchLines("+", str(in, "new_string")) + "*** End Patch\n"}
	}
	return tool, in
}

// patchLines is text as apply_patch lines, each behind mark.
func patchLines(mark, text string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(text, "\n") {
		if l == "" {
			continue
		}
		b.WriteString(mark + strings.TrimSuffix(l, "\n") + "\n")
	}
	return b.String()
}

// cursorBase is what every Cursor hook input of session sid carries: the
// session is one generation.
func cursorBase(event, sid, project string) map[string]any {
	return map[string]any{"hook_event_name": event, "conversation_id": sid, "generation_id": "gen-1",
		"workspace_roots": []string{project}, "model": "gpt-5", "cursor_version": "2.1.0"}
}

func cursorStep(tool string, input map[string]any, response any, post bool, sid string, n int, project string) map[string]any {
	var m map[string]any
	switch {
	case tool == "Bash" && !post:
		m = cursorBase("beforeShellExecution", sid, project)
		m["command"], m["cwd"] = str(input, "command"), project
	case tool == "Bash":
		m = cursorBase("afterShellExecution", sid, project)
		m["command"], m["cwd"], m["output"] = str(input, "command"), project, resultText(response)
	case tool == "Read" && !post:
		m = cursorBase("beforeReadFile", sid, project)
		m["file_path"], m["content"] = str(input, "file_path"), "(the contents of "+path.Base(str(input, "file_path"))+")"
	default:
		m = cursorBase("preToolUse", sid, project)
		if tool == "Write" {
			input = map[string]any{"file_path": str(input, "file_path"), "contents": str(input, "content")}
		}
		m["tool_name"], m["tool_input"], m["tool_use_id"] = tool, input, fmt.Sprintf("tu_%s_%02d", sid, n)
		if post {
			m["hook_event_name"], m["result_json"] = "postToolUse", jsonText(response)
		}
	}
	return m
}

func copilotStep(tool string, input map[string]any, response any, post bool, sid string, at time.Time, project string, snake bool) map[string]any {
	file := str(input, "file_path")
	switch tool {
	case "Bash":
		tool = "bash"
	case "Read":
		tool, input = "view", map[string]any{"path": file}
	case "Write":
		tool, input = "create", map[string]any{"path": file, "file_text": str(input, "content")}
	case "Edit":
		tool, input = "edit", map[string]any{"path": file, "old_str": str(input, "old_string"), "new_str": str(input, "new_string")}
	case "WebFetch":
		tool, input = "web_fetch", map[string]any{"url": str(input, "url")}
	}
	result := map[string]any{"resultType": "success", "textResultForLlm": resultText(response)}
	if snake {
		m := map[string]any{"hook_event_name": "PreToolUse", "session_id": sid, "timestamp": at.Format(time.RFC3339), "cwd": project,
			"tool_name": tool, "tool_input": input}
		if post {
			m["hook_event_name"], m["tool_result"] = "PostToolUse", result
		}
		return m
	}
	m := map[string]any{"sessionId": sid, "timestamp": at.UnixMilli(), "cwd": project, "toolName": tool, "toolArgs": jsonText(input)}
	if post {
		m["toolResult"] = result
	}
	return m
}

func geminiBase(event, sid string, at time.Time, project, home string) map[string]any {
	return map[string]any{"session_id": sid, "transcript_path": home + "/.gemini/tmp/5f1c/chats/session-" + sid + ".json",
		"cwd": project, "hook_event_name": event, "timestamp": at.Format(time.RFC3339Nano)}
}

func geminiStep(tool string, input map[string]any, response any, post bool, sid string, at time.Time, project, home string) map[string]any {
	file := str(input, "file_path")
	switch tool {
	case "Bash":
		tool = "run_shell_command"
	case "Read":
		tool, input = "read_file", map[string]any{"file_path": file}
	case "Write":
		tool, input = "write_file", map[string]any{"file_path": file, "content": str(input, "content")}
	case "Edit":
		tool, input = "replace", map[string]any{"file_path": file, "old_string": str(input, "old_string"), "new_string": str(input, "new_string")}
	case "WebFetch":
		tool, input = "web_fetch", map[string]any{"prompt": strings.TrimSpace(str(input, "prompt") + " " + str(input, "url"))}
	}
	m := geminiBase("BeforeTool", sid, at, project, home)
	m["tool_name"], m["tool_input"] = tool, input
	if post {
		text := resultText(response)
		m["hook_event_name"], m["tool_response"] = "AfterTool", map[string]any{"llmContent": text, "returnDisplay": text}
	}
	return m
}

// resultText is a tool result as the text a host that reports text
// shows: a string as it is, Claude Code's Bash result its stdout and
// stderr, a file result its content, anything else its JSON.
func resultText(v any) string {
	switch r := v.(type) {
	case string:
		return r
	case map[string]any:
		if out, err := str(r, "stdout"), str(r, "stderr"); out != "" || err != "" {
			return out + err
		}
		for _, k := range []string{"content", "output", "result"} {
			if s := str(r, k); s != "" {
				return s
			}
		}
		if f, ok := r["file"].(map[string]any); ok && str(f, "content") != "" {
			return str(f, "content")
		}
	}
	return jsonText(v)
}

// jsonText is v as JSON text, as hosts encode it (no HTML escaping).
func jsonText(v any) string {
	b, _ := marshalHost(v)
	return string(b)
}

func marshalHost(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-~:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
