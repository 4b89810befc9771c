//! `mcp-session`: the client session engine — one MCP session over one
//! [`Transport`](mcp_core::Transport) of any transport crate.
//!
//! [`ClientSession::connect`] splits the transport, starts the session's reader task, and opens
//! the session in the server's era: a `server/discover` probe for a modern (2026-07-28) server,
//! the `initialize` handshake for a legacy one. After that, any number of requests may be in
//! flight from any number of tasks, and callers never need to know the era. The session is the
//! innermost [`McpService`](mcp_core::McpService): the typed methods of
//! [`McpServiceExt`](mcp_core::McpServiceExt) and every policy layer work on it.
//!
//! Every request gets a deadline that starts when it is issued and covers all of it — waiting
//! for the transport to accept it (a full stdio pipe, an HTTP server that never sends headers),
//! and waiting for the response — plus a progress token, and a `notifications/cancelled` to the
//! server if it times out or its future is dropped. `notify` and `close` are bounded too. When the
//! transport ends, every pending request fails at once with a
//! [`ErrorKind::Network`](mcp_core::ErrorKind::Network) error that says why.
//!
//! Tasks: the reader task (dispatches everything the server sends), an outbox task (sends the
//! cancellations and replies that synchronous code cannot await), one task per server→client
//! request (at most [`SessionOptions::max_concurrent_server_requests`]), and in the modern era
//! the listener task that keeps `subscriptions/listen` open. All are owned by the session and
//! aborted when the last [`ClientSession`] handle is dropped.
//!
//! Where things are:
//! - `session.rs` the lifecycle; `session/era.rs` the two eras (the probe, the fallback,
//!   [`EraMemo`]); `session/meta.rs` the per-request `_meta`; `session/modern.rs` modern
//!   calls (removed methods, multi round-trip requests; a `tools/call` the server runs as a
//!   task answered with its handle, which the `mcp-tasks` layer follows);
//!   `session/input.rs` input requests answered through the handler
//!   ([`answer_input_requests`]); `session/listen.rs` the modern `subscriptions/listen`
//!   stream; `session/request.rs` one round trip (a request and its answer) under its one
//!   deadline. The engine's own retries, each where only it can decide and said why:
//!   `session/session_loss.rs` a request replayed after the server forgot the session,
//!   `session/refusals.rs` a modern request sent again after a version or header refusal;
//!   `session/in_place.rs` requests a transport answers in the caller's task;
//!   `session/reader.rs` the reader and outbox tasks; `session/server_requests.rs`
//!   server→client requests under a cap, answered by the [`ClientHandler`];
//!   `session/pending.rs` the pending table; `session/notifications.rs` what subscribers get;
//!   `session/options.rs` [`SessionOptions`].
//! - [`connector`]: how pools and supervisors open one more session ([`SessionConnector`],
//!   [`HandshakeConnector`]).
//! - [`error_codes`]: how a server's error codes map to error kinds ([`ErrorCodeTable`]).
//! - [`ChannelTransport`]: an in-memory transport pair, for in-process servers and tests.
//! - [`ListCache`]: a server's list kept until it changes or a new session starts.
//! - Protocol extensions live beside the engine: the Tasks extension is `mcp-tasks` (the session
//!   only declares it, [`SessionOptions::tasks`], and hands a task's handle back), the Skills
//!   extension `mcp-skills`.
//!
//! ```no_run
//! # async fn run(transport: impl mcp_core::Transport) -> Result<(), mcp_core::Error> {
//! use mcp_core::{McpServiceExt, RequestOptions};
//! use mcp_session::{ClientSession, SessionOptions};
//! let session = ClientSession::connect(transport, (), SessionOptions::default()).await?;
//! for tool in session.list_all_tools(RequestOptions::new()).await? {
//!     println!("{}", tool.name);
//! }
//! let arguments = Some(serde_json::json!({"text": "hi"}));
//! let result = session.call_tool("echo", arguments, RequestOptions::new()).await?;
//! println!("{}", result.text());
//! session.close().await;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod channel;
pub mod connector;
pub mod error_codes;
mod list_cache;
mod session;

pub use channel::{ChannelReceiver, ChannelSender, ChannelTransport, ServerEnd};
pub use connector::{
    session_connector_fn, HandshakeConnector, SessionConnector, SessionConnectorFn,
};
pub use error_codes::{ErrorCodeRule, ErrorCodeTable};
pub use list_cache::{Fetched, ListCache};
pub use session::{
    answer_input_requests, result_type, ClientHandler, ClientSession, EraMemo, NotificationEvent,
    NotificationStream, ServerNotification, SessionOptions, StaticRoots,
    MAX_SERVER_REQUEST_ID_BYTES, RESULT_TYPE_TASK, TASKS_EXTENSION,
};
