// The conformance client: the official MCP TypeScript SDK's client runs
// one fixed session against a server (server-everything, directly or
// through agentledger's gateway) and prints what it saw as JSON: every
// answer, every notification and every request the server made of it.
//
//   node mcpclient.mjs SDK_DIR CONFIG_JSON
//
// SDK_DIR is the SDK's package directory; CONFIG_JSON is
// {"transport":"stdio","command":…,"args":[…],"env":{…}} or
// {"transport":"http","url":…,"headers":{…}}.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdk, configJSON] = process.argv.slice(2);
const config = JSON.parse(configJSON);
const load = (p) => import(pathToFileURL(path.join(sdk, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const types = await load("types.js");

const transcript = { steps: [], notifications: [], asked: [], progress: {} };
const client = new Client(
  { name: "agentledger-conformance", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: { form: {}, url: {} }, roots: { listChanged: true } } },
);

// What the server asks of the client: answered alike every time.
client.setRequestHandler(types.CreateMessageRequestSchema, async (req) => {
  transcript.asked.push({ method: "sampling/createMessage", params: req.params });
  return { model: "scripted", role: "assistant", content: { type: "text", text: "sampled" } };
});
client.setRequestHandler(types.ElicitRequestSchema, async (req) => {
  transcript.asked.push({ method: "elicitation/create", params: req.params });
  if (req.params.mode === "url") return { action: "accept" };
  const content = {};
  for (const [name, s] of Object.entries(req.params.requestedSchema?.properties ?? {})) {
    if (s.enum) content[name] = s.enum[0];
    else if (s.oneOf) content[name] = s.oneOf[0].const;
    else if (s.type === "array") content[name] = s.items?.enum ? [s.items.enum[0]] : (s.items?.anyOf ? [s.items.anyOf[0].const] : []);
    else if (s.type === "boolean") content[name] = true;
    else if (s.type === "number" || s.type === "integer") content[name] = s.minimum ?? 1;
    else if (s.format === "email") content[name] = "dev@example.com";
    else if (s.format === "uri") content[name] = "https://example.com";
    else if (s.format === "date") content[name] = "2026-01-01";
    else if (s.format === "date-time") content[name] = "2026-01-01T00:00:00Z";
    else content[name] = s.default ?? "value";
  }
  return { action: "accept", content };
});
let roots = [{ uri: "file:///work/conformance", name: "work" }];
client.setRequestHandler(types.ListRootsRequestSchema, async () => {
  transcript.asked.push({ method: "roots/list" });
  return { roots };
});
client.fallbackNotificationHandler = async (n) => {
  transcript.notifications.push({ method: n.method, params: n.params ?? {} });
};

let transport;
if (config.transport === "stdio") {
  const { StdioClientTransport, getDefaultEnvironment } = await load("client/stdio.js");
  transport = new StdioClientTransport({
    command: config.command, args: config.args ?? [],
    env: { ...getDefaultEnvironment(), ...(config.env ?? {}) }, stderr: "inherit",
  });
} else {
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: config.headers ?? {} } });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function step(name, f) {
  if (process.env.MCPCLIENT_TRACE) process.stderr.write(`step ${name}\n`);
  try {
    transcript.steps.push({ step: name, result: await f() });
  } catch (e) {
    transcript.steps.push({ step: name, error: { code: e.code ?? null, message: String(e.message ?? e) } });
  }
}
const progressOf = (name) => ({
  onprogress: (p) => { (transcript.progress[name] ??= []).push(p); },
  timeout: 60000,
});

await client.connect(transport);
transcript.server = {
  info: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  instructions: client.getInstructions() ?? null,
  protocol: transport.protocolVersion ?? null,
};
await sleep(800); // the server asks for the roots after 350 ms

await step("tools/list", () => client.listTools());
await step("prompts/list", () => client.listPrompts());
await step("resources/list", () => client.listResources());
await step("resources/templates/list", () => client.listResourceTemplates());
await step("resources/read", () => client.readResource({ uri: "demo://resource/static/document/architecture.md" }));
await step("prompts/get simple", () => client.getPrompt({ name: "simple-prompt" }));
await step("prompts/get args", () => client.getPrompt({ name: "args-prompt", arguments: { city: "Lisbon", state: "LX" } }));
await step("completion/complete", () => client.complete({
  ref: { type: "ref/prompt", name: "completable-prompt" }, argument: { name: "department", value: "E" },
}));
await step("logging/setLevel", () => client.setLoggingLevel("info"));
await step("resources/subscribe", () => client.subscribeResource({ uri: "demo://resource/static/document/architecture.md" }));
for (const [name, args] of [
  ["echo", { message: "hello" }],
  ["get-sum", { a: 2, b: 3 }],
  ["get-annotated-message", { messageType: "success", includeImage: false }],
  ["get-structured-content", { location: "New York" }],
  ["get-tiny-image", {}],
  ["get-resource-links", { count: 2 }],
  ["get-resource-reference", { resourceType: "Text", resourceId: 1 }],
  ["get-roots-list", {}],
  ["trigger-sampling-request", { prompt: "Say hello", maxTokens: 20 }],
  ["trigger-elicitation-request", {}],
]) {
  await step(`tools/call ${name}`, () => client.callTool({ name, arguments: args }, undefined, { timeout: 60000 }));
}
await step("tools/call trigger-long-running-operation", () =>
  client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 1, steps: 3 } }, undefined,
    progressOf("trigger-long-running-operation")));
await step("tools/call toggle-subscriber-updates", () => client.callTool({ name: "toggle-subscriber-updates", arguments: {} }));
await sleep(500);
roots = [{ uri: "file:///work/conformance", name: "work" }, { uri: "file:///work/other", name: "other" }];
await client.sendRootsListChanged();
await sleep(800);
await step("tools/call get-roots-list after change", () => client.callTool({ name: "get-roots-list", arguments: {} }));
await step("resources/unsubscribe", () => client.unsubscribeResource({ uri: "demo://resource/static/document/architecture.md" }));
await step("tools/call no-such-tool", () => client.callTool({ name: "no-such-tool", arguments: {} }));
await step("ping", () => client.ping());

await client.close();
process.stdout.write(JSON.stringify(transcript) + "\n");
process.exit(0);
