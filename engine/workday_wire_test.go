package engine

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A workday step as each host sends it: the hook inputs of its prompt,
// its call and the call's result, or the end of a turn, in the host's
// own event names, tool names and result shapes.
//
//   - Claude Code: every tool by its own name; a failed command's result is
//     PostToolUseFailure.
//   - Codex CLI: Claude Code's shape with turn_id; reads, searches and
//     listings are shell commands (sed, rg), writes and edits apply_patch;
//     it has no hooked web fetch, web search or plan tool, so those steps
//     are not sent.
//   - Cursor: shell commands as before/afterShellExecution, reads as
//     beforeReadFile (with the content), writes as preToolUse Write and
//     afterFileEdit, edits as afterFileEdit, MCP tools as before/
//     afterMCPExecution, Grep and WebFetch as pre/postToolUse; no glob,
//     web search or plan hook.
//   - Copilot CLI: its tools (bash, view, create, edit, grep, glob,
//     web_fetch, <server>-<tool>), in its camelCase format for even
//     sessions and its VS Code compatible format for odd ones; no web
//     search or plan tool.
//   - Gemini CLI: its tools (run_shell_command, read_file, write_file,
//     replace, search_file_content, glob, web_fetch with the URL in its
//     prompt, google_web_search, write_todos, MCP tools with mcp_context).

// workdayEventKind says what a hook input reports.
type workdayEventKind int

const (
	workdayPre   workdayEventKind = iota // a call, before it runs
	workdayPost                          // a call's result
	workdayOther                         // a prompt, the end of a turn, the session's start or end
)

// workdayEvent is one hook input of a host.
type workdayEvent struct {
	name string // the host's event (and tool), for messages
	kind workdayEventKind
	body []byte
}

// workdayWire renders one session's steps as one host sends them.
type workdayWire struct {
	t       *testing.T
	host    string
	s       *workdaySession
	session string
	turn    int    // prompts so far
	prompt  string // the latest prompt
}

// newWorkdayWire renders session s for host; its session id is the
// host's and the session's.
func newWorkdayWire(t *testing.T, host string, s *workdaySession) *workdayWire {
	return &workdayWire{t: t, host: host, s: s, session: "wd-" + host + "-" + s.Name}
}

// mode is the session's permission mode, as Claude Code and Codex name it.
func (w *workdayWire) mode() string {
	if w.s.Mode != "" {
		return w.s.Mode
	}
	return "default"
}

// at is when the host stamps the input of a session's line.
func (w *workdayWire) at(line int) time.Time {
	return time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC).Add(time.Duration(w.s.index)*time.Hour + time.Duration(line)*20*time.Second)
}

// ev is the hook input m, named name.
func (w *workdayWire) ev(name string, kind workdayEventKind, m map[string]any) workdayEvent {
	return workdayEvent{name: name, kind: kind, body: jsonOf(w.t, m)}
}

// start is the session's start, where the host reports one.
func (w *workdayWire) start() []workdayEvent {
	switch w.host {
	case "claude-code", "codex":
		m := w.claudeLike("SessionStart")
		m["source"] = "startup"
		delete(m, "turn_id")
		return []workdayEvent{w.ev("SessionStart", workdayOther, m)}
	case "cursor":
		m := w.cursor("sessionStart")
		m["model"] = "claude-4.5-sonnet"
		return []workdayEvent{w.ev("sessionStart", workdayOther, m)}
	case "copilot":
		m := w.copilot("SessionStart", 0)
		m["source"] = "new"
		return []workdayEvent{w.ev("sessionStart", workdayOther, m)}
	case "gemini":
		m := w.gemini("SessionStart", 0)
		m["source"] = "startup"
		return []workdayEvent{w.ev("SessionStart", workdayOther, m)}
	}
	w.t.Fatalf("no wire for host %q", w.host)
	return nil
}

