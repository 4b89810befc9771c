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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use http::{Method, StatusCode};
use mcp_core::types::{methods, CancelledNotificationParams};
use mcp_core::{
    InPlaceAnswer, Message, ProtocolVersion, Request, RequestId, RequestMeta, Transport,
    TransportCapabilities, TransportError, TransportErrorKind, TransportSender,
};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::client::{HttpResponse, Target};
use crate::config::HttpServerConfig;
use crate::exchange::{
    message_body, read_limited, status_answer, status_error, unexpected_content_error,
    unexpected_encoding, Exchange,
};
use crate::sse::SseParser;

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
/// to legacy SSE on 400/404/405), and the error to report.
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
        let shared = Shared::new(config, incoming)?;
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

pub(crate) struct Shared {
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

impl Drop for Shared {
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

impl Shared {
    pub(crate) fn new(
        config: HttpServerConfig,
        incoming: Incoming,
    ) -> Result<Arc<Shared>, TransportError> {
        let target = config.target()?;
        let exchange = Exchange::new(&config)?;
        Ok(Arc::new(Shared {
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

    /// Reads an SSE response, forwarding every message to the reader but the response to
    /// `awaiting`, where it stops (that one is kept for the caller with [`AnswerTo::Caller`]).
    /// Without `wait`, reads only what has arrived already and returns
    /// [`StreamEnd::Waiting`] when that is all.
    async fn pump_sse(
        &self,
        response: &mut HttpResponse,
        parser: &mut SseParser,
        awaiting: Option<&RequestId>,
        lists_tools: bool,
        wait: bool,
        to: (AnswerTo, &mut Option<u64>),
    ) -> StreamEnd {
        let (answer_to, forwarded) = to;
        let Some(incoming) = self.incoming() else {
            return StreamEnd::Closed;
        };
        loop {
            while let Some(event) = parser.next_event() {
                // Other event types, and priming events (an id, empty data), carry no message.
                if event.event_type() != "message" || event.data.is_empty() {
                    continue;
                }
                let item = event_message(event.data, &self.display_url);
                // An event that is not a message answers the request its ends name.
                let answers = match (&item, awaiting) {
                    (Ok(Message::Response(r)), Some(id)) => answers(r, id),
                    (Err(e), Some(id)) => e.request_id().is_some_and(|r| r.answers(id)),
                    _ => false,
                };
                let item = if answers && lists_tools {
                    self.learn_tool_headers(item)
                } else {
                    item
                };
                if answers && answer_to == AnswerTo::Caller {
                    return StreamEnd::Kept(item);
                }
                match incoming.send(item).await {
                    Ok(ticket) => *forwarded = Some(ticket),
                    Err(_) => return StreamEnd::Closed,
                }
                if answers {
                    return StreamEnd::Answered;
                }
            }
            let dropped = |why: String, parser: &SseParser| StreamEnd::Dropped {
                last_event_id: parser.last_event_id().map(str::to_owned),
                retry: parser.retry(),
                why,
            };
            let next = if wait {
                response.chunk().await
            } else {
                match response.ready_chunk() {
                    Some(next) => next,
                    None => return StreamEnd::Waiting,
                }
            };
            match next {
                Ok(Some(chunk)) => {
                    if let Err(e) = parser.feed(&chunk) {
                        let error = TransportError::recoverable(
                            TransportErrorKind::MessageTooLarge,
                            format!("{e} (from {})", self.display_url),
                        )
                        .for_request(awaiting.cloned());
                        // As on the reader's side: the discarded event is taken for the
                        // awaited answer.
                        if answer_to == AnswerTo::Caller && awaiting.is_some() {
                            return StreamEnd::Kept(Err(error));
                        }
                        let _ = incoming.send(Err(error)).await;
                    }
                }
                Ok(None) => return dropped("the stream ended".into(), parser),
                Err(e) => return dropped(format!("the stream failed: {e}"), parser),
            }
        }
    }

    /// GET with `Last-Event-ID`: resumes a stream the server dropped.
    async fn resume(&self, last_event_id: &str) -> Result<HttpResponse, TransportError> {
        let mut headers = self.request_headers(GET_ACCEPT);
        headers.last_event_id = HeaderValue::from_str(last_event_id).ok();
        let response = self.execute(Method::GET, &headers, None).await?;
        if response.status().is_success() {
            Ok(response)
        } else {
            Err(status_error(response, &self.display_url, TransportErrorKind::Io).await)
        }
    }

    /// A modern `tools/list` answer: the tools' header annotations are learned, and tools with
    /// invalid ones removed (see [`crate::headers`]).
    fn learn_tool_headers(
        &self,
        item: Result<Message, TransportError>,
    ) -> Result<Message, TransportError> {
        let Ok(Message::Response(mut response)) = item else {
            return item;
        };
        if let Ok(payload) = &response.outcome {
            if let Ok(mut value) = payload.clone().into_value() {
                if self.config.tool_headers.learn(&mut value) {
                    response.outcome = Ok(mcp_core::Payload::Value(value));
                }
            }
        }
        Ok(Message::Response(response))
    }

    /// Follows a POST's SSE stream to the response from where `end` left it, resuming it
    /// when it drops (legacy era; a modern stream is never resumed): the task that follows a
    /// stream for the reader.
    async fn follow_post_stream(
        self: Arc<Self>,
        response: HttpResponse,
        parser: SseParser,
        id: RequestId,
        lists_tools: bool,
        end: StreamEnd,
    ) {
        let to = (AnswerTo::Reader, &mut None);
        self.follow(response, parser, &id, lists_tools, end, to)
            .await;
    }

    /// Follows a POST's SSE stream to the response from where `end` left it (see
    /// [`follow_post_stream`](Shared::follow_post_stream)); the answer, or the failure in its
    /// place, for [`AnswerTo::Caller`].
    async fn follow(
        &self,
        mut response: HttpResponse,
        mut parser: SseParser,
        id: &RequestId,
        lists_tools: bool,
        mut end: StreamEnd,
        to: (AnswerTo, &mut Option<u64>),
    ) -> Option<Item> {
        let (answer_to, forwarded) = to;
        let mut attempts = 0;
        loop {
            match end {
                StreamEnd::Kept(item) => return Some(item),
                StreamEnd::Answered | StreamEnd::Closed => return None,
                StreamEnd::Waiting => {
                    end = self
                        .pump_sse(
                            &mut response,
                            &mut parser,
                            Some(id),
                            lists_tools,
                            true,
                            (answer_to, &mut *forwarded),
                        )
                        .await;
                }
                StreamEnd::Dropped {
                    last_event_id,
                    retry,
                    why,
                } => {
                    if self.is_modern() {
                        return self.failed(id, unresumable(&why), answer_to).await;
                    }
                    let Some(last_event_id) = last_event_id else {
                        let why = format!(
                            "{why} before the response, and cannot be resumed (no event id)"
                        );
                        return self.failed(id, why, answer_to).await;
                    };
                    attempts += 1;
                    if attempts > MAX_RESUME_ATTEMPTS || self.closed.load(Ordering::Acquire) {
                        let why = format!(
                            "{why} before the response; resuming failed {MAX_RESUME_ATTEMPTS} times"
                        );
                        return self.failed(id, why, answer_to).await;
                    }
                    tokio::time::sleep(retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)).await;
                    // Boxed: the task of every streamed answer is this big, and resuming is rare.
                    match Box::pin(self.resume(&last_event_id)).await {
                        Ok(resumed) => response = resumed,
                        Err(e) => {
                            tracing::debug!(error = %e, "resuming a response stream failed");
                            response =
                                match Box::pin(self.resume_later(&last_event_id, &mut attempts))
                                    .await
                                {
                                    Some(r) => r,
                                    None => {
                                        return self
                                            .failed(id, format!("{why}; {e}"), answer_to)
                                            .await
                                    }
                                };
                        }
                    }
                    parser.finish();
                    end = StreamEnd::Waiting;
                }
            }
        }
    }

    /// Request `id` failed (`why`): the failure for its caller, or sent to the reader.
    async fn failed(&self, id: &RequestId, why: String, answer_to: AnswerTo) -> Option<Item> {
        match answer_to {
            AnswerTo::Caller => Some(Err(self.request_failure(id, why))),
            AnswerTo::Reader => {
                self.fail_request(id, why).await;
                None
            }
        }
    }

    /// Retries resumption with the default delay until it works or attempts run out.
    async fn resume_later(&self, last_event_id: &str, attempts: &mut u32) -> Option<HttpResponse> {
        while *attempts < MAX_RESUME_ATTEMPTS && !self.closed.load(Ordering::Acquire) {
            *attempts += 1;
            tokio::time::sleep(DEFAULT_RETRY).await;
            if let Ok(response) = self.resume(last_event_id).await {
                return Some(response);
            }
        }
        None
    }

    async fn fail_request(&self, id: &RequestId, why: String) {
        self.send_failure(self.request_failure(id, why)).await;
    }

    /// Hands the reader a request's failure (nothing to do once the transport is closed).
    async fn send_failure(&self, error: TransportError) {
        if let Some(incoming) = self.incoming() {
            let _ = incoming.send(Err(error)).await;
        }
    }

    /// Request `id` failed: its stream ended before the answer (`why`).
    fn request_failure(&self, id: &RequestId, why: String) -> TransportError {
        TransportError::recoverable(
            TransportErrorKind::PeerGone,
            format!("{}: {why}", self.display_url),
        )
        .for_request(Some(id.clone()))
    }

    /// Request `id` failed: the server answered its POST with JSON that holds no response to
    /// it (another id, only notifications). A JSON answer is the whole answer, so nothing
    /// more can come: a protocol error of the server's, not a lost connection.
    fn response_missing(&self, id: &RequestId) -> TransportError {
        TransportError::recoverable(
            TransportErrorKind::InvalidMessage,
            format!(
                "{}: the server's answer to the POST did not include the response",
                self.display_url
            ),
        )
        .for_request(Some(id.clone()))
    }

    /// The standalone GET stream: server-initiated messages; reconnects when it drops; a 405
    /// means the server has none. Never affects the POST channel.
    async fn run_get_stream(self: Arc<Self>, opened: tokio::sync::oneshot::Sender<()>) {
        let mut parser = SseParser::new(self.config.max_message_size);
        let mut failures = 0;
        let mut opened = Some(opened);
        loop {
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            let mut headers = self.request_headers(GET_ACCEPT);
            headers.last_event_id = parser
                .last_event_id()
                .and_then(|id| HeaderValue::from_str(id).ok());
            let answer = self.execute(Method::GET, &headers, None).await;
            // The first answer (a stream, a 405, a failure) releases the `initialized` send.
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            let delay = match answer {
                Ok(response) if response.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::debug!(url = %self.display_url, "the server offers no standalone stream (405)");
                    return;
                }
                Ok(mut response) if response.status().is_success() => {
                    failures = 0;
                    match self
                        .pump_sse(
                            &mut response,
                            &mut parser,
                            None,
                            false,
                            true,
                            (AnswerTo::Reader, &mut None),
                        )
                        .await
                    {
                        StreamEnd::Closed
                        | StreamEnd::Answered
                        | StreamEnd::Waiting
                        | StreamEnd::Kept(_) => return,
                        StreamEnd::Dropped { retry, why, .. } => {
                            tracing::debug!(why, "the standalone stream dropped; reconnecting");
                            parser.finish();
                            retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)
                        }
                    }
                }
                Ok(response) => {
                    failures += 1;
                    tracing::debug!(status = %response.status(), "opening the standalone stream failed");
                    DEFAULT_RETRY * failures
                }
                Err(e) => {
                    failures += 1;
                    tracing::debug!(error = %e, "opening the standalone stream failed");
                    DEFAULT_RETRY * failures
                }
            };
            if failures > MAX_GET_RECONNECTS {
                tracing::warn!(url = %self.display_url, "giving up on the standalone stream");
                return;
            }
            tokio::time::sleep(delay.min(MAX_RETRY)).await;
        }
    }
}

impl Shared {
    /// The modern request metadata headers of one request; a parameter a header cannot carry
    /// refuses the request before it is sent.
    fn metadata_headers(&self, request: &mcp_core::Request) -> Result<HeaderMap, PostError> {
        crate::headers::request_headers(
            &request.method,
            request.params.as_ref(),
            &self.config.tool_headers,
        )
        .map_err(|why| {
            PostError::from(
                TransportError::recoverable(
                    TransportErrorKind::InvalidMessage,
                    format!("{} was not sent: {why}", request.method),
                )
                .for_request(Some(request.id.clone()))
                .never_sent(),
            )
        })
    }
}

impl Shared {
    /// Ends the session: stops the streams, DELETEs the session, ends the receiver.
    pub(crate) async fn close(&self) {
        let shared = self;
        if shared.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        shared.abort_tasks();
        let session = lock(&shared.session_id).clone();
        if session.is_some() {
            let headers = shared.request_headers(POST_ACCEPT);
            let delete = shared.execute(Method::DELETE, &headers, None);
            match tokio::time::timeout(Duration::from_secs(5), delete).await {
                Ok(Ok(r)) => tracing::debug!(status = %r.status(), "session ended (DELETE)"),
                Ok(Err(e)) => tracing::debug!(error = %e, "DELETE of the session failed"),
                Err(_) => tracing::debug!("DELETE of the session timed out"),
            }
        }
        lock(&shared.incoming).take();
    }

