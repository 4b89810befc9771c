//! `mcp-resilience`: policies as layers around any [`mcp_core::McpService`].
