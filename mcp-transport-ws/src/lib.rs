//! `mcp-transport-ws`: reach an MCP server over WebSocket.
