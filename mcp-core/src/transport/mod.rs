//! The one seam between the session engine and the six ways of reaching a server.
//!
//! # The contract
//!
//! A transport moves whole JSON-RPC [`Message`]s, never bytes: each implementation frames its own
//! bytes (newline-delimited JSON on stdio, HTTP bodies and SSE events, WebSocket text frames, gRPC
//! stream items) or none at all (the in-process transport passes messages by move, so a
//! [`Payload::Value`] is never serialized).
//!
//! **Connecting** is each transport's own constructor (`StdioTransport::spawn(config)`, …): what
//! connecting needs differs per transport, so it is not a method of [`Transport`]; a
//! [`TransportConnector`] holds a transport's configuration and connects once more on each call
//! (for pools and supervisors). A constructed transport is
//! connected and ready; the session engine then [`split`](Transport::split)s it:
//!
//! - the [`TransportSender`] is shared (`&self`) by every caller. [`send`](TransportSender::send)
//!   returns once the message is handed to the transport (queued or written) — never after waiting
//!   for a reply — so many requests can be in flight at once. Dropping a `send` future before it
//!   completes may or may not have sent the message; the engine treats such a request as cancelled.
//! - the [`TransportReceiver`] is owned by the session's single reader task, which calls
//!   [`receive`](TransportReceiver::receive) in a loop. `receive` yields every message the peer
//!   sends, in order, whatever channel it arrived on (a Streamable HTTP POST stream, the standalone
//!   GET stream, a HTTP+SSE `message` event).
//!
//! **Ownership.** The two halves together own every resource of the connection (child process,
//! sockets, background tasks). When both halves are dropped, the transport must release them
//! without being awaited: kill its child process group, abort its tasks, drop its sockets.
//!
//! **Closing.** [`TransportSender::close`] is the graceful path and is idempotent: it stops
//! accepting sends, ends the connection the way the transport's peers expect (stdio: close stdin,
//! wait, SIGTERM, SIGKILL after a grace period; Streamable HTTP: DELETE the session; WebSocket:
//! close frame 1000; gRPC: half-close), releases every resource, and returns within a bounded time.
//! After a close — or when the peer goes away on its own — `receive` returns `None` (clean end) or
//! `Some(Err(e))` with [`TransportError::is_fatal`] (the peer died: the error says how, e.g. the exit
//! status and stderr tail of a child). The engine then fails every pending request at once.
//!
//! **Non-fatal errors.** `receive` may yield a non-fatal error for one bad message (too large, not
//! JSON-RPC) and keep going; when it knows which request the bad message answered it names it
//! ([`TransportError::request_id`]) so that request fails instead of waiting for its timeout.
//!
//! **Sessions** ([`set_protocol_version`](TransportSender::set_protocol_version)): a transport
//! whose server forgot the session (HTTP 404 with a session id) reports
//! [`TransportErrorKind::SessionExpired`]; only the engine can re-initialize, on the same
//! transport, and send the request again.
//!
//! **Cancellation safety.** `receive` is only ever awaited to completion or dropped together with
//! the whole receiver, so implementations need not be cancel-safe.
//!
//! **Answering in place** ([`answer_in_place`](TransportSender::answer_in_place), optional): the
//! answer as a future awaited in the caller's task, with no reader-task hop.

mod connector;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

pub use connector::TransportConnector;

use crate::jsonrpc::{ErrorObject, Message, Payload, Request, RequestId};
use crate::types::LoggingLevel;
use crate::version::ProtocolVersion;

/// An in-process server's answer to one request, awaited in the caller's task (see
/// [`TransportSender::answer_in_place`]): the server's result or JSON-RPC error, or a transport
/// failure (the connection is closed, the server died).
pub type InPlaceAnswer = Pin<
    Box<dyn Future<Output = Result<Result<Payload, ErrorObject>, TransportError>> + Send + 'static>,
>;

