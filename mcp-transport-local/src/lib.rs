//! `mcp-transport-local`: MCP servers in the same process.
