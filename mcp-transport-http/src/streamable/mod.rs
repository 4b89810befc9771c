//! Streamable HTTP: every client message is a POST to the one endpoint; a request's answer comes
//! back as JSON or as an SSE stream (which may carry progress, and in the legacy era
//! server→client requests, first).
//!
//! Legacy era (2025-11-25 and older): server-initiated messages arrive on a standalone GET
//! stream. The transport keeps the session id and the negotiated protocol version and sends them
//! on every request, resumes a dropped SSE stream with `Last-Event-ID` after the server's
//! `retry:` delay, reconnects the GET stream when it drops (a failure there never affects the
//! POSTs), and ends the session with a DELETE on close.
//!
//! Modern era (2026-07-28, while the session probes with `server/discover` and after): no
//! session id, GET stream, resumption or DELETE; every POST carries `MCP-Protocol-Version`
//! and the request metadata headers (see [`crate::headers`]); a 4xx answer whose body is a
//! JSON-RPC error (unsupported version, header mismatch, unknown method) is delivered as that
//! request's error — for the `server/discover` probe only an error of the MCP-reserved range,
//! which proves a modern server; a cancelled request's stream is closed, which is the cancellation (no
//! `notifications/cancelled` is POSTed).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT};
use http::{Method, StatusCode};
use mcp_core::{
    InPlaceAnswer, Message, ProtocolVersion, Request, RequestId, RequestMeta, Transport,
    TransportCapabilities, TransportError, TransportErrorKind, TransportSender,
};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::client::{HttpResponse, Target};
use crate::config::HttpServerConfig;
use crate::exchange::Exchange;

mod body;
mod post;
mod session;
mod streams;

/// `Mcp-Session-Id`.
pub const SESSION_ID_HEADER: &str = "mcp-session-id";
/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// `Last-Event-ID`.
pub const LAST_EVENT_ID_HEADER: &str = "last-event-id";
/// The longest `Mcp-Session-Id` accepted, in bytes. The id is sent back on every request, so a
/// hostile or broken server must not make every request carry hundreds of kilobytes; 4 KiB
/// leaves room for the signed, self-contained ids some servers hand out (real ones are a UUID
/// or a few hundred bytes), and an id over it fails `initialize` with a protocol error.
pub const MAX_SESSION_ID_LEN: usize = 4096;

const SESSION_ID: HeaderName = HeaderName::from_static(SESSION_ID_HEADER);
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static(PROTOCOL_VERSION_HEADER);
const LAST_EVENT_ID: HeaderName = HeaderName::from_static(LAST_EVENT_ID_HEADER);
/// What a POST accepts back (a constant: built once, not checked again per request).
const POST_ACCEPT: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
/// What a GET accepts back.
const GET_ACCEPT: HeaderValue = HeaderValue::from_static("text/event-stream");

/// Messages waiting for the session's reader before senders wait (backpressure).
pub(crate) const INCOMING_QUEUE: usize = 1024;

/// What the HTTP transports deliver to the session's reader.
pub use crate::incoming::HttpReceiver;
pub(crate) use crate::incoming::{incoming_channel, Incoming, Item};

/// A failed POST: the status when the server answered (the auto-detecting transport falls back
/// to HTTP+SSE on 400/404/405), and the error to report.
pub(crate) struct PostError {
    pub(crate) status: Option<StatusCode>,
    pub(crate) error: TransportError,
}

impl From<TransportError> for PostError {
    fn from(error: TransportError) -> Self {
        PostError {
            status: None,
            error,
        }
    }
}
/// Used when the server gives no `retry:` before a stream drops.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Cap on the server's `retry:` (a hostile value must not stall a request forever).
const MAX_RETRY: Duration = Duration::from_secs(30);
/// Resumption attempts for one POST stream before its request fails.
const MAX_RESUME_ATTEMPTS: u32 = 5;
/// How long the `initialized` notification waits for the standalone stream to open.
const GET_STREAM_OPEN_WAIT: Duration = Duration::from_secs(2);
/// Reconnection attempts of the standalone GET stream in a row before giving up on it.
const MAX_GET_RECONNECTS: u32 = 10;

/// An MCP server reached over Streamable HTTP.
pub struct StreamableHttpTransport {
    sender: HttpSender,
    receiver: HttpReceiver,
}

impl StreamableHttpTransport {
    /// Prepares the transport (no request is made until the session sends `initialize`).
    pub fn new(config: HttpServerConfig) -> Result<StreamableHttpTransport, TransportError> {
        let (incoming, receiver) = incoming_channel(INCOMING_QUEUE);
        let shared = StreamableState::new(config, incoming)?;
        Ok(StreamableHttpTransport {
            sender: HttpSender { shared },
            receiver,
        })
    }
}

