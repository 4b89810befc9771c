//! `mcp-transport-grpc`: reach an MCP server over gRPC — the JSON-RPC tunnel
//! `mcp.transport.v1.Mcp/Session`, wire-compatible with the npm package `mcp-grpc-transport`.
//!
//! One bidirectional-streaming `Session` call is one MCP connection; every stream item (a
//! [`JsonRpcLine`](proto::JsonRpcLine)) carries exactly one JSON-RPC message as a JSON object
//! (never a batch); its two compatibility fields are sent empty and ignored. The client
//! half-closes its stream to end the connection.
//!
//! - [`GrpcServerConfig`]: the endpoint (`http://`, `https://`; `grpc://`, `grpcs://`), metadata
//!   headers, credentials ([`mcp_wire::AuthProvider`]), connect timeout (10 s), message cap
//!   (16 MiB, both ways; tonic's 4 MiB default is raised), HTTP/2 keepalive (30 s, 10 s
//!   timeout), extra TLS roots.
//! - [`GrpcTransport`]: the [`mcp_core::Transport`] over one call ([`GrpcSender`],
//!   [`GrpcReceiver`]).
//! - [`GrpcConnector`]: a new call per connection, for pools, supervisors and the facade's
//!   registry of transports (`type: "grpc"`, `grpc://` and `grpcs://` URLs).
//! - [`proto`]: the generated code (committed; `tests/generated_code.rs` checks it against
//!   `proto/mcp/transport/v1/mcp.proto`).
//! - `GrpcBridge` (feature `server`): serves `Session` on an address and pipes each call to a
//!   new connection of any [`mcp_core::TransportConnector`] — a stdio server put on the
//!   network.
//! - inside: `call` (the call task: metadata, credentials, one retry after a refusal),
//!   `request_stream` (mcp-wire's outbound queue read as the request stream, and its replay),
//!   `line` (one message per line), `status` (gRPC statuses as transport errors).
//! - `fuzzing` (hidden): the line codec reached without a channel, for the targets in `fuzz/`.
//!
//! **Metadata.** Every call carries the configured headers, `authorization` (and `dpop` for
//! DPoP-bound tokens) from the provider, asked for `POST <endpoint>/mcp.transport.v1.Mcp/Session`,
//! and `mcp-protocol-version`. gRPC fixes metadata when a call starts, and the call starts with
//! the first message: for a session that probes for the 2026-07-28 era that is the probe's
//! version; a session that goes straight to `initialize` sends none (the version is negotiated
//! inside the stream). Later [`set_protocol_version`](mcp_core::TransportSender::set_protocol_version)
//! calls change nothing on the wire.
//!
//! **Errors.** UNAUTHENTICATED and PERMISSION_DENIED are
//! [`Unauthorized`](mcp_core::TransportErrorKind::Unauthorized): the provider hears the refusal
//! (as 401/403, with any `www-authenticate` and `dpop-nonce` metadata) and, when it has new
//! credentials, the call is made once more with the messages sent so far — only if every one
//! is safe to send twice (notifications, the handshake, `ping`, lists, reads): gRPC servers
//! send response headers with their first message, so a refusal before them may come from a
//! handler that already read, say, a `tools/call`. Any other status ends the connection with
//! an error naming its code and message; only UNIMPLEMENTED and a connection that could not be
//! made count as never delivered. A line that is not a JSON-RPC object is a recoverable
//! `InvalidMessage`; a message over the cap is `MessageTooLarge` (refused before sending;
//! received, a recoverable error naming its request, or — past gRPC's framing allowance — the
//! end of the call); a message tonic cannot decode (a `line` that is not UTF-8, an
//! unnegotiated compressed message) is a fatal `InvalidMessage`. A peer that goes away fails
//! the connection at once; keepalive PINGs notice one that vanished silently. For a session on
//! this transport: a fatal error ends the session (every pending call fails with it at once);
//! a recoverable one fails the request it names; an answer for no waiting request is dropped.
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp_core::Error> {
//! use mcp_core::{McpServiceExt, RequestOptions};
//! use mcp_session::{ClientSession, SessionOptions};
//! use mcp_transport_grpc::{GrpcServerConfig, GrpcTransport};
//!
//! let config = GrpcServerConfig::new("grpc://127.0.0.1:50051").header("x-api-key", "…");
//! let transport = GrpcTransport::connect(config).await?;
//! let session = ClientSession::connect(transport, (), SessionOptions::default()).await?;
//! println!("{:?}", session.list_all_tools(RequestOptions::new()).await?);
//! session.close().await;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

#[cfg(feature = "server")]
mod bridge;
mod call;
mod config;
mod connector;
#[doc(hidden)]
pub mod fuzzing;
mod line;
pub mod proto;
mod request_stream;
mod status;
mod transport;

#[cfg(feature = "server")]
pub use bridge::{GrpcBridge, GrpcBridgeHandle};
pub use config::{GrpcServerConfig, DEFAULT_MAX_MESSAGE_SIZE};
pub use connector::GrpcConnector;
pub use transport::{GrpcReceiver, GrpcSender, GrpcTransport};

/// The gRPC method every connection calls (the HTTP/2 path of its POST).
pub const SESSION_PATH: &str = "/mcp.transport.v1.Mcp/Session";
