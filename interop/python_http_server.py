"""interop/python_server.py's tools, resources and prompt served over HTTP.

Same server object as the stdio test server (official Python SDK, mcp==2.3.0),
served with the SDK's own HTTP transports on the loopback interface:

    $MCP_INTEROP_DIR/py/bin/python interop/python_http_server.py streamable-http PORT
        -> Streamable HTTP at http://127.0.0.1:PORT/mcp
    $MCP_INTEROP_DIR/py/bin/python interop/python_http_server.py sse PORT
        -> HTTP+SSE (2024-11-05): GET http://127.0.0.1:PORT/sse,
           POSTs to the announced /messages/?session_id=...

As on stdio the server declares tools.listChanged = true. The SDK checks the
Host header (DNS-rebinding protection): use 127.0.0.1 or localhost in URLs.
"""

from __future__ import annotations

import sys

from mcp.server import NotificationOptions

from python_server import server  # the stdio test server's definitions

USAGE = "usage: python_http_server.py (streamable-http|sse) PORT"


def declare_tools_list_changed() -> None:
    """MCPServer advertises listChanged=false; the HTTP session runner asks the
    low-level server for its initialization options per session, so default
    their NotificationOptions."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 - no public knob in 2.3.0
    original = lowlevel.create_initialization_options

    def create_initialization_options(notification_options=None, *args, **kwargs):
        if notification_options is None:
            notification_options = NotificationOptions(tools_changed=True)
        return original(notification_options, *args, **kwargs)

    lowlevel.create_initialization_options = create_initialization_options


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in ("streamable-http", "sse"):
        sys.exit(USAGE)
    transport, port = sys.argv[1], int(sys.argv[2])
    declare_tools_list_changed()
    server.run(transport, host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
