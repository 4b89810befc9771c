// The official TypeScript SDK client (`Client` with `StdioClientTransport` or
// `StreamableHTTPClientTransport`) against `mcph serve`: lists the tools and calls the ones the
// plan names, printing one JSON object on stdout.
//
//   node gateway_client.mjs <sdk package dir> <plan.json>
//
// plan.json: {"command": "...", "args": [...], "env": {...}} (stdio: the client starts it) or
// {"url": "http://IP:PORT/mcp"} (Streamable HTTP), and "calls": [{"name": "...", "arguments": {...}}].
//
// Printed: {"server", "tools", "calls": [{"name", "isError", "text"}], "received", "wire"}:
// `received` is every JSON-RPC message the transport delivered, `wire` (HTTP only) every
// response's status, headers and body as they came, so a test can tell what reached the client.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [sdkDir, planPath] = process.argv.slice(2);
const plan = JSON.parse(readFileSync(planPath, "utf8"));
const load = (path) => import(pathToFileURL(`${sdkDir}/dist/esm/${path}`).href);
const { Client } = await load("client/index.js");

const received = [];
const wire = [];

/** `fetch`, recording each response (its body read from a clone as it streams in). */
const recordingFetch = async (input, init) => {
  const response = await fetch(input, init);
  const entry = {
    method: init?.method ?? "GET",
    status: response.status,
    headers: Object.fromEntries(response.headers.entries()),
    body: "",
  };
  wire.push(entry);
  const body = response.clone().body;
  if (body) {
    (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of body) entry.body += decoder.decode(chunk, { stream: true });
      } catch {
        // The stream was cancelled (the client closed it): what came is recorded.
      }
    })();
  }
  return response;
};

let transport;
if (plan.url) {
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(plan.url), { fetch: recordingFetch });
} else {
  const { StdioClientTransport } = await load("client/stdio.js");
  transport = new StdioClientTransport({
    command: plan.command,
    args: plan.args,
    env: { ...process.env, ...(plan.env ?? {}) },
    stderr: "inherit",
  });
}
// The client chains the transport's handler it finds at connect: this one sees every message.
transport.onmessage = (message) => received.push(message);
const client = new Client({ name: "ts-sdk-gateway-check", version: "1.0.0" });
await client.connect(transport);
const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);
const calls = [];
for (const call of plan.calls) {
  const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} });
  calls.push({
    name: call.name,
    isError: result.isError ?? false,
    text: (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join(""),
  });
}
const server = client.getServerVersion();
await client.close();
console.log(
  JSON.stringify({
    server: server?.name,
    protocolVersion: transport.protocolVersion ?? null,
    tools: tools.map((t) => t.name),
    calls,
    received,
    wire,
  }),
);
