// The official TypeScript SDK client (`Client` + `StdioClientTransport`) against `mcph serve`:
// lists the tools and calls the ones the plan names, printing one JSON object on stdout.
//
//   node gateway_client.mjs <sdk package dir> <plan.json>
//
// plan.json: {"command": "...", "args": [...], "calls": [{"name": "...", "arguments": {...}}]}
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [sdkDir, planPath] = process.argv.slice(2);
const plan = JSON.parse(readFileSync(planPath, "utf8"));
const load = (path) => import(pathToFileURL(`${sdkDir}/dist/esm/${path}`).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const transport = new StdioClientTransport({
  command: plan.command,
  args: plan.args,
  env: { ...process.env, ...(plan.env ?? {}) },
  stderr: "inherit",
});
const client = new Client({ name: "ts-sdk-gateway-check", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
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
console.log(JSON.stringify({ server: server?.name, tools: tools.map((t) => t.name), calls }));