// end is the session's end.
func (w *workdayWire) end() []workdayEvent {
	switch w.host {
	case "claude-code", "codex":
		m := w.claudeLike("SessionEnd")
		m["reason"] = "prompt_input_exit"
		delete(m, "turn_id")
		return []workdayEvent{w.ev("SessionEnd", workdayOther, m)}
	case "cursor":
		m := w.cursor("sessionEnd")
		m["status"] = "completed"
		return []workdayEvent{w.ev("sessionEnd", workdayOther, m)}
	case "copilot":
		m := w.copilot("SessionEnd", 999)
		m["reason"] = "complete"
		return []workdayEvent{w.ev("sessionEnd", workdayOther, m)}
	case "gemini":
		m := w.gemini("SessionEnd", 999)
		m["reason"] = "exit"
		return []workdayEvent{w.ev("SessionEnd", workdayOther, m)}
	}
	return nil
}

// step is st as the host sends it: nothing for a tool it does not have.
func (w *workdayWire) step(st *workdayStep) []workdayEvent {
	if st.Prompt != "" {
		w.turn++
		w.prompt = st.Prompt
	}
	switch w.host {
	case "claude-code":
		return w.claudeCode(st)
	case "codex":
		return w.codex(st)
	case "cursor":
		return w.cursorStep(st)
	case "copilot":
		return w.copilotStep(st)
	case "gemini":
		return w.geminiStep(st)
	}
	w.t.Fatalf("no wire for host %q", w.host)
	return nil
}

// claudeLike is the start of every input of a host with Claude Code's
// hooks (Claude Code, Codex).
func (w *workdayWire) claudeLike(event string) map[string]any {
	m := map[string]any{"session_id": w.session, "cwd": workdayCwd, "hook_event_name": event, "permission_mode": w.mode()}
	if w.host == "codex" {
		m["transcript_path"] = "/home/dev/.codex/sessions/2026/11/24/rollout-" + w.session + ".jsonl"
		m["model"] = "gpt-5-codex"
		m["turn_id"] = fmt.Sprintf("turn-%s-%02d", w.s.Name, w.turn)
	} else {
		m["transcript_path"] = "/home/dev/.claude/projects/-workspace-shop/" + w.session + ".jsonl"
	}
	return m
}

// toolUseID names the call of st.
func (w *workdayWire) toolUseID(st *workdayStep) string {
	return fmt.Sprintf("toolu_wd%02d%03d", w.s.index, st.line)
}

// claudeCode is st as Claude Code sends it.
func (w *workdayWire) claudeCode(st *workdayStep) []workdayEvent {
	switch {
	case st.Prompt != "":
		m := w.claudeLike("UserPromptSubmit")
		m["prompt"] = st.Prompt
		return []workdayEvent{w.ev("UserPromptSubmit", workdayOther, m)}
	case st.Reply != "":
		m := w.claudeLike("Stop")
		m["stop_hook_active"], m["last_assistant_message"] = false, st.Reply
		return []workdayEvent{w.ev("Stop", workdayOther, m)}
	}
	return w.claudeCall(st.Tool, st.Input, workdayResponse(st), st)
}

// claudeCall is a call and its result in Claude Code's shape (Codex's too).
func (w *workdayWire) claudeCall(tool string, input map[string]any, response any, st *workdayStep) []workdayEvent {
	pre := w.claudeLike("PreToolUse")
	pre["tool_name"], pre["tool_input"], pre["tool_use_id"] = tool, input, w.toolUseID(st)
	post := w.claudeLike("PostToolUse")
	post["tool_name"], post["tool_input"], post["tool_use_id"] = tool, input, w.toolUseID(st)
	post["tool_response"] = response
	name := "PostToolUse"
	if st.Exit != 0 && w.host == "claude-code" {
		name = "PostToolUseFailure"
		delete(post, "tool_response")
		post["hook_event_name"] = name
		post["error"] = fmt.Sprintf("Exit code %d\n%s", st.Exit, st.Result)
		post["is_interrupt"] = false
	}
	return []workdayEvent{w.ev("PreToolUse "+tool, workdayPre, pre), w.ev(name+" "+tool, workdayPost, post)}
}

