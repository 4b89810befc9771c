//! `mcp-pool`: pools of MCP sessions per server.
