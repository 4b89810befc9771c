//! `mcp-transport-grpc`: reach an MCP server over gRPC (the JSON-RPC tunnel).
