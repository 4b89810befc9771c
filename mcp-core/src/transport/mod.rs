//! The one seam between the session engine and the six ways of reaching a server.
//!
//! A transport moves whole JSON-RPC [`Message`]s, never bytes: each implementation frames its own
//! bytes (newline-delimited JSON on stdio, HTTP bodies and SSE events, WebSocket text frames, gRPC
//! stream items) or none at all (the in-process transport passes messages by move, so a
//! [`Payload::Value`] is never serialized). Connecting is each transport's own constructor
//! (`StdioTransport::spawn(config)`, …), not a [`Transport`] method, as what it needs differs per
//! transport; a [`TransportConnector`] connects once more on each call (for pools and supervisors).
//! A constructed transport is connected and ready; the engine [`split`](Transport::split)s it into
//! a [`TransportSender`] shared by every caller and a [`TransportReceiver`] owned by its reader
//! task, whose methods hold the contract.

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

/// The answer [`TransportSender::answer_in_place`] returns for the caller's task to await: the
/// server's result or JSON-RPC error, or a transport failure (closed, the server died).
pub type InPlaceAnswer = Pin<
    Box<dyn Future<Output = Result<Result<Payload, ErrorObject>, TransportError>> + Send + 'static>,
>;

/// What the session adds to a request's `params._meta`, as values, handed to
/// [`TransportSender::answer_in_place`] instead of spliced in. A server reads them with the
/// request's own `params._meta` as if spliced: the caller's `progressToken`, log level and trace
/// context win, the session's protocol members win. A transport passing the request on to another
/// process puts them into its `_meta`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestMeta<'a> {
    /// `progressToken`: the request's own id (every request but `initialize`).
    pub progress_token: Option<i64>,
    /// Modern era: the protocol members (`io.modelcontextprotocol/protocolVersion`,
    /// `…/clientCapabilities`, `…/clientInfo`), the same for every request of the session (clone
    /// the `Arc` to keep them).
    pub modern: Option<&'a Arc<Map<String, Value>>>,
    /// Modern era: `io.modelcontextprotocol/logLevel`, once `logging/setLevel` chose one.
    pub log_level: Option<LoggingLevel>,
    /// Both eras: `traceparent`, `tracestate` from a [`TraceContext`](crate::TraceContext), if set.
    pub trace_context: Option<&'a crate::service::TraceContext>,
}

/// A connected transport, ready to be split into its two halves.
pub trait Transport: Send + 'static {
    /// The sending half.
    type Sender: TransportSender;
    /// The receiving half.
    type Receiver: TransportReceiver;

    /// Splits the transport. The halves together own every resource of the connection (child
    /// process, sockets, background tasks); once both are dropped, the transport releases them
    /// without being awaited: kills its child process group, aborts its tasks, drops its sockets.
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

/// Any transport behind trait objects: the one type a [`TransportConnector`] or registry hands out.
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

/// The sending half of a transport; shared (`&self`) by all callers of a session.
#[async_trait]
pub trait TransportSender: Send + Sync + 'static {
    /// Hands one message to the transport; returns once it is queued or written, never after
    /// waiting for a reply, so many requests can be in flight at once. A `send` future dropped
    /// early may or may not have sent it; the engine treats such a request as cancelled.
    async fn send(&self, message: Message) -> Result<(), TransportError>;

    /// Closes the connection gracefully, idempotently, in bounded time: stops accepting sends, ends
    /// the connection as its peers expect (stdio: close stdin, wait, SIGTERM, SIGKILL after a grace
    /// period; Streamable HTTP: DELETE the session; WebSocket: close frame 1000; gRPC: half-close),
    /// releases every resource. The receiver then ends; the engine fails all pending requests.
    async fn close(&self) -> Result<(), TransportError>;

    /// What the transport is and can do; asked at every decision (a copy of a few fields), as it
    /// may change while the session is made (Streamable HTTP: expiry once the server gave an id).
    fn capabilities(&self) -> TransportCapabilities;

    /// Tells the transport the protocol version the session speaks: the one `initialize`
    /// negotiated, or 2026-07-28 while the session probes for and then speaks the modern era
    /// (HTTP then sends the modern headers and no session id); `None` again when the probe
    /// found a legacy server, before `initialize`. Default: ignored.
    fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        let _ = version;
    }

    /// The answer to `request` as a future the session awaits in the caller's task, instead of a
    /// [`send`](Self::send) whose response comes back through the receiver, the reader task and
    /// a oneshot: for in-process transports, and byte transports whose answer comes back on the
    /// request's own exchange (a Streamable HTTP POST). A transport that [prefers
    /// values](TransportCapabilities::prefers_values) gets the caller's parameters as they are,
    /// and in `meta` what the session would have added to their `_meta`; any other gets them
    /// added (as text) and an empty `meta`. The transport may read (or send) the request at once.
    ///
    /// Dropping the future ends the request (an in-process server sees the drop, a byte transport's
    /// server gets the session's `notifications/cancelled`). What the server sends meanwhile
    /// (progress, logs, its own requests) still comes through the receiver, dispatched before the
    /// future resolves; when the connection ends, it resolves at once with the error.
    /// `Err(request)` hands the request back (the default): the session adds `meta` to its
    /// parameters (if it has not yet) and sends it the ordinary way, as for requests a transport
    /// keeps on that path (a long-lived `subscriptions/listen`). What it buys (`local_call` bench,
    /// in-process `echo`): 10.5 k against 28.8 k instructions a call (callgrind), 1.7 µs against
    /// 5.0 µs on a loaded 2-core machine, the cost of the reader's channel, task wake-up and
    /// oneshot hop.
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
    /// byte transports leave it false and get parameters serialized, nothing built twice.
    pub prefers_values: bool,
}

