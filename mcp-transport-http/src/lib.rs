//! `mcp-transport-http`: reach an MCP server over HTTP.
//!
//! - [`StreamableHttpTransport`]: Streamable HTTP (MCP 2025-11-25) — POSTs with JSON or SSE
//!   answers, the standalone GET stream, session ids, protocol-version headers, resumption with
//!   `Last-Event-ID`, DELETE on close, credentials through [`mcp_core::AuthProvider`].
//! - [`LegacySseTransport`]: the HTTP+SSE transport of protocol 2024-11-05.
//! - [`HttpTransport`]: Streamable HTTP with automatic fallback to legacy SSE (400/404/405 on
//!   the first POST), remembering per server what worked ([`HttpFlavorMemo`]).
//! - [`HttpServerConfig`]: the URL, headers, credentials and limits.
//! - [`sse`]: the Server-Sent Events parser both HTTP transports read with.

#![warn(missing_docs)]

mod auto;
mod config;
mod exchange;
mod legacy;
pub mod sse;
mod streamable;

pub use auto::{AutoSender, HttpFlavor, HttpFlavorMemo, HttpTransport};
pub use config::HttpServerConfig;
pub use legacy::{LegacySender, LegacySseTransport};
pub use streamable::{HttpReceiver, HttpSender, StreamableHttpTransport};