    /// Stops delivering to the receiver without a DELETE (no session was made: another
    /// transport flavor took over).
    pub(crate) fn abandon(&self) {
        self.closed.store(true, Ordering::Release);
        self.abort_tasks();
        lock(&self.incoming).take();
    }

    /// Whether the server gave this client a session (which it may forget), or forgot the one
    /// it gave and a new one is being made.
    pub(crate) fn has_session(&self) -> bool {
        self.session_lost.load(Ordering::Acquire) || lock(&self.session_id).is_some()
    }

    pub(crate) fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        *lock(&self.protocol_version) = version;
    }

    /// The answer to `request` in the caller's task (see
    /// [`TransportSender::answer_in_place`]): the POST is made and its stream read (and
    /// resumed, in the legacy era) in the caller's future, with no reader-task hop for the
    /// answer. Everything else the stream carries still goes to the reader, and the answer
    /// resolves only once the reader has dispatched it (progress comes before the result, as
    /// on the ordinary path). Dropped before it resolves, the future closes the stream (the
    /// cancellation in the modern era; in the legacy era the session also sends
    /// `notifications/cancelled`, through `send`). Closing the transport ends it at once.
    /// A session the server forgot is reported as [`TransportErrorKind::SessionExpired`], for
    /// the session to make a new one and send the request again. The handshakes (`initialize`,
    /// the `server/discover` probe) and the long-lived `subscriptions/listen` take the
    /// ordinary path.
    pub(crate) fn answer_in_place(
        self: &Arc<Self>,
        request: Request,
    ) -> Result<InPlaceAnswer, Request> {
        if self.closed.load(Ordering::Acquire)
            || matches!(
                request.method.as_str(),
                methods::INITIALIZE | methods::SERVER_DISCOVER | methods::SUBSCRIPTIONS_LISTEN
            )
        {
            return Err(request);
        }
        let shared = self.clone();
        Ok(Box::pin(async move {
            let id = request.id.clone();
            // Closing the transport ends the call at once, as it ends the reader.
            let mut closing = shared.closing.subscribe();
            let posted = tokio::select! {
                biased;
                _ = closing.wait_for(|closed| *closed) => {
                    return Err(TransportError::fatal(
                        TransportErrorKind::Io,
                        format!(
                            "the connection to {} was closed while the request was in flight",
                            shared.display_url
                        ),
                    ));
                }
                posted = shared.post_routed(Message::Request(request), AnswerTo::Caller) => {
                    posted.map_err(|e| e.error)?
                }
            };
            if let (Some(ticket), Some(incoming)) = (posted.forwarded, shared.incoming()) {
                incoming.dispatched(ticket).await;
            }
            match posted.answer {
                Some(Ok(Message::Response(response))) => Ok(response.outcome),
                Some(Ok(_)) => Err(TransportError::recoverable(
                    TransportErrorKind::InvalidMessage,
                    format!(
                        "{} answered with a message that is not a response",
                        shared.display_url
                    ),
                )),
                Some(Err(e)) => Err(e),
                None if shared.incoming().is_none_or(|i| i.is_closed()) => {
                    Err(TransportError::fatal(
                        TransportErrorKind::PeerGone,
                        "the transport was closed while the answer was being read",
                    ))
                }
                None => Err(shared.response_missing(&id)),
            }
        }))
    }