// workdayResponse is the tool_response Claude Code reports for st.
func workdayResponse(st *workdayStep) any {
	out := st.Result
	switch st.Tool {
	case "Bash":
		return map[string]any{"stdout": out, "stderr": "", "interrupted": false, "isImage": false}
	case "Read":
		n := strings.Count(out, "\n")
		start := 1
		if o, ok := st.Input["offset"].(float64); ok {
			start = int(o)
		}
		return map[string]any{"type": "text", "file": map[string]any{"filePath": st.str("file_path"), "content": out, "numLines": n, "startLine": start, "totalLines": start + n - 1}}
	case "Write":
		return map[string]any{"type": "create", "filePath": st.str("file_path"), "content": st.str("content"), "structuredPatch": []any{}}
	case "Edit":
		return map[string]any{"filePath": st.str("file_path"), "oldString": st.str("old_string"), "newString": st.str("new_string"),
			"structuredPatch": []any{map[string]any{"oldStart": 1, "oldLines": len(workdayLines(st.str("old_string"))), "newStart": 1,
				"newLines": len(workdayLines(st.str("new_string"))), "lines": workdayPatch(st.str("old_string"), st.str("new_string"))}},
			"userModified": false, "replaceAll": false}
	case "Grep":
		if st.str("output_mode") == "content" {
			return map[string]any{"mode": "content", "numFiles": 0, "filenames": []string{}, "content": out, "numLines": len(workdayLines(out))}
		}
		return map[string]any{"mode": "files_with_matches", "filenames": workdayLines(out), "numFiles": len(workdayLines(out))}
	case "Glob":
		return map[string]any{"filenames": workdayLines(out), "durationMs": 14, "numFiles": len(workdayLines(out)), "truncated": false}
	case "WebFetch":
		return map[string]any{"bytes": 3 * len(out), "code": 200, "codeText": "OK", "result": out, "durationMs": 1840, "url": st.str("url")}
	case "WebSearch":
		links, summary := workdaySearch(out)
		return map[string]any{"query": st.str("query"), "results": []any{map[string]any{"tool_use_id": "srvtoolu_01wd", "content": links}, summary}, "durationSeconds": 2.7}
	case "TodoWrite":
		return map[string]any{"oldTodos": []any{}, "newTodos": st.Input["todos"]}
	}
	return []any{map[string]any{"type": "text", "text": out}} // an MCP tool's content
}

var workdayLink = regexp.MustCompile(`(?m)^- \[([^\]]+)\]\((\S+)\)$`)

// workdaySearch splits a search step's result into its links and the
// summary after them.
func workdaySearch(out string) (links []map[string]string, summary string) {
	for _, m := range workdayLink.FindAllStringSubmatch(out, -1) {
		links = append(links, map[string]string{"title": m[1], "url": m[2]})
	}
	if i := strings.Index(out, "\n\n"); i >= 0 {
		summary = out[i+2:]
	}
	return links, summary
}

