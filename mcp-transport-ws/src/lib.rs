//! `mcp-transport-ws`: reach an MCP server over WebSocket.
//!
//! MCP has no official WebSocket binding; this crate speaks what the official SDKs' former
//! WebSocket transports did: the `mcp` subprotocol (the upgrade fails clearly when a server
//! does not select it), one JSON-RPC message per UTF-8 text frame (never batched, never
//! binary), credentials on the upgrade request, keepalive pings, and close code 1000 on close.
//! The socket is the session: no session id, no resumption.
//!
//! - [`WebSocketServerConfig`]: URL (`ws://`, `wss://`), headers, credentials, limits,
//!   keepalive.
//! - [`WebSocketTransport`]: the [`mcp_core::Transport`]; [`WebSocketSender`] queues text
//!   frames on the outbound queue (mcp-wire's) for the writer task, [`WebSocketReceiver`]
//!   yields what the reader task read.
//! - [`WebSocketConnector`]: a new WebSocket per connection, for pools, supervisors and the
//!   facade's registry of transports (`type: "ws"`, `"websocket"`, or a `ws://` / `wss://`
//!   URL).
//! - `handshake`: the upgrade request (subprotocol, headers, credentials) and its answer;
//!   `connect`: the attempt under its deadline and the credential retry after 401/403;
//!   `stream`: TCP and TLS (rustls); `reader`, `writer`: the two tasks; `close`: close codes;
//!   `state`: what the tasks and halves share.
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp_core::Error> {
//! use mcp_core::{McpServiceExt, RequestOptions};
//! use mcp_session::{ClientSession, SessionOptions};
//! use mcp_transport_ws::{WebSocketServerConfig, WebSocketTransport};
//!
//! let config = WebSocketServerConfig::new("wss://mcp.example.com/ws");
//! let transport = WebSocketTransport::connect(config).await?;
//! let session = ClientSession::connect(transport, (), SessionOptions::default()).await?;
//! println!("{:?}", session.list_all_tools(RequestOptions::new()).await?);
//! session.close().await;
//! # Ok(()) }
//! ```
//!
//! Errors: a server close frame 1008 is [`Unauthorized`](mcp_core::TransportErrorKind),
//! 1011 a server error, any other close or a dropped connection `PeerGone` (with the code and
//! reason); a message over `max_message_size` fails the connection (`MessageTooLarge`, close
//! 1009) before it is buffered; a binary frame fails it too (close 1003); a text frame that is
//! not JSON-RPC is a recoverable `InvalidMessage` and the connection goes on. For a session
//! on this transport: a fatal error ends the session (every pending call fails with it at
//! once, later calls fail at once); a recoverable one fails the request it names (its `id`
//! is read even when the rest of the frame is broken or nested too deep); an answer for no
//! waiting request is dropped.

#![warn(missing_docs)]

mod close;
mod config;
mod connect;
mod connector;
mod handshake;
mod reader;
mod state;
mod stream;
mod transport;
mod writer;

pub use config::WebSocketServerConfig;
pub use connector::WebSocketConnector;
pub use handshake::SUBPROTOCOL;
pub use transport::{WebSocketReceiver, WebSocketSender, WebSocketTransport};
