package hostconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// pluginSpec is how a host that loads JavaScript plugins into its own
// process (opencode, and Kilo CLI, its fork) takes agentledger: a plugin
// file of agentledger's alone, in a directory the host loads every plugin
// of, which runs the hook command for each hook.
type pluginSpec struct {
	file func(s Scope) (string, error)
	// events are the plugin hooks the adapter handles.
	events []string
}

var pluginEvents = []string{"session.created", "chat.message", "tool.execute.before", "tool.execute.after"}

var pluginSpecs = map[string]*pluginSpec{
	"opencode": {file: dirFile(".opencode/plugin/agentledger.js", ".config/opencode/plugin/agentledger.js"), events: pluginEvents},
	"kilo":     {file: dirFile(".kilo/plugin/agentledger.js", ".config/kilo/plugin/agentledger.js"), events: pluginEvents},
}

// configFile is the file a host's install for s writes: its configuration,
// or agentledger's plugin.
func configFile(host string, s Scope) (string, error) {
	if ps := pluginSpecs[host]; ps != nil {
		return ps.file(s)
	}
	if hs := hookFilesSpecs[host]; hs != nil {
		d, err := hs.dir(s)
		return filepath.Join(d, hs.events[0]), err
	}
	return specs[host].file(s)
}

// pluginMark opens every plugin agentledger writes; a file without it is
// not agentledger's and is never changed.
const pluginMark = "// agentledger's plugin for "

// pluginCommandLine holds, in a plugin agentledger wrote, the hook
// command it runs (a JSON string).
const pluginCommandLine = "const COMMAND = "

