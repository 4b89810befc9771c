"""MCP test server on the official Python SDK 1.x WebSocket transport.

The WebSocket server transport (`mcp.server.websocket.websocket_server`) was
removed in mcp 2.0, so this runs on mcp==1.30.0 (+ websockets for uvicorn),
installed by `cargo xtask interop-setup` into its own venv:

    $MCP_INTEROP_DIR/py-ws/bin/python interop/py_ws_server.py PORT
        -> ws://127.0.0.1:PORT/mcp (subprotocol `mcp`), served by uvicorn

The port is chosen by the caller (bound on 127.0.0.1 only); once the socket
accepts connections uvicorn logs "Uvicorn running on http://127.0.0.1:PORT"
to stderr. Every WebSocket connection is one MCP session; when one ends the
server writes "mcp websocket session ended" to stderr. A WebSocket upgrade on
any other path is refused (403), an HTTP request gets 404.

What it offers:

* tools
  - add(a: int, b: int)   -> the sum as text ("3") and structuredContent
  - echo(text: str)       -> the text unchanged
  - long_task(steps: int) -> one notifications/progress per step (when the
                             caller sent _meta.progressToken), then
                             "finished <steps> steps"
"""

from __future__ import annotations

import sys
import warnings

import anyio
import uvicorn
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.websocket import websocket_server

# The transport is deprecated in 1.x (removed in 2.0); that is the point of this server.
warnings.filterwarnings("ignore", category=DeprecationWarning)

USAGE = "usage: py_ws_server.py PORT"
PATH = "/mcp"

mcp = FastMCP(name="python-ws-interop-server", log_level="WARNING")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@mcp.tool()
def echo(text: str) -> str:
    """Returns the text unchanged."""
    return text


@mcp.tool()
async def long_task(steps: int, ctx: Context) -> str:
    """Reports progress once per step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}/{steps}")
        await anyio.sleep(0.01)
    return f"finished {steps} steps"


async def app(scope, receive, send):
    """A bare ASGI app: the MCP WebSocket endpoint at PATH, 404 for anything else."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] == "websocket" and scope["path"] == PATH:
        lowlevel = mcp._mcp_server  # noqa: SLF001 - FastMCP has no public WebSocket runner
        try:
            async with websocket_server(scope, receive, send) as (read, write):
                await lowlevel.run(read, write, lowlevel.create_initialization_options())
        finally:
            # Tests wait for this line: the session saw the connection end.
            print("mcp websocket session ended", file=sys.stderr, flush=True)
        return
    if scope["type"] == "websocket":
        # Closing before accepting makes the ASGI server refuse the upgrade (403).
        await send({"type": "websocket.close", "code": 1008})
        return
    await send({"type": "http.response.start", "status": 404, "headers": []})
    await send({"type": "http.response.body", "body": b"not found"})


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(USAGE)
    port = int(sys.argv[1])
    uvicorn.run(app, host="127.0.0.1", port=port, ws="websockets-sansio", log_level="info")


if __name__ == "__main__":
    main()
