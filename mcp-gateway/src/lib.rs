//! `mcp-gateway`: the whole client layer ([`mcp_client::McpClient`]) as one MCP server, so a
//! harness in any language gets supervision, pools, retries, breakers, routing, OAuth, fresh
//! discovery caches and metrics by configuring a single server (`mcph serve`).
//!
//! - `admin/`: the operations panel — one page, live from the metrics snapshot, and
//!   `/metrics` for Prometheus.

#![warn(missing_docs)]

pub mod admin;
