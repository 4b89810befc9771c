"""One long-lived session of the official Python SDK client (`mcp.Client`) with `mcph serve`,
driven line by line: a test keeps it open while it breaks and mends the gateway's upstreams.

    python gateway_session.py <plan.json>

plan.json: {"command": "...", "args": [...], "env": {...}} (stdio: the client starts it) or
{"url": "http://IP:PORT/mcp"} (Streamable HTTP), and "mode" (the SDK's connect mode, "legacy"
by default).

Reads one JSON command a line on stdin, answers one JSON line on stdout:
  {"op": "list"}                                -> {"reply": "list", "tools": [names]}
  {"op": "call", "name": N, "arguments": {...}} -> {"reply": "call", "isError": b, "text": t}
                                                   (or {"reply": "call", "error": "..."} when the
                                                   request itself failed)
Every notification the session surfaces is printed as {"notification": METHOD} when it comes,
a transport error as {"transportError": "..."}. Prints {"ready": PROTOCOL_VERSION} once
connected; ends, closing the session, at end of input.
"""

import asyncio
import json
import os
import sys

import anyio
from mcp import Client, StdioServerParameters


def emit(value) -> None:
    print(json.dumps(value), flush=True)


async def on_message(message) -> None:
    if isinstance(message, Exception):
        emit({"transportError": repr(message)})
    else:
        emit({"notification": getattr(message, "method", repr(message))})


async def answer(client: Client, command: dict) -> dict:
    if command["op"] == "list":
        names = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            names.extend(t.name for t in page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return {"reply": "list", "tools": names}
    if command["op"] == "call":
        try:
            result = await client.call_tool(command["name"], command.get("arguments", {}))
        except Exception as e:  # the request failed as a whole (not a tool error)
            return {"reply": "call", "error": f"{type(e).__name__}: {e}"}
        text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
        return {"reply": "call", "isError": bool(result.is_error), "text": text}
    return {"reply": "unknown", "op": command["op"]}


async def main(plan_path: str) -> None:
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    if "url" in plan:
        server = plan["url"]
    else:
        server = StdioServerParameters(
            command=plan["command"],
            args=plan["args"],
            env={**os.environ, **plan.get("env", {})},
        )
    async with Client(
        server, mode=plan.get("mode", "legacy"), message_handler=on_message, cache=None
    ) as client:
        emit({"ready": client.protocol_version})
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if not line:
                break
            if line.strip():
                emit(await answer(client, json.loads(line)))


asyncio.run(main(sys.argv[1]))