/// What the session adds to a request's `params._meta`, as values: handed to
/// [`TransportSender::answer_in_place`] instead of spliced into the parameters. A server reads
/// the request's own `params._meta` (what the caller put there) together with it, as if
/// spliced: the caller's `progressToken`, log level and trace context win, the session's
/// protocol members win. A transport that passes the request on to another process must put
/// these members into its `_meta`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestMeta<'a> {
    /// `progressToken`: the request's own id (every request but `initialize`).
    pub progress_token: Option<i64>,
    /// Modern era: the protocol members — `io.modelcontextprotocol/protocolVersion`,
    /// `…/clientCapabilities`, `…/clientInfo` — the same for every request of the session
    /// (clone the `Arc` to keep them).
    pub modern: Option<&'a Arc<Map<String, Value>>>,
    /// Modern era: `io.modelcontextprotocol/logLevel`, once `logging/setLevel` chose one.
    pub log_level: Option<LoggingLevel>,
    /// Both eras: `traceparent` and `tracestate`, when the request's options carry a
    /// [`TraceContext`](crate::service::TraceContext).
    pub trace_context: Option<&'a crate::service::TraceContext>,
}

/// A connected transport, ready to be split into its two halves.
pub trait Transport: Send + 'static {
    /// The sending half.
    type Sender: TransportSender;
    /// The receiving half.
    type Receiver: TransportReceiver;

    /// Splits the transport. The halves share ownership of the connection's resources.
    fn split(self) -> (Self::Sender, Self::Receiver);

    /// Splits the transport into halves behind trait objects (what the session keeps).
    fn into_boxed(self) -> (Box<dyn TransportSender>, Box<dyn TransportReceiver>)
    where
        Self: Sized,
    {
        let (sender, receiver) = self.split();
        (Box::new(sender), Box::new(receiver))
    }
}

/// Any transport behind trait objects, so that code choosing a transport at run time (a
/// [`TransportConnector`], a registry of them) hands out
/// one type.
pub struct BoxTransport {
    sender: Box<dyn TransportSender>,
    receiver: Box<dyn TransportReceiver>,
}

impl BoxTransport {
    /// Boxes `transport`.
    pub fn new(transport: impl Transport) -> BoxTransport {
        let (sender, receiver) = transport.into_boxed();
        BoxTransport { sender, receiver }
    }

    /// The transport's name (see [`TransportCapabilities::name`]).
    pub fn transport_name(&self) -> &'static str {
        self.sender.capabilities().name
    }
}

impl fmt::Debug for BoxTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoxTransport")
            .field("transport", &self.sender.capabilities().name)
            .finish_non_exhaustive()
    }
}

impl Transport for BoxTransport {
    type Sender = Box<dyn TransportSender>;
    type Receiver = Box<dyn TransportReceiver>;

    fn split(self) -> (Self::Sender, Self::Receiver) {
        (self.sender, self.receiver)
    }

    fn into_boxed(self) -> (Box<dyn TransportSender>, Box<dyn TransportReceiver>) {
        (self.sender, self.receiver)
    }
}

#[async_trait]
impl TransportSender for Box<dyn TransportSender> {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        (**self).send(message).await
    }

    async fn close(&self) -> Result<(), TransportError> {
        (**self).close().await
    }

    fn capabilities(&self) -> TransportCapabilities {
        (**self).capabilities()
    }

    fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        (**self).set_protocol_version(version)
    }

    fn answer_in_place(
        &self,
        request: Request,
        meta: RequestMeta<'_>,
    ) -> Result<InPlaceAnswer, Request> {
        (**self).answer_in_place(request, meta)
    }
}

#[async_trait]
impl TransportReceiver for Box<dyn TransportReceiver> {
    async fn receive(&mut self) -> Option<Result<Message, TransportError>> {
        (**self).receive().await
    }
}

