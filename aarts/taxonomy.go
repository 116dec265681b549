package aarts

import (
	"slices"
	"strings"
)

// Canonical tool names of the AARTS standard tool taxonomy (AARTS §7).
const (
	ToolShell          = "shell"
	ToolFileWrite      = "file_write"
	ToolFileEdit       = "file_edit"
	ToolFileRead       = "file_read"
	ToolFileDelete     = "file_delete"
	ToolWebRequest     = "web_request"
	ToolMCPCall        = "mcp_call"
	ToolCodeExec       = "code_exec"
	ToolPackageInstall = "package_install"
	ToolBrowser        = "browser"
	ToolDatabase       = "database"
	ToolDelegate       = "delegate"
	ToolOther          = "other"
)

// agentledger's extensions of the taxonomy: host tools that act on the
// agent's own workflow, not on the machine or the network. AARTS files them
// under "other"; the engine reads them as what they are, so that a manifest
// can declare them and a policy can tell them from an unknown tool. Events
// carry the standard name (StandardTool); the engine's analysis uses these.
const (
	// ToolPlanning: plans and todo lists (TodoWrite, EnterPlanMode,
	// ExitPlanMode).
	ToolPlanning = "planning"
	// ToolAskUser: a question to the user (AskUserQuestion).
	ToolAskUser = "ask_user"
	// ToolShellControl: the output or end of a background shell the agent
	// started (BashOutput, KillShell); the command itself was judged when
	// it started.
	ToolShellControl = "shell_control"
	// ToolMCPResource: listing and reading an MCP server's resources
	// (ListMcpResourcesTool, ReadMcpResourceTool); their content taints
	// the session like any MCP content.
	ToolMCPResource = "mcp_resource"
	// ToolSkill: a skill or slash command the user installed (Skill,
	// SlashCommand); what it then does is judged call by call.
	ToolSkill = "skill"
)

// CanonicalTools lists the taxonomy's names: AARTS §7's, then
// agentledger's extensions.
var CanonicalTools = []string{
	ToolShell, ToolFileWrite, ToolFileEdit, ToolFileRead, ToolFileDelete, ToolWebRequest, ToolMCPCall,
	ToolCodeExec, ToolPackageInstall, ToolBrowser, ToolDatabase, ToolDelegate, ToolOther,
	ToolPlanning, ToolAskUser, ToolShellControl, ToolMCPResource, ToolSkill,
}

// standardTools is how many of CanonicalTools AARTS §7 defines.
const standardTools = 13

// IsCanonicalTool reports whether name is a taxonomy name.
func IsCanonicalTool(name string) bool { return slices.Contains(CanonicalTools, name) }

// StandardTool is Canonical restricted to AARTS §7: agentledger's
// extensions are "other" (with the native name beside it in the event), as
// the standard requires of what an adapter sends.
func StandardTool(native string) string {
	t := Canonical(native)
	if !slices.Contains(CanonicalTools[:standardTools], t) {
		return ToolOther
	}
	return t
}

