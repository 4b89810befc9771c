"""One long-lived session of the official Python SDK client (`mcp.Client`) with `mcph serve`,
driven line by line: a test keeps it open while it breaks and mends the gateway's upstreams.

    python gateway_session.py <plan.json>

plan.json: {"command": "...", "args": [...], "env": {...}} (stdio: the client starts it) or
{"url": "http://IP:PORT/mcp"} (Streamable HTTP), and "mode" (the SDK's connect mode, "legacy"
by default). On a 2026-07-28 connection, where list changes come only to a client that listens,
the session opens `subscriptions/listen` for tool list changes first (`Client.listen`).

Reads one JSON command a line on stdin, answers one JSON line on stdout:
  {"op": "list"}                                -> {"reply": "list", "tools": [names]}
  {"op": "call", "name": N, "arguments": {...}} -> {"reply": "call", "isError": b, "text": t}
                                                   (or {"reply": "call", "error": "..."} when the
                                                   request itself failed)
Every notification the session surfaces is printed as {"notification": METHOD} when it comes
(a tool list change the subscription delivers as "notifications/tools/list_changed" too), a
transport error or a lost subscription as {"transportError": "..."}. Prints
{"ready": PROTOCOL_VERSION} once connected (and listening); ends, closing the session, at end of
input.
"""

import asyncio
import contextlib
import json
import os
import sys

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.subscriptions import ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

# How long the gateway may take to acknowledge `subscriptions/listen` (it is its first answer).
LISTEN_ACK_TIMEOUT = 20


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
    ) as client, anyio.create_task_group() as tasks:
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            listening = anyio.Event()

            async def follow() -> None:
                try:
                    async with contextlib.AsyncExitStack() as stack:
                        with anyio.fail_after(LISTEN_ACK_TIMEOUT):
                            subscription = await stack.enter_async_context(
                                client.listen(tools_list_changed=True)
                            )
                        listening.set()
                        async for event in subscription:
                            if isinstance(event, ToolsListChanged):
                                emit({"notification": "notifications/tools/list_changed"})
                    emit({"transportError": "the subscription ended"})
                except TimeoutError:
                    emit({"transportError": (
                        f"subscriptions/listen was not acknowledged within {LISTEN_ACK_TIMEOUT} s"
                    )})
                    listening.set()
                except Exception as e:
                    emit({"transportError": f"the subscription failed: {type(e).__name__}: {e}"})
                    listening.set()

            tasks.start_soon(follow)
            await listening.wait()
        emit({"ready": client.protocol_version})
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if not line:
                break
            if line.strip():
                emit(await answer(client, json.loads(line)))
        tasks.cancel_scope.cancel()


asyncio.run(main(sys.argv[1]))