/// The sending half of a transport; shared by all callers of a session.
#[async_trait]
pub trait TransportSender: Send + Sync + 'static {
    /// Hands one message to the transport. Returns when it is queued or written, not when
    /// answered.
    async fn send(&self, message: Message) -> Result<(), TransportError>;

    /// Closes the connection gracefully (idempotent, bounded in time).
    async fn close(&self) -> Result<(), TransportError>;

    /// What the transport is and can do. Asked whenever the session decides (it is a copy of a
    /// few fields, no work): the answer may change as the session is made (a Streamable HTTP
    /// session can expire only once the server gave it an id).
    fn capabilities(&self) -> TransportCapabilities;

    /// Tells the transport the protocol version the session speaks: the one `initialize`
    /// negotiated, or 2026-07-28 while the session probes for and then speaks the modern era
    /// (HTTP then sends the modern headers and no session id); `None` again when the probe
    /// found a legacy server, before `initialize`. Default: ignored.
    fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        let _ = version;
    }

    /// The answer to `request` as a future the session awaits in the caller's task, instead of a
    /// [`send`](TransportSender::send) whose response comes back through the receiver, the
    /// reader task and a oneshot: for in-process transports, and for byte transports whose
    /// answer comes back on the request's own exchange (a Streamable HTTP POST). For a
    /// transport that [prefers values](TransportCapabilities::prefers_values), `request` carries
    /// the caller's parameters as they are and `meta` is what the session would have added to
    /// their `_meta`; any other gets them already added (as text) and an empty `meta`.
    /// The transport may read (or send) the request at once. Dropping the future before it
    /// resolves ends the request: an in-process server sees the drop, and the session sends a
    /// byte transport's server `notifications/cancelled` (as on the ordinary path). Whatever
    /// the server sends while answering (progress, logs, its own requests) still comes through
    /// the receiver, and is dispatched before the future resolves. When the connection ends
    /// (closed, the server died), the future resolves at once with the transport error.
    ///
    /// What it buys (`local_call` bench, in-process `echo`): 10.5 k instructions per call
    /// against 28.8 k through the reader task (callgrind), about 1.7 µs against 5.0 µs a call
    /// on a loaded 2-core machine — the reader's channel, task wake-up and oneshot hop.
    ///
    /// `Err(request)` hands the request back: the session adds `meta` to its parameters (if it
    /// has not yet) and sends it the ordinary way. That is the default, and what a transport
    /// returns for requests it keeps on the ordinary path (a long-lived `subscriptions/listen`).
    fn answer_in_place(
        &self,
        request: Request,
        meta: RequestMeta<'_>,
    ) -> Result<InPlaceAnswer, Request> {
        let _ = meta;
        Err(request)
    }
}

/// What a transport is and can do, in one value ([`TransportSender::capabilities`]).
///
/// ```
/// # use mcp_core::TransportCapabilities;
/// let stdio = TransportCapabilities::new("pipe");
/// assert!(stdio.speaks_modern_era && !stdio.sessions_can_expire && !stdio.prefers_values);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransportCapabilities {
    /// The transport's name as in OpenTelemetry's `network.transport` / MCP conventions
    /// (`"pipe"` for stdio, `"tcp"` for HTTP, …): used in metrics and logs.
    pub name: &'static str,
    /// False for transports only the legacy era defines (HTTP+SSE of 2024-11-05): the session
    /// then skips the `server/discover` probe and initializes at once.
    pub speaks_modern_era: bool,
    /// True when the server may forget the session (Streamable HTTP, once the server gave one):
    /// the session then keeps a copy of each request so that one refused with
    /// [`TransportErrorKind::SessionExpired`] can be replayed after a new handshake.
    pub sessions_can_expire: bool,
    /// True for in-process transports, where a [`Payload::Value`] moves to the server for free;
    /// byte transports leave it false and the session then hands them parameters already
    /// serialized, so nothing is built twice.
    pub prefers_values: bool,
}

impl TransportCapabilities {
    /// A transport named `name` that speaks both eras, whose sessions do not expire and that
    /// takes parameters serialized.
    pub const fn new(name: &'static str) -> TransportCapabilities {
        TransportCapabilities {
            name,
            speaks_modern_era: true,
            sessions_can_expire: false,
            prefers_values: false,
        }
    }

    /// Sets [`speaks_modern_era`](Self::speaks_modern_era).
    pub const fn speaking_modern_era(mut self, speaks: bool) -> TransportCapabilities {
        self.speaks_modern_era = speaks;
        self
    }

    /// Sets [`sessions_can_expire`](Self::sessions_can_expire).
    pub const fn with_expiring_sessions(mut self, can_expire: bool) -> TransportCapabilities {
        self.sessions_can_expire = can_expire;
        self
    }

    /// Sets [`prefers_values`](Self::prefers_values).
    pub const fn preferring_values(mut self) -> TransportCapabilities {
        self.prefers_values = true;
        self
    }
}

