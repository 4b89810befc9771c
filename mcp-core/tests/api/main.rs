//! mcp-core through its public API: the JSON-RPC message model, the protocol types, the
//! service seam, errors, versions and the small helpers, one module each.

mod attachments;
mod error;
mod jsonrpc;
mod pagination;
mod service;
mod time;
mod types;
mod version;