impl Transport for StreamableHttpTransport {
    type Sender = HttpSender;
    type Receiver = HttpReceiver;

    fn split(self) -> (HttpSender, HttpReceiver) {
        (self.sender, self.receiver)
    }
}

use mcp_core::sync::lock;

pub(crate) struct StreamableState {
    exchange: Exchange,
    /// The endpoint.
    target: Target,
    /// The URL for messages (see `HttpServerConfig::display_url`).
    display_url: String,
    config: HttpServerConfig,
    /// The session id, as the server sent it (visible ASCII only).
    session_id: Mutex<Option<HeaderValue>>,
    protocol_version: Mutex<Option<ProtocolVersion>>,
    /// Taken on close: once every stream task has ended too, the receiver sees the end.
    incoming: Mutex<Option<Incoming>>,
    tasks: Mutex<Vec<AbortHandle>>,
    /// The standalone GET stream's task (also in `tasks`), restarted with a new session.
    get_task: Mutex<Option<AbortHandle>>,
    get_stream_started: AtomicBool,
    /// The task following each request's SSE answer, with the request's id: a cancelled
    /// request's stream is closed once the server has been told. (A list: it holds the
    /// requests in flight, and is searched only on cancellation.)
    post_streams: Mutex<Vec<(RequestId, AbortHandle)>>,
    closed: AtomicBool,
    /// The server forgot the session, and no new one has its id yet: every request but
    /// `initialize` is refused as [`TransportErrorKind::SessionExpired`] (never sent), so the
    /// session waits for the new handshake and sends it again, instead of it going out without
    /// a session id (which a server refuses with 400, and nothing would ever mend).
    session_lost: AtomicBool,
    /// Turns true when the transport is closed or dropped: ends the calls answered in place,
    /// which run in their callers' tasks rather than in tasks the transport could abort.
    closing: watch::Sender<bool>,
}

impl Drop for StreamableState {
    fn drop(&mut self) {
        self.abort_tasks();
    }
}

/// How a stream ended.
enum StreamEnd {
    /// The awaited response arrived (POST streams) and went to the reader.
    Answered,
    /// The awaited response arrived (or a failure in its place), kept for its caller
    /// ([`AnswerTo::Caller`]).
    Kept(Item),
    /// The stream closed or failed; it may be resumed from `last_event_id`.
    Dropped {
        last_event_id: Option<String>,
        retry: Option<Duration>,
        why: String,
    },
    /// The receiver is gone: stop.
    Closed,
    /// Nothing more has arrived yet (only when not waiting for it).
    Waiting,
}

/// Where the answer to a POSTed request goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum AnswerTo {
    /// The session's reader, like everything else the server sends.
    Reader,
    /// Back to the caller, who awaits it in place (`HttpSender::answer_in_place`); the rest of
    /// the stream still goes to the reader.
    Caller,
}

/// What a POST brought back for its caller (with [`AnswerTo::Caller`]): the answer, unless it
/// went elsewhere or the reader is gone; and the ticket of the last item its stream forwarded
/// to the reader before it.
struct Posted {
    answer: Option<Item>,
    forwarded: Option<u64>,
}

impl StreamableState {
    pub(crate) fn new(
        config: HttpServerConfig,
        incoming: Incoming,
    ) -> Result<Arc<StreamableState>, TransportError> {
        let target = config.target()?;
        let exchange = Exchange::new(&config)?;
        Ok(Arc::new(StreamableState {
            display_url: exchange.display_url.clone(),
            exchange,
            target,
            config,
            session_id: Mutex::new(None),
            protocol_version: Mutex::new(None),
            incoming: Mutex::new(Some(incoming)),
            tasks: Mutex::new(Vec::new()),
            get_task: Mutex::new(None),
            get_stream_started: AtomicBool::new(false),
            post_streams: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            session_lost: AtomicBool::new(false),
            closing: watch::Sender::new(false),
        }))
    }

    fn incoming(&self) -> Option<Incoming> {
        lock(&self.incoming).clone()
    }

    /// Ends every stream task (the GET stream's, each request's) and every call answered in
    /// place.
    fn abort_tasks(&self) {
        self.closing.send_replace(true);
        for task in lock(&self.tasks).drain(..) {
            task.abort();
        }
        for (_, task) in lock(&self.post_streams).drain(..) {
            task.abort();
        }
    }