/// The receiving half of a transport; owned by the session's reader task.
#[async_trait]
pub trait TransportReceiver: Send + 'static {
    /// The next message from the peer. `None`: the connection ended cleanly and nothing more will
    /// arrive. `Some(Err(e))` with `e.is_fatal()`: the connection failed and nothing more will
    /// arrive. A non-fatal error reports one bad message; receiving continues.
    async fn receive(&mut self) -> Option<Result<Message, TransportError>>;
}

/// What went wrong in a transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The connection could not be established (spawn failed, connection refused, …).
    Connect,
    /// The connection is closed (by us or the peer); sending is no longer possible.
    Closed,
    /// The peer process exited or the connection dropped unexpectedly.
    PeerGone,
    /// Reading or writing failed.
    Io,
    /// A message exceeded the configured size limit.
    MessageTooLarge,
    /// Bytes arrived that are not a JSON-RPC message.
    InvalidMessage,
    /// The server no longer knows the session (Streamable HTTP 404); re-initialize.
    SessionExpired,
    /// The server demands (other) credentials (HTTP 401/403, WebSocket 1008, gRPC
    /// UNAUTHENTICATED).
    Unauthorized,
}

/// A transport failure: a kind, a message that says what happened (with the peer's exit status
/// and stderr tail where there is one), and whether the connection is finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportError {
    kind: TransportErrorKind,
    message: String,
    fatal: bool,
    request_id: Option<RequestId>,
    never_sent: bool,
}

impl TransportError {
    /// A fatal error: the connection is finished.
    pub fn fatal(kind: TransportErrorKind, message: impl Into<String>) -> Self {
        TransportError {
            kind,
            message: message.into(),
            fatal: true,
            request_id: None,
            never_sent: false,
        }
    }

    /// A non-fatal error about one message; the connection goes on.
    pub fn recoverable(kind: TransportErrorKind, message: impl Into<String>) -> Self {
        TransportError {
            kind,
            message: message.into(),
            fatal: false,
            request_id: None,
            never_sent: false,
        }
    }

    /// Names the request the bad message answered.
    pub fn for_request(mut self, id: Option<RequestId>) -> Self {
        self.request_id = id;
        self
    }

    /// Marks a failed `send` whose message provably never reached the server (e.g. HTTP 503 or
    /// 429: the server refused the request before handling it), so that a retry layer may send
    /// even a side-effecting request again.
    pub fn never_sent(mut self) -> Self {
        self.never_sent = true;
        self
    }

    /// Whether the message of a failed `send` may have reached the server. False when marked
    /// [`never_sent`](TransportError::never_sent) and for the kinds that mean nothing was
    /// delivered: [`Connect`](TransportErrorKind::Connect), [`Closed`](TransportErrorKind::Closed),
    /// [`SessionExpired`](TransportErrorKind::SessionExpired) (the server refused the session
    /// before reading the request) and [`Unauthorized`](TransportErrorKind::Unauthorized).
    pub fn may_have_been_delivered(&self) -> bool {
        !(self.never_sent
            || matches!(
                self.kind,
                TransportErrorKind::Connect
                    | TransportErrorKind::Closed
                    | TransportErrorKind::SessionExpired
                    | TransportErrorKind::Unauthorized
            ))
    }

    /// The kind.
    pub fn kind(&self) -> TransportErrorKind {
        self.kind
    }

    /// What happened.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// True when the connection is finished.
    pub fn is_fatal(&self) -> bool {
        self.fatal
    }

    /// The request a non-fatal error is about, when known.
    pub fn request_id(&self) -> Option<&RequestId> {
        self.request_id.as_ref()
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TransportError {}

impl From<TransportError> for crate::Error {
    fn from(e: TransportError) -> Self {
        use crate::ErrorKind;
        let kind = match e.kind {
            TransportErrorKind::Unauthorized => ErrorKind::Auth,
            TransportErrorKind::MessageTooLarge | TransportErrorKind::InvalidMessage => {
                ErrorKind::Protocol
            }
            _ => ErrorKind::Network,
        };
        let delivery = if e.may_have_been_delivered() {
            crate::Delivery::Sent
        } else {
            crate::Delivery::NotSent
        };
        crate::Error::new(kind, e.message.clone())
            .with_delivery(delivery)
            .with_source(e)
    }
}
