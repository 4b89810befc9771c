"""MCP test server on the official Python SDK (mcp==2.3.0), spoken over stdio.

Used by the Rust interop tests. Run it with the interpreter that
`cargo xtask interop-setup` installs:

    $MCP_INTEROP_DIR/py/bin/python interop/python_server.py

What it offers (see interop/NOTES.md for the exact wire responses):

* tools
  - add(a: int, b: int)  -> the sum; text "3" plus structuredContent {"result": 3}
  - echo(text: str)      -> the text unchanged (also as structuredContent)
  - long_task(steps: int) -> one notifications/progress per step (when the
                            caller sent _meta.progressToken), then
                            "finished <steps> steps"
  - list_roots()         -> sends roots/list to the client, returns the root
                            URIs joined by "\n" ("" when there are none)
  - add_tool()           -> registers tool `dynamic` (returns "dynamic tool
                            called") and sends notifications/tools/list_changed
                            (on the connection and to subscriptions/listen streams)
  - greet()              -> asks the client for a name (a form elicitation: an
                            input_required result in the 2026-07-28 era, an
                            elicitation/create request before it) and returns
                            "Hello, <name>!"
* resource  data://greeting      -> "hello from python"
* template  data://items/{item_id} -> "item <item_id>"
* prompt    review(code: str)    -> one user message "Please review this code:\n\n<code>"

The server declares tools.listChanged = true.
"""

from __future__ import annotations

import warnings
from typing import Annotated

import anyio
from mcp.server import MCPServer, NotificationOptions
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.stdio import stdio_server
from pydantic import BaseModel

# list_roots() is deprecated by the 2026-07-28 revision but is exactly what
# handshake-era clients (and our interop tests) exercise.
warnings.filterwarnings("ignore", category=DeprecationWarning)
try:
    from mcp.shared.exceptions import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:  # pragma: no cover
    pass

server = MCPServer(name="python-interop-server", version="1.0.0", log_level="WARNING")

DYNAMIC_TOOL = "dynamic"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the given text unchanged."""
    return text


@server.tool()
async def long_task(steps: int, ctx: Context) -> str:
    """Run `steps` short steps, reporting progress after each one."""
    for i in range(1, steps + 1):
        await anyio.sleep(0.05)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return f"finished {steps} steps"


@server.tool()
async def list_roots(ctx: Context) -> str:
    """Ask the client for its roots (roots/list) and return their URIs, one per line."""
    result = await ctx.session.list_roots()
    return "\n".join(str(root.uri) for root in result.roots)


def dynamic() -> str:
    """A tool registered at runtime by add_tool."""
    return "dynamic tool called"


@server.tool()
async def add_tool(ctx: Context) -> str:
    """Register the `dynamic` tool and notify the client that the tool list changed."""
    names = {t.name for t in await server.list_tools()}
    if DYNAMIC_TOOL not in names:
        server.add_tool(dynamic, name=DYNAMIC_TOOL)
    # Handshake-era clients: notifications/tools/list_changed on the connection.
    await ctx.session.send_tool_list_changed()
    # 2026-07-28 clients listening via subscriptions/listen.
    await ctx.notify_tools_changed()
    return f"added tool {DYNAMIC_TOOL}"


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greet the user, asking for their name first."""
    return f"Hello, {who.name}!"


@server.resource("data://greeting", name="greeting", mime_type="text/plain")
def greeting() -> str:
    """A static greeting."""
    return "hello from python"


@server.resource("data://items/{item_id}", name="item", mime_type="text/plain")
def item(item_id: str) -> str:
    """One item, addressed by id."""
    return f"item {item_id}"


@server.prompt()
def review(code: str) -> str:
    """Ask for a review of the given code."""
    return f"Please review this code:\n\n{code}"


async def main() -> None:
    # MCPServer.run() advertises listChanged=false; run the low-level server
    # ourselves so tools.listChanged is declared.
    lowlevel = server._lowlevel_server  # noqa: SLF001 - no public knob in 2.3.0
    options = lowlevel.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
