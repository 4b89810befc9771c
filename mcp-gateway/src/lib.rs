//! `mcp-gateway`: the whole client layer ([`mcp_client::McpClient`]) as one MCP server, so a
//! harness in any language gets supervision, pools, retries, breakers, routing, OAuth, fresh
//! discovery caches and metrics by configuring a single server (`mcph serve`).
//!
//! - [`Gateway`] (`gateway.rs`): the facade's catalog — every upstream's tools, prompts,
//!   resources and templates — mirrored into an in-process server
//!   ([`mcp_transport_local::LocalServer`], which speaks both protocol eras), rebuilt when the
//!   upstreams' lists change; [`GatewayOptions`].
//! - [`names`]: the names downstream clients see ([`Prefixing`]: an upstream's own names when
//!   unambiguous, `server__tool` otherwise or when asked).
//! - `upstream.rs`: each downstream request forwarded through the facade — tool calls through
//!   the server's whole stack with progress relayed and cancellation passed on, prompts,
//!   reads, completions — and failures in the words agents are shown.
//! - [`Relay`] (`relay.rs`): what upstream servers ask of the client (sampling, elicitation,
//!   roots) and their logs, passed to the downstream call they serve.
//! - Downstream transports: [`serve_stdio`] / [`serve_stream`] (`stdio.rs`), and
//!   [`http`]: Streamable HTTP in both eras ([`http::serve_http`]; `hub.rs` the connection a
//!   session or the stateless clients share and where each message goes, `body.rs` the event
//!   streams).
//! - [`admin`]: the operations panel — one page, live from the metrics snapshot, and
//!   `/metrics` for Prometheus.

#![warn(missing_docs)]

pub mod admin;
mod gateway;
pub mod http;
pub mod names;
mod relay;
mod serving;
mod stdio;
mod upstream;

pub use gateway::{Gateway, GatewayError, GatewayOptions};
pub use names::Prefixing;
pub use relay::Relay;
pub use stdio::{serve_stdio, serve_stream, MAX_LINE_BYTES};