// Plugin is agentledger's plugin for an opencode-based host, running
// command (a shell command line) for each hook.
func Plugin(host, command string) string {
	cmd, _ := json.Marshal(command)
	dirVar, _ := json.Marshal(projectDirVar[host])
	return pluginMark + host + `, written by "engine install ` + host + `".
// Commit it with the project. The host loads it into its own process; it
// hands every tool call, its result, every prompt and every session's
// start to agentledger's hook command, and does what the answer says: it
// stops a call or a prompt (the host gives the model the reason), runs a
// call with the arguments agentledger rewrote, or shows the model what
// agentledger left of a result. It posts each call to the user's local
// engine itself when the hook command says how (--wire), and runs the hook
// command for any call that gets no answer there (it starts the engine, or
// answers by the failure policy). A call it gets no answer for at all — the
// hook command missing, failing, timing out or answering what it cannot
// read — is stopped. "engine uninstall ` + host + `" removes this file.
import { spawn } from "node:child_process";
import { request } from "node:http";
import { fileURLToPath } from "node:url";
import { dirname } from "node:path";

` + pluginCommandLine + string(cmd) + `;
const HOST = ` + fmt.Sprintf("%q", host) + `;
// The project: the directory that holds this file's plugin directory.
const PROJECT = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const PROJECT_VAR = ` + string(dirVar) + `;
const TIMEOUT_MS = ` + fmt.Sprint(HookTimeout*1000) + `;

// run runs the hook command (with more arguments) on stdin and returns
// what it printed; it throws (the host stops the call) when it cannot run
// or does not exit 0.
function run(directory, stdin, more = "") {
	return new Promise((resolve, reject) => {
		const env = { ...process.env };
		if (PROJECT_VAR) env[PROJECT_VAR] = PROJECT;
		let child;
		try {
			child = spawn("/bin/sh", ["-c", COMMAND + more], { cwd: directory, env, stdio: ["pipe", "pipe", "pipe"] });
		} catch (e) {
			reject(new Error("agentledger: the hook command could not start (" + e.message + "); this call is blocked"));
			return;
		}
		const out = [], err = [];
		const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUT_MS);
		child.stdout.on("data", (b) => out.push(b));
		child.stderr.on("data", (b) => err.push(b));
		child.on("error", (e) => { clearTimeout(timer); reject(new Error("agentledger: the hook command could not run (" + e.message + "); this call is blocked")); });
		child.on("close", (code, signal) => {
			clearTimeout(timer);
			const said = Buffer.concat(err).toString().trim();
			if (code !== 0) {
				reject(new Error(said || "agentledger: the hook command ended with " + (signal || "exit " + code) + "; this call is blocked"));
				return;
			}
			resolve(Buffer.concat(out).toString());
		});
		child.stdin.on("error", () => {});
		child.stdin.end(stdin);
	});
}

// answerOf reads a host answer; it throws when it is not an object.
function answerOf(text) {
	try {
		const answer = typeof text === "string" ? JSON.parse(text) : text;
		if (answer === null || typeof answer !== "object" || Array.isArray(answer)) throw new Error("not an object");
		return answer;
	} catch (e) {
		throw new Error("agentledger: the answer could not be read (" + e.message + "); this call is blocked");
	}
}

// post sends one input to the local engine on its socket and resolves to
// the host answer; it rejects on anything but a 200 with one.
function post(wire, body) {
	return new Promise((resolve, reject) => {
		const req = request({ socketPath: wire.socket, path: wire.path, method: "POST", timeout: TIMEOUT_MS,
			headers: { ...wire.headers, "Content-Length": Buffer.byteLength(body) } }, (res) => {
			const chunks = [];
			res.on("data", (c) => chunks.push(c));
			res.on("error", reject);
			res.on("end", () => {
				if (res.statusCode !== 200) return reject(new Error("engine answered " + res.statusCode));
				try {
					resolve(JSON.parse(Buffer.concat(chunks).toString()).host_output ?? {});
				} catch (e) {
					reject(e);
				}
			});
		});
		req.on("timeout", () => req.destroy(new Error("timeout")));
		req.on("error", reject);
		req.end(body);
	});
}

// hook returns agentledger's answer to one input: from the local engine
// directly where it can, else from the hook command; it throws (the host
// stops the call) when there is none it can read.
async function hook(directory, wire, input) {
	const body = JSON.stringify({ ...input, cwd: directory });
	if (wire && Buffer.byteLength(body) <= wire.max_body) {
		try {
			return answerOf(await post(wire, body));
		} catch {}
	}
	return answerOf(await run(directory, body));
}

export const AgentLedger = async ({ client, directory }) => {
	// How to reach the local engine without a process per call (none: every
	// call runs the hook command).
	let wire = null;
	try {
		const w = JSON.parse(await run(directory, "", " --wire"));
		if (typeof w?.socket === "string" && typeof w?.path === "string" && w.headers && typeof w.headers === "object") wire = w;
	} catch {}
	// A sub-agent runs in a session of its own, whose parent is the
	// session whose task tool started it. A session's start (a sub-agent's
	// spawn) goes on the record before any of its calls.
	const parents = new Map();
	const started = new Map();
	async function parentOf(id) {
		if (!parents.has(id)) {
			let parent = "";
			try {
				const got = await client.session.get({ path: { id } });
				parent = got?.data?.parentID ?? "";
			} catch {}
			parents.set(id, parent);
		}
		await started.get(id);
		return parents.get(id);
	}
	async function session(id, agent) {
		return { session_id: id, parent_session_id: await parentOf(id), agent: agent ?? undefined };
	}
	// The host names an MCP server's tool SERVER_TOOL (what is not
	// [A-Za-z0-9_-] made _ in each part), which alone cannot be told from
	// one of its own tools: the servers it has connected say whose it is
	// (asked again, at most every 10 s, for a name none of them explains).
	let servers = [], asked = 0;
	async function serverOf(tool) {
		const find = () => servers.filter((s) => tool.startsWith(s.replace(/[^A-Za-z0-9_-]/g, "_") + "_")).sort((a, b) => b.length - a.length)[0];
		if (!tool.includes("_") || find() !== undefined || Date.now() - asked < 10000) return find();
		asked = Date.now();
		try {
			const got = await client.mcp.status();
			if (got?.data && typeof got.data === "object") servers = Object.keys(got.data);
		} catch {}
		return find();
	}
	return {
		event: async ({ event }) => {
			if (event?.type !== "session.created") return;
			const info = event.properties?.info ?? {};
			if (!info.id) return;
			parents.set(info.id, info.parentID ?? "");
			const sent = hook(directory, wire, { hook_event_name: "session.created", session_id: info.id, parent_session_id: info.parentID ?? undefined,
				agent: info.agent ?? undefined, version: info.version ?? undefined }).catch((e) => console.error(e.message));
			started.set(info.id, sent);
			await sent;
		},
		"chat.message": async (input, output) => {
			const prompt = (output.parts ?? []).filter((p) => p.type === "text" && !p.synthetic).map((p) => p.text).join("\n");
			const answer = await hook(directory, wire, { hook_event_name: "chat.message", ...(await session(input.sessionID, input.agent)),
				message_id: input.messageID ?? output.message?.id, prompt });
			if (answer.block) throw new Error(answer.block);
		},
		"tool.execute.before": async (input, output) => {
			const answer = await hook(directory, wire, { hook_event_name: "tool.execute.before", ...(await session(input.sessionID)),
				call_id: input.callID, tool: input.tool, mcp_server: await serverOf(input.tool), args: output.args ?? {} });
			if (answer.block) throw new Error(answer.block);
			if (answer.args && typeof answer.args === "object") {
				for (const k of Object.keys(output.args)) delete output.args[k];
				Object.assign(output.args, answer.args);
			}
		},
		"tool.execute.after": async (input, output) => {
			const answer = await hook(directory, wire, { hook_event_name: "tool.execute.after", ...(await session(input.sessionID)),
				call_id: input.callID, tool: input.tool, mcp_server: await serverOf(input.tool), args: input.args ?? {}, output: String(output.output ?? "") });
			if (typeof answer.output === "string") {
				output.output = answer.output;
				if (output.metadata && typeof output.metadata === "object" && "output" in output.metadata) output.metadata.output = answer.output;
			}
		},
	};
};
`
}