    /// POSTs one message and routes what comes back.
    pub(crate) async fn post(self: &Arc<Self>, message: Message) -> Result<(), PostError> {
        self.post_routed(message, AnswerTo::Reader).await.map(drop)
    }

    /// POSTs one message; the answer to a request goes to `answer_to`, everything else the
    /// server sends to the reader.
    async fn post_routed(
        self: &Arc<Self>,
        message: Message,
        answer_to: AnswerTo,
    ) -> Result<Posted, PostError> {
        let shared = self;
        let mut posted = Posted {
            answer: None,
            forwarded: None,
        };
        if shared.closed.load(Ordering::Acquire) {
            return Err(PostError::from(TransportError::fatal(
                TransportErrorKind::Closed,
                format!("the connection to {} is closed", shared.display_url),
            )));
        }
        let modern = shared.is_modern();
        let is_initialize =
            matches!(&message, Message::Request(r) if r.method == methods::INITIALIZE);
        let request_id = match &message {
            Message::Request(r) => Some(r.id.clone()),
            _ => None,
        };
        let lists_tools =
            modern && matches!(&message, Message::Request(r) if r.method == methods::TOOLS_LIST);
        let probing =
            matches!(&message, Message::Request(r) if r.method == methods::SERVER_DISCOVER);
        let metadata = match &message {
            Message::Request(r) if modern => Some(shared.metadata_headers(r)?),
            _ => None,
        };
        let opens_session = matches!(&message, Message::Notification(n) if n.method == mcp_core::types::methods::NOTIFICATION_INITIALIZED);
        let body = message_body(&message)?;
        let cancels = match &message {
            Message::Notification(n) if n.method == methods::NOTIFICATION_CANCELLED => n
                .params
                .as_ref()
                .and_then(|p| p.deserialize::<CancelledNotificationParams>().ok())
                .map(|p| p.request_id),
            _ => None,
        };
        if let Some(cancelled) = cancels {
            // Nobody waits for anything more of that request: stop following its stream now,
            // whether or not the cancellation's own POST gets through (a stalled server may
            // take it and never answer).
            let mut streams = lock(&shared.post_streams);
            if let Some(at) = streams.iter().position(|(id, _)| *id == cancelled) {
                streams.swap_remove(at).1.abort();
            }
            drop(streams);
            if modern {
                // Closing the request's stream was the cancellation.
                return Ok(posted);
            }
        }
        // (After the cancellation's bookkeeping: a request cancelled meanwhile stops being
        // followed all the same.)
        if !is_initialize && shared.session_lost.load(Ordering::Acquire) {
            return Err(PostError::from(
                TransportError::recoverable(
                    TransportErrorKind::SessionExpired,
                    format!(
                        "{} forgot this session; a new one is being made",
                        shared.display_url
                    ),
                )
                .never_sent(),
            ));
        }
        let had_session = lock(&shared.session_id).is_some();
        let mut headers = shared.request_headers(POST_ACCEPT);
        headers.metadata = metadata;
        let response = shared.execute(Method::POST, &headers, Some(body)).await?;
        let status = response.status();
        if let Some(id) = response.headers().get(SESSION_ID).filter(|_| !modern) {
            let mut session = lock(&shared.session_id);
            if session.is_none() {
                if let Err(why) = check_session_id(id) {
                    drop(session);
                    return Err(PostError {
                        status: Some(status),
                        error: TransportError::recoverable(
                            TransportErrorKind::InvalidMessage,
                            format!(
                                "{} sent an unusable Mcp-Session-Id: {why}",
                                shared.display_url
                            ),
                        )
                        .for_request(request_id),
                    });
                }
                *session = Some(id.clone());
            }
        }
        if is_initialize && status.is_success() {
            // A new session (a server may also go on without session ids).
            shared.session_lost.store(false, Ordering::Release);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            // The session is gone: the next initialize starts a new one, and the standalone
            // stream is reopened after it. Until then other requests are refused here.
            if lock(&shared.session_id).take().is_some() {
                shared.session_lost.store(true, Ordering::Release);
            }
            if let Some(get) = lock(&shared.get_task).take() {
                get.abort();
            }
            shared.get_stream_started.store(false, Ordering::Release);
            return Err(PostError::from(TransportError::recoverable(
                TransportErrorKind::SessionExpired,
                format!(
                    "{} no longer knows this session (HTTP 404)",
                    shared.display_url
                ),
            )));
        }
        if !status.is_success() {
            if modern {
                // A modern server explains a 4xx with a JSON-RPC error (unsupported version,
                // header mismatch, unknown method): that is the request's answer.
                let (error, answer) =
                    status_answer(response, &shared.display_url, TransportErrorKind::Io).await;
                // While probing, only an error of the MCP-reserved range proves a modern
                // server: anything else (a legacy server's -32000) stays an HTTP failure, so
                // the flavor detection can still try legacy SSE.
                let answer = answer.filter(|a| {
                    !probing
                        || a.outcome
                            .as_ref()
                            .err()
                            .is_some_and(|e| mcp_core::types::error_codes::is_modern(e.code))
                });
                if let (Some(mut answer), Some(id)) = (answer, request_id.clone()) {
                    answer.id = Some(id);
                    if answer_to == AnswerTo::Caller {
                        posted.answer = Some(Ok(Message::Response(answer)));
                        return Ok(posted);
                    }
                    if let Some(incoming) = shared.incoming() {
                        let _ = incoming.send(Ok(Message::Response(answer))).await;
                        return Ok(posted);
                    }
                }
                return Err(PostError {
                    status: Some(status),
                    error,
                });
            }
            return Err(PostError {
                status: Some(status),
                error: status_error(response, &shared.display_url, TransportErrorKind::Io).await,
            });
        }
        if opens_session && !shared.get_stream_started.swap(true, Ordering::AcqRel) {
            // Open the standalone stream before the session goes on: servers send
            // server-initiated requests (elicitation, sampling) there and may drop them while no
            // stream is open. Bounded: a slow or silent server only delays the start a little.
            let (opened_tx, opened) = tokio::sync::oneshot::channel();
            let task = tokio::spawn(shared.clone().run_get_stream(opened_tx)).abort_handle();
            *lock(&shared.get_task) = Some(task.clone());
            lock(&shared.tasks).push(task);
            let _ = tokio::time::timeout(GET_STREAM_OPEN_WAIT, opened).await;
        }
        let Some(id) = request_id else {
            // Notifications and responses: 202 Accepted, nothing to read.
            return Ok(posted);
        };
        if let Some(error) = unexpected_encoding(response.headers(), &shared.display_url) {
            return Err(PostError {
                status: Some(status),
                error: error.for_request(Some(id)),
            });
        }
        if is_event_stream(response.headers()) {
            // The answer has usually arrived with the headers: read what is in here, and
            // follow the stream in a task only when more is to come.
            let mut response = response;
            let mut parser = SseParser::new(shared.config.max_message_size);
            let mut end = StreamEnd::Waiting;
            for pass in 0..2 {
                if pass > 0 {
                    // hyper hands the body over one piece at a time, and most servers send a
                    // priming event before the answer: let the connection's task run once
                    // more. (`yield_now` defers this task until the scheduler has run every
                    // ready task, a `LocalSet`'s included; waking itself would not, there.)
                    tokio::task::yield_now().await;
                }
                let to = (answer_to, &mut posted.forwarded);
                end = shared
                    .pump_sse(
                        &mut response,
                        &mut parser,
                        Some(&id),
                        lists_tools,
                        false,
                        to,
                    )
                    .await;
                if !matches!(end, StreamEnd::Waiting) {
                    break;
                }
            }
            if answer_to == AnswerTo::Caller {
                // The stream is followed here, in the caller's future: dropping it closes the
                // stream (the cancellation, in the modern era).
                let to = (answer_to, &mut posted.forwarded);
                let following = shared.follow(response, parser, &id, lists_tools, end, to);
                posted.answer = Box::pin(following).await;
                return Ok(posted);
            }
            if matches!(
                end,
                StreamEnd::Answered | StreamEnd::Closed | StreamEnd::Kept(_)
            ) {
                return Ok(posted);
            }
            // Boxed: the follower's future is about 2 KiB, which spawning would copy around
            // several times.
            let task = tokio::spawn(Box::pin(shared.clone().follow_post_stream(
                response,
                parser,
                id.clone(),
                lists_tools,
                end,
            )))
            .abort_handle();
            let mut streams = lock(&shared.post_streams);
            streams.retain(|(_, t)| !t.is_finished());
            streams.push((id, task));
            return Ok(posted);
        }
        if status == StatusCode::ACCEPTED {
            return Err(PostError::from(TransportError::recoverable(
                TransportErrorKind::InvalidMessage,
                format!(
                    "{} accepted a request without answering it (HTTP 202)",
                    shared.display_url
                ),
            )));
        }
        // A plain JSON answer: read it here (bounded), hand it to the reader. Read as JSON
        // whatever its `Content-Type` says (servers label JSON `text/plain` or `text/json`
        // too); only a body that is not JSON is the label's fault: something else answered
        // (a login page, a proxy), and the request fails now, naming what came back, instead
        // of waiting for an answer that cannot come.
        let content_type = (!is_json_or_untyped(response.headers()))
            .then(|| response.headers().get(CONTENT_TYPE).cloned())
            .flatten();
        let limit = shared.config.max_message_size;
        let bytes = read_limited(response, limit)
            .await
            .map_err(|e| PostError::from(e.for_request(Some(id.clone()))))?;
        let parsed = match parse_json_body(&bytes, &shared.display_url) {
            Ok(parsed) => parsed,
            Err(why) => {
                let error = match &content_type {
                    Some(content_type) => unexpected_content_error(
                        &shared.display_url,
                        status,
                        content_type,
                        &bytes,
                        "application/json or text/event-stream",
                    ),
                    None => TransportError::recoverable(
                        TransportErrorKind::InvalidMessage,
                        format!("{} sent {why}", shared.display_url),
                    ),
                };
                // The body was the answer to request `id`: its failure.
                vec![Err(error.for_request(Some(id.clone())))]
            }
        };
        let mut answered = false;
        let Some(incoming) = shared.incoming() else {
            // The server answered, so it handled the request: not `Closed` (never sent).
            return Err(PostError::from(TransportError::fatal(
                TransportErrorKind::PeerGone,
                "the transport was closed while the answer was being read",
            )));
        };
        for item in parsed {
            let item = if lists_tools {
                shared.learn_tool_headers(item)
            } else {
                item
            };
            let is_answer = match &item {
                Ok(Message::Response(r)) => answers(r, &id),
                Err(e) => e.request_id().is_some_and(|r| r.answers(&id)),
                Ok(_) => false,
            };
            answered |= is_answer;
            if is_answer && answer_to == AnswerTo::Caller {
                posted.answer = Some(item);
                continue;
            }
            match incoming.send(item).await {
                // Only what came before the answer must be dispatched before it.
                Ok(ticket) if posted.answer.is_none() => posted.forwarded = Some(ticket),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if !answered && answer_to == AnswerTo::Reader {
            // A JSON answer is the whole answer: without the response (another id, only
            // notifications), nothing more can come for the request.
            shared.send_failure(shared.response_missing(&id)).await;
        }
        Ok(posted)
    }
}

/// The sending half: one POST per message.
pub struct HttpSender {
    shared: Arc<Shared>,
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
/// not a message is an error for the request it names ([`mcp_core::jsonrpc::request_id_of`]),
/// so that request fails at once instead of waiting for its deadline.
pub(crate) fn event_message(data: String, display_url: &str) -> Result<Message, TransportError> {
    let data = Arc::new(data.into_bytes());
    Message::from_shared_line(&data).map_err(|e| {
        TransportError::recoverable(
            TransportErrorKind::InvalidMessage,
            format!("{display_url} sent an event that is not a message: {e}"),
        )
        .for_request(mcp_core::jsonrpc::request_id_of(&data))
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

/// Whether an answer is an SSE stream (`text/event-stream`, any case, any parameters).
fn is_event_stream(headers: &HeaderMap) -> bool {
    const EVENT_STREAM: &[u8] = b"text/event-stream";
    headers.get(CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes()
            .get(..EVENT_STREAM.len())
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case(EVENT_STREAM))
    })
}

/// Whether a `Content-Type` says JSON (`application/json`, or `application/…+json`, any case,
/// any parameters), or is missing (the body is then read as JSON, and fails as such).
fn is_json_or_untyped(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return true;
    };
    let bytes = value.as_bytes();
    let essence = bytes
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii()
        .to_ascii_lowercase();
    essence == b"application/json"
        || (essence.starts_with(b"application/") && essence.ends_with(b"+json"))
}

/// Checks a session id the server hands out: the spec allows visible ASCII only
/// (0x21–0x7E), and this client at most [`MAX_SESSION_ID_LEN`] bytes of it (it goes back on
/// every request). The reason names the problem, never the id.
fn check_session_id(id: &HeaderValue) -> Result<(), String> {
    let bytes = id.as_bytes();
    if bytes.is_empty() {
        return Err("it is empty".to_owned());
    }
    if bytes.len() > MAX_SESSION_ID_LEN {
        return Err(format!(
            "it is {} bytes long, more than the {MAX_SESSION_ID_LEN} accepted",
            bytes.len()
        ));
    }
    if let Some(at) = bytes.iter().position(|b| !(0x21..=0x7e).contains(b)) {
        return Err(format!(
            "byte {at} is 0x{:02x}; only visible ASCII (0x21-0x7E) is allowed",
            bytes[at]
        ));
    }
    Ok(())
}

/// One message, or a batch (2025-03-26 servers). A body that is not even one message is an
/// error (why, for the caller to turn into the failure of the request it answered); one bad
/// item of a batch is skipped.
fn parse_json_body(
    bytes: &[u8],
    display_url: &str,
) -> Result<Vec<Result<Message, TransportError>>, String> {
    let trimmed = bytes.trim_ascii_start();
    if trimmed.first() == Some(&b'[') {
        let items = serde_json::from_slice::<Vec<Box<serde_json::value::RawValue>>>(trimmed)
            .map_err(|e| format!("an invalid JSON batch: {e}"))?;
        Ok(items
            .iter()
            .map(|raw| {
                Message::from_json_str(raw.get()).map_err(|e| {
                    TransportError::recoverable(
                        TransportErrorKind::InvalidMessage,
                        format!("{display_url} sent {e}"),
                    )
                })
            })
            .collect())
    } else {
        Ok(vec![Ok(
            Message::from_slice(bytes).map_err(|e| e.to_string())?
        )])
    }
}
