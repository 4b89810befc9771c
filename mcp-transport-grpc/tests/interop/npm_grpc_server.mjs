// An MCP server on the npm package mcp-grpc-transport (its mcp.transport.v1.Mcp/Session and
// @modelcontextprotocol/sdk), bound to loopback. Prints "listening HOST:PORT" once serving;
// stops when its stdin closes. Run as `node --input-type=module -e "<this file>"` from the
// directory holding node_modules, so the imports resolve there.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { maybeStartGrpcMcpServer } from "mcp-grpc-transport";
import { z } from "zod";

function createMcpServer() {
  const server = new McpServer({ name: "npm-grpc-server", version: "1.0.0" });
  server.tool("echo", "Echoes text", { text: z.string() }, async ({ text }) => ({
    content: [{ type: "text", text }],
  }));
  server.tool("large", "Returns `bytes` x characters", { bytes: z.number() }, async ({ bytes }) => ({
    content: [{ type: "text", text: "x".repeat(bytes) }],
  }));
  return server;
}

process.env.ENABLE_GRPC = "1";
const grpc = await maybeStartGrpcMcpServer({ createMcpServer, bindAddress: "127.0.0.1:0" });
console.log(`listening ${grpc.address}`);
process.stdin.resume();
process.stdin.on("end", async () => {
  await grpc.shutdown();
  process.exit(0);
});
