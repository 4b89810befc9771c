"""A small FastMCP (PyPI fastmcp==4.2.3) server served over Streamable HTTP.

Used by the Rust HTTP interop tests. Run it with the venv that
`cargo xtask interop-setup` installs:

    $MCP_INTEROP_DIR/fastmcp/bin/python interop/fastmcp_server.py PORT

It listens on http://127.0.0.1:PORT/mcp (loopback only) and offers:

* multiply(a: int, b: int) -> a * b   (text "6", structuredContent {"result": 6})
* greet(name: str)          -> "Hello, <name>!"
* count_up(steps: int)      -> one notifications/progress per step (progress i,
                               total steps, message "step i/steps") when the
                               caller sent _meta.progressToken, then
                               "counted to <steps>"
"""

from __future__ import annotations

import asyncio
import os
import sys

# No banner, no update check, nothing reaching out to the network.
os.environ.setdefault("FASTMCP_SHOW_CLI_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

from fastmcp import Context, FastMCP  # noqa: E402

mcp = FastMCP("fastmcp-interop-server")


@mcp.tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@mcp.tool
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}!"


@mcp.tool
async def count_up(steps: int, ctx: Context) -> str:
    """Count to `steps`, reporting progress after each step."""
    for i in range(1, steps + 1):
        await asyncio.sleep(0.05)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return f"counted to {steps}"


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    mcp.run(transport="http", host="127.0.0.1", port=port, show_banner=False)