// nativeTools maps host tool names, lowercased, to canonical names. Hosts
// covered: Claude Code, Cursor, Copilot, Gemini CLI, Codex, Qwen Code,
// Droid (Execute, ApplyPatch, FetchUrl), opencode, Kilo CLI, OpenClaw and
// common framework names.
var nativeTools = map[string]string{
	// shell
	"bash": ToolShell, "shell": ToolShell, "exec": ToolShell, "terminal": ToolShell, "run_shell_command": ToolShell,
	"run_terminal_cmd": ToolShell, "execute_command": ToolShell, "local_shell": ToolShell, "powershell": ToolShell,
	"run_in_terminal": ToolShell, "sh": ToolShell, "cmd": ToolShell, "exec_command": ToolShell, "execute": ToolShell,
	// Codex asks for network access on behalf of a shell command (its
	// PermissionRequest names the command).
	"networkaccess": ToolShell,
	// file write
	"write": ToolFileWrite, "save_memory": ToolFileWrite, "create": ToolFileWrite, "create_file": ToolFileWrite, "write_file": ToolFileWrite, "write_to_file": ToolFileWrite,
	"notebookwrite": ToolFileWrite,
	// file edit
	"edit": ToolFileEdit, "multiedit": ToolFileEdit, "apply_patch": ToolFileEdit, "applypatch": ToolFileEdit, "str_replace": ToolFileEdit,
	"str_replace_editor": ToolFileEdit, "str_replace_based_edit_tool": ToolFileEdit, "replace": ToolFileEdit,
	"edit_file": ToolFileEdit, "search_replace": ToolFileEdit, "notebookedit": ToolFileEdit, "insert_edit_into_file": ToolFileEdit,
	// file read
	"read": ToolFileRead, "cat": ToolFileRead, "read_file": ToolFileRead, "view": ToolFileRead, "glob": ToolFileRead,
	"grep": ToolFileRead, "ls": ToolFileRead, "list_dir": ToolFileRead, "read_many_files": ToolFileRead,
	"search_file_content": ToolFileRead, "grep_search": ToolFileRead, "codebase_search": ToolFileRead, "file_search": ToolFileRead, "list_directory": ToolFileRead,
	// file delete
	"delete": ToolFileDelete, "rm": ToolFileDelete, "delete_file": ToolFileDelete,
	// web
	"webfetch": ToolWebRequest, "web_fetch": ToolWebRequest, "fetch": ToolWebRequest, "curl": ToolWebRequest,
	"http_request": ToolWebRequest, "fetchurl": ToolWebRequest, "websearch": ToolWebRequest, "web_search": ToolWebRequest, "google_web_search": ToolWebRequest,
	// mcp
	"mcp": ToolMCPCall, "mcp_tool": ToolMCPCall,
	// code
	"python_exec": ToolCodeExec, "jupyter": ToolCodeExec, "eval": ToolCodeExec, "code_interpreter": ToolCodeExec,
	"execute_code": ToolCodeExec, "python": ToolCodeExec, "run_code": ToolCodeExec,
	// browser
	"browser": ToolBrowser, "browser_navigate": ToolBrowser, "browser_click": ToolBrowser, "browser_type": ToolBrowser,
	"browser_screenshot": ToolBrowser, "click": ToolBrowser, "type": ToolBrowser, "screenshot": ToolBrowser, "computer": ToolBrowser,
	// database
	"sql_query": ToolDatabase, "db_exec": ToolDatabase, "query": ToolDatabase, "sql": ToolDatabase, "execute_sql": ToolDatabase,
	// agentledger's extensions: the agent's own workflow
	"todowrite": ToolPlanning, "todoread": ToolPlanning, "enterplanmode": ToolPlanning, "exitplanmode": ToolPlanning,
	"update_plan": ToolPlanning, "write_todos": ToolPlanning, "enter_plan_mode": ToolPlanning, "exit_plan_mode": ToolPlanning,
	"askuserquestion": ToolAskUser, "ask_user": ToolAskUser, "ask_followup_question": ToolAskUser,
	"bashoutput": ToolShellControl, "killshell": ToolShellControl, "killbash": ToolShellControl,
	"listmcpresourcestool": ToolMCPResource, "readmcpresourcetool": ToolMCPResource,
	"skill": ToolSkill, "slashcommand": ToolSkill, "activate_skill": ToolSkill,
	"notebookread": ToolFileRead,
	// Tools of the hosts the e2e tests drive, as each offered them to the
	// model (opencode 1.18, Kilo 7.7, Droid 0.225, Qwen Code 0.24,
	// Copilot 1.0, Gemini CLI 0.61).
	"list": ToolFileRead, "patch": ToolFileEdit, "question": ToolAskUser, "suggest": ToolAskUser, "codesearch": ToolWebRequest,
	"plan_enter": ToolPlanning, "plan_exit": ToolPlanning, "toolsearch": ToolPlanning, "tool_search": ToolPlanning,
	"taskoutput": ToolDelegate, "taskstop": ToolDelegate, "list_agents": ToolDelegate, "read_agent": ToolDelegate, "write_agent": ToolDelegate,
	"get_goal": ToolPlanning, "update_goal": ToolPlanning, "report_findings": ToolPlanning, "loop_wakeup": ToolPlanning,
	"read_mcp_resource": ToolMCPResource, "notebook_edit": ToolFileEdit, "zoom_image": ToolFileRead,
	"read_bash": ToolShellControl, "stop_bash": ToolShellControl, "list_bash": ToolShellControl, "write_bash": ToolShell,
	"list_background_processes": ToolShellControl, "read_background_output": ToolShellControl,
	"session_store_sql": ToolDatabase, "fetch_copilot_cli_documentation": ToolWebRequest,
	// Cline 3.0's.
	"run_commands": ToolShell, "read_files": ToolFileRead, "editor": ToolFileEdit, "search_codebase": ToolFileRead,
	"fetch_web_content": ToolWebRequest, "ask_question": ToolAskUser, "submit_and_exit": ToolPlanning,
	"team_spawn_teammate": ToolDelegate, "team_shutdown_teammate": ToolDelegate, "team_run_task": ToolDelegate, "team_task": ToolDelegate,
	"team_send_message": ToolDelegate, "team_broadcast": ToolDelegate, "team_read_mailbox": ToolDelegate, "team_status": ToolDelegate,
	"team_cancel_run": ToolDelegate, "team_list_runs": ToolDelegate, "team_await_runs": ToolDelegate, "team_mission_log": ToolPlanning,
	"team_cleanup": ToolDelegate,
	// delegation
	"task": ToolDelegate, "agent": ToolDelegate, "spawn_agent": ToolDelegate, "delegate": ToolDelegate, "subagent": ToolDelegate,
	"invoke_agent": ToolDelegate, // Gemini CLI 0.61
}

// Canonical maps a host's tool name to the taxonomy. Names already
// canonical stay; MCP tools (mcp__server__tool, or server.tool naming) are
// mcp_call, and an MCP server's reads named by their method
// (mcp__server__resources/read) mcp_resource; anything unknown is other. A shell call that installs packages
// is refined to package_install by CanonicalFor.
func Canonical(native string) string {
	n := strings.ToLower(strings.TrimSpace(native))
	if IsCanonicalTool(n) {
		return n
	}
	if strings.HasPrefix(n, "mcp__") && strings.Contains(MCPTool(n), "/") {
		// A protocol method of the server (resources/read, prompts/get:
		// the MCP gateway's names), not a tool: tool names hold no "/".
		return ToolMCPResource
	}
	if strings.HasPrefix(n, "mcp__") || strings.HasPrefix(n, "mcp_") && strings.Count(n, "_") >= 3 {
		return ToolMCPCall
	}
	if t, ok := nativeTools[n]; ok {
		return t
	}
	return ToolOther
}

// MCPServer returns the server of an MCP tool name such as
// mcp__github__create_issue, or "".
func MCPServer(native string) string {
	server, _ := splitMCP(native)
	return server
}

// MCPTool returns the tool of an MCP tool name such as
// mcp__github__create_issue (create_issue), or "" when native names no
// MCP tool.
func MCPTool(native string) string {
	_, tool := splitMCP(native)
	return tool
}

// splitMCP splits mcp__<server>__<tool> into server and tool.
func splitMCP(native string) (server, tool string) {
	rest, ok := strings.CutPrefix(native, "mcp__")
	if !ok {
		return "", ""
	}
	server, tool, _ = strings.Cut(rest, "__")
	return server, tool
}
