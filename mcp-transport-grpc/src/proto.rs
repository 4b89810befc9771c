//! The code generated from `proto/mcp/transport/v1/mcp.proto` (package `mcp.transport.v1`):
//! [`JsonRpcLine`], the client [`mcp_client::McpClient`] and, with the `server` feature, the
//! service trait `mcp_server::Mcp` and its tower service `mcp_server::McpServer`.
//!
//! Committed rather than generated at build time, so building needs no `protoc` and no proto
//! compiler at all; `tests/generated_code.rs` regenerates it (pure Rust: `protox` +
//! `tonic-prost-build`) and fails when it differs. For interoperating code that wants the raw
//! stream (a test peer, a proxy).

#![allow(missing_docs)]

include!("generated/mcp.transport.v1.rs");