// workdayLines splits text into its lines, without a last empty one.
func workdayLines(text string) []string {
	if text == "" {
		return []string{}
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// workdayPatch is an edit as the lines of a diff hunk.
func workdayPatch(old, new string) []string {
	var out []string
	for _, l := range workdayLines(old) {
		out = append(out, "-"+l)
	}
	for _, l := range workdayLines(new) {
		out = append(out, "+"+l)
	}
	return out
}

// workdayRel is path relative to the workspace, as an agent writes it in a
// command; a path elsewhere stays absolute.
func workdayRel(path string) string {
	if r, ok := strings.CutPrefix(path, workdayCwd+"/"); ok {
		return r
	}
	return path
}

// workdayQuote quotes s for a POSIX shell.
func workdayQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:@,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// codex is st as Codex CLI sends it.
func (w *workdayWire) codex(st *workdayStep) []workdayEvent {
	switch {
	case st.Prompt != "":
		m := w.claudeLike("UserPromptSubmit")
		m["prompt"] = st.Prompt
		return []workdayEvent{w.ev("UserPromptSubmit", workdayOther, m)}
	case st.Reply != "":
		m := w.claudeLike("Stop")
		m["stop_hook_active"], m["last_assistant_message"] = false, st.Reply
		return []workdayEvent{w.ev("Stop", workdayOther, m)}
	}
	shell := func(cmd string) []workdayEvent {
		return w.claudeCall("Bash", map[string]any{"command": cmd}, st.Result, st)
	}
	patch := func(body, result string) []workdayEvent {
		return w.claudeCall("apply_patch", map[string]any{"command": "*** Begin Patch\n" + body + "*** End Patch\n"}, result, st)
	}
	file := st.str("file_path")
	switch st.Tool {
	case "Bash":
		return shell(st.str("command"))
	case "Read":
		from, n := 1, 250
		if o, ok := st.Input["offset"].(float64); ok {
			from = int(o)
		}
		if l, ok := st.Input["limit"].(float64); ok {
			n = int(l)
		}
		return shell(fmt.Sprintf("sed -n '%d,%dp' %s", from, from+n-1, workdayQuote(workdayRel(file))))
	case "Grep":
		cmd := "rg -l"
		if st.str("output_mode") == "content" {
			cmd = "rg -n"
		}
		cmd += " " + workdayQuote(st.str("pattern"))
		if g := st.str("glob"); g != "" {
			cmd += " -g " + workdayQuote(g)
		}
		if p := st.str("path"); p != "" {
			cmd += " " + workdayQuote(workdayRel(p))
		}
		return shell(cmd)
	case "Glob":
		cmd := "rg --files -g " + workdayQuote(st.str("pattern"))
		if p := st.str("path"); p != "" {
			cmd += " " + workdayQuote(workdayRel(p))
		}
		return shell(cmd)
	case "Write":
		var b strings.Builder
		for _, l := range workdayLines(st.str("content")) {
			b.WriteString("+" + l + "\n")
		}
		return patch("*** Add File: "+workdayRel(file)+"\n"+b.String(), "Success. Updated the following files:\nA "+workdayRel(file)+"\n")
	case "Edit":
		return patch("*** Update File: "+workdayRel(file)+"\n@@\n"+strings.Join(workdayPatch(st.str("old_string"), st.str("new_string")), "\n")+"\n",
			"Success. Updated the following files:\nM "+workdayRel(file)+"\n")
	case "WebFetch", "WebSearch", "TodoWrite":
		return nil // Codex has no hooked tool for these
	}
	return w.claudeCall(st.Tool, st.Input, map[string]any{"content": []any{map[string]any{"type": "text", "text": st.Result}}, "isError": false}, st)
}

// cursor is the start of every Cursor input.
func (w *workdayWire) cursor(event string) map[string]any {
	return map[string]any{"conversation_id": w.session, "generation_id": fmt.Sprintf("gen-%s-%02d", w.s.Name, w.turn),
		"hook_event_name": event, "workspace_roots": []string{workdayCwd}, "cursor_version": "2.0.77"}
}

// workdayMCP is the server of an MCP tool mcp__server__tool, and the tool.
func workdayMCP(tool string) (server, name string) {
	rest := strings.TrimPrefix(tool, "mcp__")
	server, name, _ = strings.Cut(rest, "__")
	return server, name
}

// cursorStep is st as Cursor sends it.
func (w *workdayWire) cursorStep(st *workdayStep) []workdayEvent {
	with := func(event string, fields map[string]any) map[string]any {
		m := w.cursor(event)
		for k, v := range fields {
			m[k] = v
		}
		return m
	}
	switch {
	case st.Prompt != "":
		return []workdayEvent{w.ev("beforeSubmitPrompt", workdayOther, with("beforeSubmitPrompt", map[string]any{"prompt": st.Prompt, "attachments": []any{}}))}
	case st.Reply != "":
		return []workdayEvent{w.ev("stop", workdayOther, with("stop", map[string]any{"status": "completed", "loop_count": 0}))}
	}
	id := w.toolUseID(st)
	tool := func(name string, input map[string]any) []workdayEvent {
		return []workdayEvent{
			w.ev("preToolUse "+name, workdayPre, with("preToolUse", map[string]any{"tool_name": name, "tool_input": input, "tool_use_id": id})),
			w.ev("postToolUse "+name, workdayPost, with("postToolUse", map[string]any{"tool_name": name, "tool_input": input, "tool_use_id": id,
				"tool_output": string(jsonOf(w.t, st.result()))})),
		}
	}
	file := st.str("file_path")
	switch st.Tool {
	case "Bash":
		cmd := st.str("command")
		return []workdayEvent{
			w.ev("beforeShellExecution", workdayPre, with("beforeShellExecution", map[string]any{"command": cmd, "cwd": workdayCwd})),
			w.ev("afterShellExecution", workdayPost, with("afterShellExecution", map[string]any{"command": cmd, "cwd": workdayCwd, "output": st.Result, "duration": 1200})),
		}
	case "Read":
		return []workdayEvent{w.ev("beforeReadFile", workdayPre, with("beforeReadFile", map[string]any{"file_path": file, "content": st.Result, "attachments": []any{}}))}
	case "Write":
		return []workdayEvent{
			w.ev("preToolUse Write", workdayPre, with("preToolUse", map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": file, "contents": st.str("content")}, "tool_use_id": id})),
			w.ev("afterFileEdit", workdayPost, with("afterFileEdit", map[string]any{"file_path": file, "edits": []any{map[string]any{"old_string": "", "new_string": st.str("content")}}})),
		}
	case "Edit":
		return []workdayEvent{w.ev("afterFileEdit", workdayPost, with("afterFileEdit", map[string]any{"file_path": file,
			"edits": []any{map[string]any{"old_string": st.str("old_string"), "new_string": st.str("new_string")}}}))}
	case "Grep":
		return tool("Grep", st.Input)
	case "WebFetch":
		return tool("WebFetch", map[string]any{"url": st.str("url")})
	case "Glob", "WebSearch", "TodoWrite":
		return nil // no hook of Cursor's names these
	}
	server, name := workdayMCP(st.Tool)
	reach := map[string]any{"command": "npx -y @modelcontextprotocol/server-" + server + " " + workdayCwd}
	if server == "github" {
		reach = map[string]any{"url": "https://api.githubcopilot.com/mcp/"}
	}
	args := string(jsonOf(w.t, st.Input))
	result := string(jsonOf(w.t, map[string]any{"content": []any{map[string]any{"type": "text", "text": st.Result}}}))
	return []workdayEvent{
		w.ev("beforeMCPExecution "+name, workdayPre, with("beforeMCPExecution", workdayMerge(map[string]any{"tool_name": name, "tool_input": args}, reach))),
		w.ev("afterMCPExecution "+name, workdayPost, with("afterMCPExecution", workdayMerge(map[string]any{"tool_name": name, "tool_input": args, "result_json": result, "duration": 640}, reach))),
	}
}

// workdayMerge adds b's members to a.
func workdayMerge(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// copilot is the start of every Copilot input, in the session's format:
// camelCase (the event unnamed) for even sessions, the VS Code compatible
// snake_case with hook_event_name for odd ones.
func (w *workdayWire) copilot(event string, line int) map[string]any {
	at := w.at(line)
	if w.s.index%2 == 1 {
		return map[string]any{"hook_event_name": event, "session_id": w.session, "timestamp": at.Format(time.RFC3339), "cwd": workdayCwd}
	}
	return map[string]any{"sessionId": w.session, "timestamp": at.UnixMilli(), "cwd": workdayCwd}
}

// copilotStep is st as Copilot CLI sends it.
func (w *workdayWire) copilotStep(st *workdayStep) []workdayEvent {
	snake := w.s.index%2 == 1
	switch {
	case st.Prompt != "":
		m := w.copilot("UserPromptSubmit", st.line)
		m["prompt"] = st.Prompt
		return []workdayEvent{w.ev("userPromptSubmitted", workdayOther, m)}
	case st.Reply != "":
		m := w.copilot("Stop", st.line)
		if snake {
			m["stop_reason"] = "end_turn"
		} else {
			m["stopReason"] = "end_turn"
		}
		return []workdayEvent{w.ev("agentStop", workdayOther, m)}
	}
	call := func(tool string, args map[string]any) []workdayEvent {
		pre, post := w.copilot("PreToolUse", st.line), w.copilot("PostToolUse", st.line)
		result := "success"
		if st.Exit != 0 {
			result = "failure"
		}
		if snake {
			pre["tool_name"], pre["tool_input"] = tool, args
			post["tool_name"], post["tool_input"] = tool, args
			post["tool_result"] = map[string]any{"result_type": result, "text_result_for_llm": st.result()}
		} else {
			pre["toolName"], pre["toolArgs"] = tool, string(jsonOf(w.t, args))
			post["toolName"], post["toolArgs"] = tool, string(jsonOf(w.t, args))
			post["toolResult"] = map[string]any{"resultType": result, "textResultForLlm": st.result()}
		}
		return []workdayEvent{w.ev("preToolUse "+tool, workdayPre, pre), w.ev("postToolUse "+tool, workdayPost, post)}
	}
	file := st.str("file_path")
	switch st.Tool {
	case "Bash":
		args := map[string]any{"command": st.str("command"), "description": "Run " + workdayClip(st.str("command"), 40)}
		return call("bash", args)
	case "Read":
		args := map[string]any{"path": file}
		if o, ok := st.Input["offset"].(float64); ok {
			l, _ := st.Input["limit"].(float64)
			args["view_range"] = []int{int(o), int(o + l - 1)}
		}
		return call("view", args)
	case "Write":
		return call("create", map[string]any{"path": file, "file_text": st.str("content")})
	case "Edit":
		return call("edit", map[string]any{"path": file, "old_str": st.str("old_string"), "new_str": st.str("new_string")})
	case "Grep", "Glob":
		return call(strings.ToLower(st.Tool), st.Input)
	case "WebFetch":
		return call("web_fetch", map[string]any{"url": st.str("url")})
	case "WebSearch", "TodoWrite":
		return nil // no such Copilot CLI tool
	}
	server, name := workdayMCP(st.Tool)
	if server == "github" {
		server = "github-mcp-server"
	}
	return call(server+"-"+name, st.Input)
}

// gemini is the start of every Gemini CLI input.
func (w *workdayWire) gemini(event string, line int) map[string]any {
	return map[string]any{"session_id": w.session, "transcript_path": "/home/dev/.gemini/tmp/5f1c/chats/session-" + w.session + ".json",
		"cwd": workdayCwd, "hook_event_name": event, "timestamp": w.at(line).Format(time.RFC3339Nano)}
}

// geminiStep is st as Gemini CLI sends it.
func (w *workdayWire) geminiStep(st *workdayStep) []workdayEvent {
	switch {
	case st.Prompt != "":
		m := w.gemini("BeforeAgent", st.line)
		m["prompt"] = st.Prompt
		return []workdayEvent{w.ev("BeforeAgent", workdayOther, m)}
	case st.Reply != "":
		m := w.gemini("AfterAgent", st.line)
		m["prompt"], m["prompt_response"], m["stop_hook_active"] = w.prompt, st.Reply, false
		return []workdayEvent{w.ev("AfterAgent", workdayOther, m)}
	}
	call := func(tool string, args map[string]any, llm string, mcp map[string]any) []workdayEvent {
		pre, post := w.gemini("BeforeTool", st.line), w.gemini("AfterTool", st.line)
		pre["tool_name"], pre["tool_input"] = tool, args
		post["tool_name"], post["tool_input"] = tool, args
		post["tool_response"] = map[string]any{"llmContent": llm, "returnDisplay": llm}
		if mcp != nil {
			pre["mcp_context"], post["mcp_context"] = mcp, mcp
		}
		return []workdayEvent{w.ev("BeforeTool "+tool, workdayPre, pre), w.ev("AfterTool "+tool, workdayPost, post)}
	}
	file := st.str("file_path")
	out := st.Result
	switch st.Tool {
	case "Bash":
		llm := fmt.Sprintf("Command: %s\nDirectory: (root)\nOutput: %s\nError: (none)\nExit Code: %d\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: %d",
			st.str("command"), out, st.Exit, 40000+st.line)
		return call("run_shell_command", map[string]any{"command": st.str("command"), "description": "Run " + workdayClip(st.str("command"), 40)}, llm, nil)
	case "Read":
		args := map[string]any{"file_path": file}
		if o, ok := st.Input["offset"].(float64); ok {
			args["offset"] = int(o)
		}
		if l, ok := st.Input["limit"].(float64); ok {
			args["limit"] = int(l)
		}
		return call("read_file", args, out, nil)
	case "Write":
		return call("write_file", map[string]any{"file_path": file, "content": st.str("content")}, "Successfully created and wrote to new file: "+file+".", nil)
	case "Edit":
		return call("replace", map[string]any{"file_path": file, "old_string": st.str("old_string"), "new_string": st.str("new_string")},
			"Successfully modified file: "+file+" (1 replacements).", nil)
	case "Grep":
		args := map[string]any{"pattern": st.str("pattern")}
		if p := st.str("path"); p != "" {
			args["path"] = p
		}
		if g := st.str("glob"); g != "" {
			args["include"] = g
		}
		return call("search_file_content", args, fmt.Sprintf("Found %d matches for pattern %q:\n---\n%s", len(workdayLines(out)), st.str("pattern"), out), nil)
	case "Glob":
		args := map[string]any{"pattern": st.str("pattern")}
		if p := st.str("path"); p != "" {
			args["path"] = p
		}
		return call("glob", args, fmt.Sprintf("Found %d file(s) matching %q, sorted by modification time (newest first):\n%s", len(workdayLines(out)), st.str("pattern"), out), nil)
	case "WebFetch":
		return call("web_fetch", map[string]any{"prompt": st.str("prompt") + " " + st.str("url")}, out, nil)
	case "WebSearch":
		return call("google_web_search", map[string]any{"query": st.str("query")}, fmt.Sprintf("Web search results for %q:\n\n%s", st.str("query"), out), nil)
	case "TodoWrite":
		var todos []any
		items, _ := st.Input["todos"].([]any)
		for _, it := range items {
			m, _ := it.(map[string]any)
			todos = append(todos, map[string]any{"description": m["content"], "status": m["status"]})
		}
		return call("write_todos", map[string]any{"todos": todos}, fmt.Sprintf("Successfully updated the todo list (%d items).", len(todos)), nil)
	}
	server, name := workdayMCP(st.Tool)
	mcp := map[string]any{"server_name": server, "tool_name": name, "command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-" + server, workdayCwd}}
	if server == "github" {
		mcp = map[string]any{"server_name": server, "tool_name": name, "command": "docker", "args": []string{"run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"}}
	}
	return call(name, st.Input, out, mcp)
}
