"""The official Python SDK client (`ClientSession` over `stdio_client`) against `mcph serve`:
lists the tools and calls the ones the plan names, printing one JSON object on stdout.

    python gateway_client.py <plan.json>

plan.json: {"command": "...", "args": [...], "calls": [{"name": "...", "arguments": {...}}]}
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client


async def main(plan_path: str) -> None:
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    params = StdioServerParameters(
        command=plan["command"],
        args=plan["args"],
        env={**os.environ, **plan.get("env", {})},
    )
    async with stdio_client(params) as streams:
        async with ClientSession(*streams) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            calls = []
            for call in plan["calls"]:
                result = await session.call_tool(call["name"], call.get("arguments", {}))
                text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
                calls.append({"name": call["name"], "isError": bool(result.is_error), "text": text})
    print(json.dumps({
        "server": init.server_info.name,
        "tools": [t.name for t in tools.tools],
        "calls": calls,
    }))


asyncio.run(main(sys.argv[1]))