// pluginCommand is the hook command of a plugin agentledger wrote ("" when
// data is not one).
func pluginCommand(data []byte) string {
	if !strings.HasPrefix(string(data), pluginMark) {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, pluginCommandLine); ok {
			var cmd string
			if json.Unmarshal([]byte(strings.TrimSuffix(rest, ";")), &cmd) == nil {
				return cmd
			}
		}
	}
	return ""
}

// loadPlugin reads a plugin host's file for scope: its change, whose
// Before is what is there, and the command of the plugin agentledger wrote
// there ("" for none).
func loadPlugin(host string, sp *pluginSpec, scope Scope) (*Change, string, error) {
	if !scope.User && scope.Dir == "" {
		return nil, "", errors.New("no project directory")
	}
	p, err := sp.file(scope)
	if err != nil {
		return nil, "", err
	}
	c := &Change{Path: p, root: filepath.Clean(scope.Dir)}
	if scope.User {
		c.root, _ = scope.home()
	}
	data, err := os.ReadFile(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return c, "", nil
	case err != nil:
		return nil, "", err
	}
	c.Before, c.Existed, c.After = data, true, data
	cmd := pluginCommand(data)
	if cmd == "" {
		return nil, "", fmt.Errorf("%s: not a plugin agentledger wrote (it does not start %q); nothing was changed", p, pluginMark+host)
	}
	return c, cmd, nil
}

// installPlugin plans writing agentledger's plugin running command.
func installPlugin(host string, sp *pluginSpec, scope Scope, command string) (*Change, error) {
	c, _, err := loadPlugin(host, sp, scope)
	if err != nil {
		return nil, err
	}
	c.After = []byte(Plugin(host, command))
	return c, nil
}

// uninstallPlugin plans removing agentledger's plugin.
func uninstallPlugin(host string, sp *pluginSpec, scope Scope) (*Change, error) {
	c, cmd, err := loadPlugin(host, sp, scope)
	if err != nil || cmd == "" {
		return c, err
	}
	c.After = nil
	return c, nil
}

// inspectPlugin is what a plugin host's configuration holds of
// agentledger: its plugin's command, for every hook it handles.
func inspectPlugin(host string, sp *pluginSpec, scope Scope) (Installed, error) {
	c, cmd, err := loadPlugin(host, sp, scope)
	if err != nil {
		return Installed{}, err
	}
	in := Installed{Path: c.Path, Exists: c.Existed, Commands: map[string][]string{}}
	if cmd != "" {
		for _, e := range sp.events {
			in.Commands[e] = []string{cmd}
		}
	}
	return in, nil
}