    /// Whether the session speaks (or probes for) the modern era.
    fn is_modern(&self) -> bool {
        lock(&self.protocol_version).is_some_and(|v| v.is_modern())
    }

    /// The headers every request carries (besides the configured ones and credentials):
    /// `Accept`, the session id, the protocol version.
    fn request_headers(&self, accept: HeaderValue) -> RequestHeaders {
        let version = *lock(&self.protocol_version);
        let modern = version.is_some_and(|v| v.is_modern());
        RequestHeaders {
            accept,
            session_id: if modern {
                None
            } else {
                lock(&self.session_id).clone()
            },
            protocol_version: version
                .filter(|v| v.has_protocol_version_header())
                .map(|v| v.as_str()),
            last_event_id: None,
            metadata: None,
        }
    }

    /// Sends one HTTP request to the endpoint with credentials (see [`Exchange::send`]).
    async fn execute(
        &self,
        method: Method,
        headers: &RequestHeaders,
        body: Option<Bytes>,
    ) -> Result<HttpResponse, TransportError> {
        self.exchange
            .send(method, &self.target, &|map| headers.apply(map), body)
            .await
    }
}

/// The sending half: one POST per message.
pub struct HttpSender {
    shared: Arc<StreamableState>,
}

impl Drop for HttpSender {
    /// The stream tasks hold the shared state; the sender owns them: dropping it ends them.
    fn drop(&mut self) {
        self.shared.abort_tasks();
        lock(&self.shared.incoming).take();
    }
}

#[async_trait]
impl TransportSender for HttpSender {
    async fn send(&self, message: Message) -> Result<(), TransportError> {
        self.shared.post(message).await.map_err(|e| e.error)
    }

    fn answer_in_place(
        &self,
        request: Request,
        meta: RequestMeta<'_>,
    ) -> Result<InPlaceAnswer, Request> {
        // A byte transport: the session has added `_meta` to the parameters already.
        let _ = meta;
        self.shared.answer_in_place(request)
    }

    async fn close(&self) -> Result<(), TransportError> {
        self.shared.close().await;
        Ok(())
    }

    fn capabilities(&self) -> TransportCapabilities {
        TransportCapabilities::new("tcp").with_expiring_sessions(self.shared.has_session())
    }

    fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        self.shared.set_protocol_version(version);
    }
}

/// Whether `response` answers request `id` (a server may write the id back as a numeric
/// string; the reader accepts that too).
fn answers(response: &mcp_core::Response, id: &RequestId) -> bool {
    response.id.as_ref().is_some_and(|r| r.answers(id))
}

/// Why a modern request failed when its stream ended before the answer.
fn unresumable(why: &str) -> String {
    format!("{why} before the response (streams are not resumed in protocol 2026-07-28)")
}

/// The message an SSE event's data holds. Its parameters or result share the data's buffer
/// instead of being copied out of it (a large result is not copied once more). Data that is
/// not a message is an error for the request it names ([`mcp_wire::request_id_of`]),
/// so that request fails at once instead of waiting for its deadline.
pub(crate) fn event_message(data: String, display_url: &str) -> Result<Message, TransportError> {
    let data = Arc::new(data.into_bytes());
    Message::from_shared_line(&data).map_err(|e| {
        TransportError::recoverable(
            TransportErrorKind::InvalidMessage,
            format!(
                "{display_url} sent an event that is not a message: {}",
                mcp_wire::message_error_text(&e)
            ),
        )
        .for_request(mcp_wire::request_id_of(&data))
    })
}

/// The headers of one request to the endpoint, fixed when it is made (and applied again to
/// a retry or a redirected request).
struct RequestHeaders {
    accept: HeaderValue,
    session_id: Option<HeaderValue>,
    protocol_version: Option<&'static str>,
    last_event_id: Option<HeaderValue>,
    /// The modern request metadata headers.
    metadata: Option<HeaderMap>,
}

impl RequestHeaders {
    fn apply(&self, headers: &mut HeaderMap) {
        headers.insert(ACCEPT, self.accept.clone());
        if let Some(id) = &self.session_id {
            headers.insert(SESSION_ID, id.clone());
        }
        if let Some(version) = self.protocol_version {
            headers.insert(PROTOCOL_VERSION, HeaderValue::from_static(version));
        }
        if let Some(id) = &self.last_event_id {
            headers.insert(LAST_EVENT_ID, id.clone());
        }
        if let Some(metadata) = &self.metadata {
            for (name, value) in metadata {
                headers.append(name, value.clone());
            }
        }
    }
}
