"""The official Python SDK client (`mcp.Client`, over stdio or Streamable HTTP) against
`mcph serve`: lists the tools and calls the ones the plan names, printing one JSON object on
stdout.

    python gateway_client.py <plan.json>

plan.json: {"command": "...", "args": [...], "env": {...}} (stdio: the client starts it) or
{"url": "http://IP:PORT/mcp"} (Streamable HTTP); "mode": the SDK's connect mode ("legacy", the
default: the initialize handshake; "auto": server/discover first, so 2026-07-28 where served);
"calls": [{"name": "...", "arguments": {...}}].

Printed: {"server", "protocolVersion", "tools", "calls": [{"name", "isError", "text"}],
"received"}: `received` is every result and notification the client got, as JSON, so a test can
tell what reached the client.
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters


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
    received = []

    async def on_message(message) -> None:
        if hasattr(message, "model_dump"):
            received.append(message.model_dump(mode="json"))
        else:
            received.append(repr(message))

    async with Client(server, mode=plan.get("mode", "legacy"), message_handler=on_message) as client:
        tools = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            received.append(page.model_dump(mode="json"))
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        calls = []
        for call in plan["calls"]:
            result = await client.call_tool(call["name"], call.get("arguments", {}))
            received.append(result.model_dump(mode="json"))
            text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
            calls.append({"name": call["name"], "isError": bool(result.is_error), "text": text})
        info = client.server_info
        version = client.protocol_version
    print(json.dumps({
        "server": info.name if info else None,
        "protocolVersion": version,
        "tools": [t.name for t in tools],
        "calls": calls,
        "received": received,
    }))


asyncio.run(main(sys.argv[1]))
