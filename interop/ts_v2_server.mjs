// A small server on the TypeScript SDK v2 server package (`@modelcontextprotocol/server`, pinned
// by `cargo xtask interop-setup` in .interop/tsv2), for the dual-era interop tests: Streamable
// HTTP at http://127.0.0.1:PORT/mcp, stateless for both eras (2026-07-28 per request; 2025
// requests served without a session). Host and Origin are checked as the SDK recommends.
//
// usage: node ts_v2_server.mjs PORT   (prints "listening http://127.0.0.1:PORT/mcp" on stderr)
//
// Tools: `echo {text}`; `confirm {}` asks for a confirmation through an input_required result
// (request state "round-1") and reports the answer; `touch {}` publishes tools/list_changed to
// the subscriptions/listen streams.
import http from 'node:http';
import { Readable } from 'node:stream';
import * as z from 'zod';
import {
  McpServer, createMcpHandler, inputRequired, acceptedContent,
  hostHeaderValidationResponse, originValidationResponse,
  localhostAllowedHostnames, localhostAllowedOrigins,
} from '@modelcontextprotocol/server';

const port = Number(process.argv[2] ?? 3000);

function factory() {
  const server = new McpServer({ name: 'ts-v2-interop-server', version: '2.4.0' });
  server.registerTool('echo', {
    description: 'Echo the text.',
    inputSchema: z.object({ text: z.string() }),
  }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  server.registerTool('confirm', {
    description: 'Asks for a confirmation (multi round-trip request).',
    inputSchema: z.object({}),
  }, async (_args, ctx) => {
    const schema = z.object({ yes: z.boolean() });
    const got = acceptedContent(ctx.mcpReq.inputResponses, 'ok', schema);
    if (got === undefined) {
      return inputRequired({
        inputRequests: { ok: inputRequired.elicit({ message: 'Proceed?', requestedSchema: schema }) },
        requestState: 'round-1',
      });
    }
    return { content: [{ type: 'text', text: `yes=${got.yes} state=${ctx.mcpReq.requestState() ?? 'none'}` }] };
  });
  server.registerTool('touch', {
    description: 'Publishes tools/list_changed to the listen streams.',
    inputSchema: z.object({}),
  }, async () => {
    handler.notify.toolsChanged();
    return { content: [{ type: 'text', text: 'published' }] };
  });
  return server;
}

const handler = createMcpHandler(factory);

const srv = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`);
    if (url.pathname !== '/mcp') { res.writeHead(404).end(); return; }
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (Array.isArray(v)) v.forEach((x) => headers.append(k, x)); else if (v !== undefined) headers.set(k, v);
    }
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const request = new Request(url, {
      method: req.method, headers, signal: abort.signal,
      body: hasBody ? Readable.toWeb(req) : undefined, duplex: hasBody ? 'half' : undefined,
    });
    const rejected = hostHeaderValidationResponse(request, localhostAllowedHostnames())
      ?? originValidationResponse(request, localhostAllowedOrigins());
    const response = rejected ?? await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk);
    }
    res.end();
  } catch (e) {
    if (!res.headersSent) res.writeHead(500);
    res.end(String(e));
  }
});
srv.listen(port, '127.0.0.1', () => console.error(`listening http://127.0.0.1:${port}/mcp`));
process.on('SIGTERM', () => { handler.close?.(); srv.close(); process.exit(0); });