impl TransportCapabilities {
    /// Transport `name`: speaks both eras, sessions never expire, takes parameters serialized.
    pub const fn new(name: &'static str) -> TransportCapabilities {
        TransportCapabilities {
            name,
            speaks_modern_era: true,
            sessions_can_expire: false,
            prefers_values: false,
        }
    }

    /// Sets [`speaks_modern_era`](Self::speaks_modern_era).
    pub const fn with_modern_era(mut self, speaks: bool) -> TransportCapabilities {
        self.speaks_modern_era = speaks;
        self
    }

    /// Sets [`sessions_can_expire`](Self::sessions_can_expire).
    pub const fn with_expiring_sessions(mut self, can_expire: bool) -> TransportCapabilities {
        self.sessions_can_expire = can_expire;
        self
    }

    /// Sets [`prefers_values`](Self::prefers_values).
    pub const fn with_values_preferred(mut self, prefers: bool) -> TransportCapabilities {
        self.prefers_values = prefers;
        self
    }
}

/// A transport's receiving half; the session's reader task owns it and calls `receive` in a loop.
#[async_trait]
pub trait TransportReceiver: Send + 'static {
    /// The peer's next message, in order, whatever channel it came on (a Streamable HTTP POST
    /// stream, the standalone GET stream, an HTTP+SSE `message` event). `None`: the connection
    /// ended cleanly (a close, or the peer left). `Some(Err(e))` with `e.is_fatal()`: it failed
    /// (the error says how: a child's exit status and stderr tail, say). Nothing arrives after
    /// either. A non-fatal error reports one bad message (too large, not JSON-RPC), naming the
    /// request it answered when known ([`TransportError::request_id`]) so that request fails at
    /// once, not at its timeout; receiving continues. Only ever awaited to completion or dropped
    /// with the whole receiver: need not be cancel-safe.
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
    /// The server no longer knows the session (Streamable HTTP 404 with a session id): only the
    /// engine can re-initialize, on the same transport, and send the request again.
    SessionExpired,
    /// The server demands (other) credentials (HTTP 401/403, WebSocket 1008, gRPC UNAUTHENTICATED).
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
            fatal: false,
            ..TransportError::fatal(kind, message)
        }
    }

    /// Names the request the bad message answered.
    pub fn for_request(mut self, id: Option<RequestId>) -> Self {
        self.request_id = id;
        self
    }

    /// Marks a failed `send` whose message provably never reached the server (HTTP 503 or 429:
    /// refused before handling), so a retry layer may send even a side-effecting request again.
    pub fn never_sent(mut self) -> Self {
        self.never_sent = true;
        self
    }

    /// Whether the message of a failed `send` may have reached the server: not when marked
    /// [`never_sent`](Self::never_sent), nor for the kinds that mean nothing was delivered:
    /// `Connect`, `Closed`, `SessionExpired` (the server refused the session before reading the
    /// request) and `Unauthorized`.
    pub fn may_have_been_delivered(&self) -> bool {
        use TransportErrorKind::{Closed, Connect, SessionExpired, Unauthorized};
        !(self.never_sent || matches!(self.kind, Connect | Closed | SessionExpired | Unauthorized))
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
        use TransportErrorKind::{InvalidMessage, MessageTooLarge, Unauthorized};
        let kind = match e.kind {
            Unauthorized => ErrorKind::Auth,
            MessageTooLarge | InvalidMessage => ErrorKind::Protocol,
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
