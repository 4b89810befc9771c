//! `mcp-transport-http`: reach an MCP server over HTTP.
//!
//! - [`StreamableHttpTransport`]: Streamable HTTP in both eras — POSTs with JSON or SSE
//!   answers and credentials through [`mcp_wire::AuthProvider`]; for 2025-11-25 and older the
//!   standalone GET stream, session ids, resumption with `Last-Event-ID` and DELETE on close;
//!   for 2026-07-28 no session, the request metadata headers ([`headers`]), modern JSON-RPC
//!   errors read from 4xx answers, and cancellation by closing the request's stream.
//! - [`HttpSseTransport`]: the HTTP+SSE transport of protocol 2024-11-05.
//! - [`HttpTransport`]: Streamable HTTP with automatic fallback to HTTP+SSE (400/404/405 on
//!   the first POST), remembering per server what worked ([`HttpFlavorMemo`]).
//! - [`HttpServerConfig`]: the URL, headers, credentials and limits.
//! - [`HttpConnector`]: connections for pools, supervisors and the facade's registry of
//!   transports (`type: "http"`, `"sse"`, or a URL to detect: [`HttpKind`]), sharing what they
//!   learn.
//! - [`sse`]: the Server-Sent Events parser both HTTP transports read with.
//!
//! Underneath (private): `exchange` (one credentialed request: credentials per hop,
//! challenges, redirects by `redirect`'s rules), `client` (the HTTP client: the endpoint parsed
//! once, pooled HTTP/1.1 or HTTP/2 connections, the most recently used reused first) and `connect` (TCP, proxies from the environment, TLS, the
//! HTTP/1.1 or HTTP/2 handshake).

#![warn(missing_docs)]

mod auto;
mod client;
mod config;
mod connect;
mod connector;
mod exchange;
pub mod headers;
mod http_sse;
mod incoming;
mod redirect;
pub mod sse;
mod streamable;

pub use auto::{AutoSender, HttpFlavor, HttpFlavorMemo, HttpTransport};
pub use config::HttpServerConfig;
pub use connector::{HttpConnector, HttpKind};
pub use http_sse::{HttpSseSender, HttpSseTransport};
pub use streamable::{HttpReceiver, HttpSender, StreamableHttpTransport, MAX_SESSION_ID_LEN};
