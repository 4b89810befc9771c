//! `mcp-core`: what every crate of the MCP client layer shares, and nothing more.
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 messages; parameters and results stay raw JSON until asked for.
//! - [`types`]: the MCP types of both eras (2026-07-28; 2025-11-25, readable back to 2024-11-05).
//! - [`version`]: protocol versions, their eras and negotiation.
//! - [`error`]: the error taxonomy, [`Error`] and [`ErrorKind`].
//! - [`service`]: the seam policies compose around — [`Operation`] (with its [`RequestOptions`]),
//!   [`McpService`], [`Layer`] — and the typed MCP methods on any service ([`McpServiceExt`]).
//! - [`transport`]: the [`Transport`] traits of every transport crate, and [`TransportConnector`].
//! - [`time`]: deadlines that saturate instead of overflowing; [`sync`]: the poison-tolerant lock.
//!
//! The session engine speaking the protocol over a transport is `mcp-session`; what transports
//! share beyond their traits (the credentials seam, reading broken and oversized messages, showing
//! a peer's text redacted) is `mcp-wire`; policies, extensions and the facade build on them.
//!
//! ```no_run
//! # async fn run(service: impl mcp_core::McpService) -> Result<(), mcp_core::Error> {
//! use mcp_core::{McpServiceExt, RequestOptions};
//! // `service`: a session (`mcp_session::ClientSession`), or any stack of layers around one.
//! for tool in service.list_all_tools(RequestOptions::new()).await? {
//!     println!("{}", tool.name);
//! }
//! let arguments = Some(serde_json::json!({"text": "hi"}));
//! let result = service.call_tool("echo", arguments, RequestOptions::new()).await?;
//! println!("{}", result.text());
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod error;
pub mod jsonrpc;
pub mod service;
pub mod sync;
pub mod time;
pub mod transport;
pub mod types;
pub mod version;

pub use error::{Delivery, Error, ErrorKind};
pub use jsonrpc::{
    ErrorObject, Message, Notification, Payload, Request, RequestId, Response, TypedPayload,
    TypedResult,
};
pub use service::{
    is_idempotent_method, Attachments, BoxLayer, BoxService, Identity, Layer, McpService,
    McpServiceExt, Operation, ProgressCallback, RequestOptions, Stack, TraceContext,
};
pub use transport::{
    BoxTransport, InPlaceAnswer, RequestMeta, Transport, TransportCapabilities, TransportConnector,
    TransportError, TransportErrorKind, TransportReceiver, TransportSender,
};
pub use version::{Era, ProtocolVersion};
