//! `mcp-core`: the protocol core of the MCP client layer.
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 messages; parameters and results stay raw JSON until asked for.
//! - [`types`]: the MCP types of protocol revision 2025-11-25 (readable back to 2024-11-05).
//! - [`version`]: protocol versions and their negotiation.
//! - [`transport`]: the [`Transport`] trait every transport crate implements, and
//!   [`ChannelTransport`], an in-memory pair for in-process servers and tests.
//! - [`service`]: the seam policies compose around — [`Operation`], [`McpService`], [`Layer`] —
//!   and the typed MCP methods on any service ([`McpServiceExt`]).
//! - [`session`]: the client session engine, [`ClientSession`] (the innermost service).
//! - [`error`]: the error taxonomy, [`Error`] and [`ErrorKind`].
//! - [`time`]: deadlines that saturate instead of overflowing; [`sync`]: the poison-tolerant lock.
//! - [`connector`]: how to open one more connection ([`TransportConnector`]) or session
//!   ([`Connector`]) to a server, for pools and supervisors, and the factories a registry of
//!   transports holds ([`TransportFactory`]).
//! - [`auth`]: the seam through which HTTP-based transports get credentials ([`AuthProvider`]).
//! - [`redact`]: credential-shaped values taken out of a peer's text before it is shown.
//! - [`extensions`]: protocol extensions — the Tasks extension ([`extensions::tasks`]).
//!
//! ```no_run
//! # async fn run(transport: impl mcp_core::Transport) -> Result<(), mcp_core::Error> {
//! use mcp_core::{ClientSession, McpServiceExt, RequestOptions, SessionOptions};
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

pub mod auth;
pub mod connector;
pub mod error;
pub mod extensions;
pub mod jsonrpc;
pub mod redact;
pub mod service;
pub mod session;
pub mod sync;
pub mod time;
pub mod transport;
pub mod types;
pub mod version;

pub use auth::{
    AuthChallenge, AuthProvider, AuthTarget, AuthorizationValue, ChallengeOutcome, Credentials,
    DpopProof, StaticBearer, DPOP_HEADER, DPOP_NONCE_HEADER,
};
pub use connector::{
    connector_fn, Connector, ConnectorFn, Endpoint, SessionConnector, TransportConnector,
    TransportFactory, TransportSpec,
};
pub use error::{Delivery, Error, ErrorCodeRule, ErrorCodeTable, ErrorKind};
pub use jsonrpc::{
    ErrorObject, KeptTyped, Message, Notification, Payload, Request, RequestId, Response,
    TypedPayload,
};
pub use service::{
    is_idempotent_method, BoxLayer, BoxService, Identity, Layer, McpService, McpServiceExt,
    Operation, Stack,
};
pub use session::{
    result_type, ClientHandler, ClientSession, EraMemo, NotificationEvent, NotificationStream,
    ProgressCallback, RequestOptions, ServerNotification, SessionOptions, StaticRoots,
    TraceContext,
};
pub use transport::{
    BoxTransport, ChannelTransport, InPlaceAnswer, OversizedMessage, RequestMeta, ServerEnd,
    Transport, TransportError, TransportErrorKind, TransportReceiver, TransportSender,
};
pub use version::{Era, ProtocolVersion};
