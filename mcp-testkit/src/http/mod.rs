//! The fixture over HTTP, bound to loopback only: **Streamable HTTP** (revision 2025-11-25) at
//! `/mcp` and the **HTTP+SSE** transport (2024-11-05) at `/sse` + `/message`, with
//! fault injection (the `--http-*` flags of [`ServerOptions`]).
//!
//! Every Streamable HTTP session (`Mcp-Session-Id`) and every HTTP+SSE connection has its own
//! [`FixtureServer`](crate::FixtureServer); under `--http-stateless` one implicit session serves
//! everything. Under `--era dual|modern`, a POST without a session id whose
//! `MCP-Protocol-Version` is 2026-07-28 goes to one implicit modern server (the era has no
//! sessions; its tasks live there).
//!
//! # Streamable HTTP (`/mcp`)
//! - POST: `Accept` must cover `application/json` and `text/event-stream` (406),
//!   `Content-Type` must be `application/json` (415), the body one JSON-RPC message (invalid
//!   JSON or envelope → 400 with a JSON-RPC error, nothing handled), at most 64 MiB (413).
//!   `initialize` without a session id creates a session (`Mcp-Session-Id` response header);
//!   every other message needs the header (missing → 400, unknown or expired → 404). After
//!   initialize an `MCP-Protocol-Version` header, if present, must be a supported revision (400).
//!   Notifications and responses → 202 without body. Requests → a `text/event-stream`
//!   response: a priming event (`id` + empty `data`; only when the negotiated revision is
//!   2025-11-25 or later, or under `--http-drop-sse-after`), the messages routed to it, the
//!   response, then the end of the body. Under `--http-json`: one `application/json` response.
//! - GET (`Accept: text/event-stream`, 406 otherwise): the standalone stream. A new GET
//!   replaces the previous one (which is closed). With `Last-Event-ID: <stream>-<seq>` it
//!   resumes that stream instead: the kept events after `seq` are replayed (unknown stream →
//!   400), then the stream continues; a finished POST stream closes after the replay.
//! - DELETE: ends the session (200): its requests in flight are cancelled and its streams
//!   closed; later requests with its id get 404. 405 when stateless (where GET still opens the
//!   implicit session's standalone stream).
//!
//! # Routing of the server's messages
//! - A response goes to the POST that carried the request (its SSE stream, or its JSON body).
//! - Messages emitted while a POST's request is being handled synchronously (e.g. `log`'s
//!   `notifications/message`) go on that POST's stream — except session-wide notifications
//!   (`notifications/resources/updated`, `notifications/*/list_changed`), which go to the
//!   standalone stream when a GET is attached (else on the POST stream, so they are not lost).
//! - `notifications/progress` goes to the stream of the request that carried the
//!   `progressToken`, before that request's response.
//! - A server→client request (`ask_roots`, `ask_sampling`, `ask_elicitation`) goes to the
//!   stream of the oldest open `ask_*` `tools/call` that has not had its request yet;
//!   a `notifications/cancelled` for it follows it there.
//! - Everything else, and anything whose POST stream has finished, goes to the standalone
//!   stream. While no GET is attached those events are buffered (the last 256) and flushed to
//!   the next GET. Under `--http-json` there are no POST streams: all of it goes there.
//! - Every event has an id `<stream>-<seq>`; the last 256 events of each stream (and the 32
//!   most recently finished POST streams) are kept for `Last-Event-ID` resumption. A dropped
//!   POST connection is not a cancellation: its response waits for a resuming GET.
//!
//! # HTTP+SSE (`/sse`, `/message`)
//! GET `/sse` opens a session whose first event is `event: endpoint` with
//! `data: /message?sessionId=<id>`; POST `/message?sessionId=<id>` → 202 (unknown → 404,
//! invalid JSON → 400), and every server message (responses too) is an `event: message` on
//! the GET stream. The session ends when the GET stream closes.
//!
//! # DNS rebinding protection
//! The server listens on loopback only, and answers 403 to any request whose `Host` or
//! `Origin` header names another host (`localhost`, `127.0.0.0/8` and `[::1]` are loopback,
//! with any port): a web page whose name was rebound to 127.0.0.1 cannot reach it from a
//! browser. Requests without the headers (non-browser clients) are served.
//!
//! # Faults
//! `--http-fail-first N` (first N POSTs on either transport → 503), `--http-delay-ms N` (every
//! HTTP response delayed), `--http-drop-sse-after N` (each POST stream closed after N events
//! not counting the priming one, before its response, once; `retry: 100` advertised in the
//! priming event), `--http-expire-session-after N` (after N JSON-RPC requests, initialize
//! included, any request carrying the session id gets 404), `--http-json`, `--http-no-get`
//! (GET → 405, so no resumption either), `--http-stateless` (no `Mcp-Session-Id`).
//! `--http-control` serves `POST /control/fail-next/N` (a burst of 503s at a moment a test
//! chooses), `POST /control/expire-sessions` and `GET /control/posts` (the POSTs taken so far, over
//! every session: what a test counts calls with). `--http-bearer TOKEN` answers 401 (with `WWW-Authenticate`) to any request without
//! `Authorization: Bearer TOKEN`. On `tools/call` POSTs only (server-wide, never handled): `--http-stall-first N` (no headers,
//! ever), `--http-trickle-first N` (200, headers, then one byte every 100 ms forever),
//! `--http-endless-error-first N` (500 with an endless body).
//!
//! # OAuth mode
//! `--oauth` ([`ServerOptions::oauth`], with `--oauth-token-ttl SECS`,
//! `--oauth-required-scope S`, `--oauth-dpop`, `--oauth-dpop-nonce` and the other
//! `--oauth-dpop-*` flags): `/mcp`, `/sse` and
//! `/message` answer 401/403 with a `WWW-Authenticate: Bearer` challenge (RFC 6750, RFC 9728
//! `resource_metadata`; a `DPoP` challenge under `--oauth-dpop`, RFC 9449) unless the
//! request carries a valid access token from the fixture's own mock authorization server (and,
//! for a DPoP-bound token, a valid proof), which serves the protected resource metadata, RFC
//! 8414 metadata, `/register`, `/authorize`, `/token`, `/revoke` and
//! `/control/oauth/{expire-tokens,revoke-all,rotate-dpop-nonce,stats}` on the same origin;
//! [`HttpFixture::oauth_stats`] reads its counters. See [`crate::oauth`].

mod faults;
mod http_sse;
mod session;
mod streamable;

use std::collections::HashMap;
use std::convert::Infallible;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, LengthLimitError, Limited};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use crate::jsonrpc::{self, RpcError};
use crate::options::ServerOptions;
use crate::stdio::MAX_LINE_BYTES;

use http_sse::HttpSseSession;
use session::{EventReceiver, Session};

/// Path of the Streamable HTTP endpoint.
pub const MCP_PATH: &str = "/mcp";
/// Path of the HTTP+SSE stream.
pub const SSE_PATH: &str = "/sse";
/// Path HTTP+SSE clients POST to (with `?sessionId=`).
pub const MESSAGE_PATH: &str = "/message";
/// The session header (HTTP header names are case-insensitive).
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The protocol version header.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// JSON-RPC error code used in the bodies of HTTP-level errors.
const HTTP_ERROR_CODE: i64 = -32000;

/// A running HTTP fixture. Dropping it (or [`shutdown`](Self::shutdown)) stops the listener,
/// every connection and every session.
pub struct HttpFixture {
    local_addr: SocketAddr,
    shared: Arc<HttpFixtureState>,
    accept: Option<JoinHandle<()>>,
}

impl HttpFixture {
    /// The bound address (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `http://IP:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// The Streamable HTTP endpoint, `http://IP:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.local_addr)
    }

    /// The HTTP+SSE stream URL, `http://IP:PORT/sse`.
    pub fn sse_url(&self) -> String {
        format!("http://{}{SSE_PATH}", self.local_addr)
    }

    /// Live Streamable HTTP sessions (not counting the stateless one).
    pub fn session_count(&self) -> usize {
        lock(&self.shared.sessions).len()
    }

    /// Live HTTP+SSE sessions.
    pub fn http_sse_session_count(&self) -> usize {
        lock(&self.shared.http_sse_sessions).len()
    }

    /// The OAuth mode's counters so far (`None` unless [`ServerOptions::oauth`] is set).
    pub fn oauth_stats(&self) -> Option<crate::oauth::OAuthStats> {
        self.shared.oauth.as_ref().map(|oauth| oauth.stats())
    }

    /// Stops the server and waits until the listener is closed and every connection aborted.
    pub async fn shutdown(mut self) {
        if let Some(accept) = self.accept.take() {
            accept.abort();
            // The accept task owns the connection tasks: once it is gone, so are they.
            let _ = accept.await;
        }
        self.shared.close_all();
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        if let Some(accept) = self.accept.take() {
            accept.abort();
        }
        self.shared.close_all();
    }
}

impl std::fmt::Debug for HttpFixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpFixture")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

/// Serves the fixture over HTTP on `addr`, which must be a loopback address (port 0 picks a
/// free port). Must be called within a tokio runtime; the server runs in spawned tasks until
/// the returned handle is shut down or dropped.
pub async fn serve_http(options: ServerOptions, addr: SocketAddr) -> io::Result<HttpFixture> {
    if !addr.ip().is_loopback() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to serve HTTP on {addr}: only loopback addresses are allowed"),
        ));
    }
    let listener = TcpListener::bind(addr).await?;
    let local_addr = listener.local_addr()?;
    let stateless = options.http_stateless.then(|| Session::new(None, &options));
    let modern = options
        .era
        .serves_modern()
        .then(|| Session::new(None, &options));
    let oauth = options
        .oauth
        .clone()
        .map(|o| crate::oauth::AuthServer::new(o, local_addr));
    let shared = Arc::new(HttpFixtureState {
        options,
        oauth,
        sessions: Mutex::new(HashMap::new()),
        stateless,
        modern,
        http_sse_sessions: Mutex::new(HashMap::new()),
        posts: AtomicU64::new(0),
        call_faults: faults::CallFaults::default(),
        fail_next: AtomicU64::new(0),
        crash: tokio::sync::Notify::new(),
    });
    let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
    Ok(HttpFixture {
        local_addr,
        shared,
        accept: Some(accept),
    })
}

/// State shared by all connections.
pub(crate) struct HttpFixtureState {
    pub(crate) options: ServerOptions,
    /// The OAuth mode's authorization server and token gate (`--oauth`).
    pub(crate) oauth: Option<crate::oauth::AuthServer>,
    pub(crate) sessions: Mutex<HashMap<String, Arc<Session>>>,
    pub(crate) stateless: Option<Arc<Session>>,
    /// `--era dual|modern`: the server of the 2026-07-28 requests (which carry no session id).
    pub(crate) modern: Option<Arc<Session>>,
    pub(crate) http_sse_sessions: Mutex<HashMap<String, Arc<HttpSseSession>>>,
    posts: AtomicU64,
    pub(crate) call_faults: faults::CallFaults,
    /// `/control/fail-next/N`: POSTs still to answer with 503.
    fail_next: AtomicU64,
    /// Set by the `crash` tool: the server dies — the listener and every connection are
    /// dropped at once, without an answer (the process goes on: tests serve in process).
    crash: tokio::sync::Notify,
}

impl HttpFixtureState {
    /// The `crash` tool: the server dies now. Never returns — the request's connection is
    /// dropped with every other one.
    pub(crate) async fn crash(&self) -> HttpResponse {
        tracing::debug!("crash tool: dropping the HTTP server and every connection");
        self.crash.notify_one();
        std::future::pending().await
    }

    /// Counts a POST; true if `--http-fail-first` (or `/control/fail-next`) says to fail it.
    fn fail_post(&self) -> bool {
        let n = self.posts.fetch_add(1, Ordering::Relaxed);
        let burst = self
            .fail_next
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(1)
            })
            .is_ok();
        n < self.options.http_fail_first || burst
    }

    /// `--http-control`: `/control/fail-next/N`, `/control/expire-sessions` and
    /// `/control/posts` (how many POSTs the server took, over all sessions: `{"posts": N}`).
    fn control(&self, path: &str) -> HttpResponse {
        if let Some(n) = path.strip_prefix("/control/fail-next/") {
            return match n.parse::<u64>() {
                Ok(n) => {
                    self.fail_next.store(n, Ordering::Release);
                    empty_response(StatusCode::NO_CONTENT)
                }
                Err(_) => error_response(StatusCode::BAD_REQUEST, "expected a number"),
            };
        }
        if path == "/control/posts" {
            let posts = self.posts.load(Ordering::Relaxed);
            return json_response(
                StatusCode::OK,
                serde_json::json!({ "posts": posts }).to_string(),
            );
        }
        if path == "/control/expire-sessions" {
            let sessions: Vec<_> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
            for session in sessions {
                session.close();
            }
            return empty_response(StatusCode::NO_CONTENT);
        }
        error_response(StatusCode::NOT_FOUND, "unknown control")
    }

    fn close_all(&self) {
        let sessions: Vec<_> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.close();
        }
        for session in self.stateless.iter().chain(&self.modern) {
            session.close();
        }
        let sessions: Vec<_> = lock(&self.http_sse_sessions)
            .drain()
            .map(|(_, s)| s)
            .collect();
        for session in sessions {
            session.close();
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<HttpFixtureState>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            // The `crash` tool: returning drops the listener and (with the JoinSet) every
            // connection task, so clients see their connections reset without an answer.
            _ = shared.crash.notified() => {
                shared.close_all();
                return;
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let _ = stream.set_nodelay(true);
                    let shared = Arc::clone(&shared);
                    connections.spawn(async move {
                        let service = hyper::service::service_fn(move |request| {
                            let shared = Arc::clone(&shared);
                            async move { Ok::<_, Infallible>(handle(shared, request).await) }
                        });
                        if let Err(e) = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await
                        {
                            tracing::debug!(error = %e, "HTTP connection ended with an error");
                        }
                    });
                }
                Err(e) => {
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn handle(shared: Arc<HttpFixtureState>, request: Request<Incoming>) -> HttpResponse {
    if let Some(refused) = refuse_foreign_host(request.headers()) {
        return refused;
    }
    let delay = shared.options.http_delay_ms;
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    if let Some(oauth) = &shared.oauth {
        let path = request.uri().path();
        if crate::oauth::is_oauth_path(path) {
            return oauth.handle(request).await;
        }
        if matches!(path, MCP_PATH | SSE_PATH | MESSAGE_PATH) {
            if let Some(refused) = oauth.refusal(request.method(), path, request.headers()) {
                return refused;
            }
            // What the gate adds (a DPoP nonce) goes on whatever the request is answered.
            let mut response = handle_admitted(&shared, request).await;
            response.headers_mut().extend(oauth.admitted_headers());
            return response;
        }
    }
    handle_admitted(&shared, request).await
}

/// Everything after the OAuth mode's gate.
async fn handle_admitted(
    shared: &Arc<HttpFixtureState>,
    request: Request<Incoming>,
) -> HttpResponse {
    if let Some(token) = &shared.options.http_bearer {
        let expected = format!("Bearer {token}");
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if presented != Some(expected.as_str()) {
            let mut response = error_response(StatusCode::UNAUTHORIZED, "Unauthorized");
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"fixture\""),
            );
            return response;
        }
    }
    if shared.options.http_control && request.uri().path().starts_with("/control/") {
        return shared.control(request.uri().path());
    }
    if request.method() == Method::POST && shared.fail_post() {
        // `Retry-After`: the server says it did not handle the request.
        let mut response = error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "injected failure (--http-fail-first)",
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("0"));
        return response;
    }
    match request.uri().path() {
        MCP_PATH => streamable::handle(shared, request).await,
        SSE_PATH => http_sse::handle_sse(shared, &request),
        MESSAGE_PATH => http_sse::handle_message(shared, request).await,
        _ => error_response(StatusCode::NOT_FOUND, "not found"),
    }
}

/// DNS rebinding protection: 403 when `Host` or `Origin` names a host that is not loopback.
fn refuse_foreign_host(headers: &HeaderMap) -> Option<HttpResponse> {
    for name in [header::HOST, header::ORIGIN] {
        for value in headers.get_all(&name) {
            let text = value.to_str().unwrap_or("");
            let authority = if name == header::ORIGIN {
                text.split_once("://").map_or("", |(_, rest)| rest)
            } else {
                text
            };
            if !is_loopback_authority(authority) {
                tracing::debug!(header = %name, value = text, "refusing a non-loopback host");
                return Some(error_response(
                    StatusCode::FORBIDDEN,
                    &format!("Forbidden: {name} {text:?} is not a loopback host (DNS rebinding protection)"),
                ));
            }
        }
    }
    None
}

/// Whether `host[:port]` (an IPv6 address in brackets) names the loopback interface:
/// `localhost`, an address in `127.0.0.0/8` or `::1`.
fn is_loopback_authority(authority: &str) -> bool {
    let authority = authority.split('/').next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((host, port)) if port.is_empty() || port.starts_with(':') => host,
            _ => return false,
        },
        None => authority.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Response body type of every handler.
pub(crate) type HttpBody = UnsyncBoxBody<Bytes, Infallible>;
/// Response type of every handler.
pub(crate) type HttpResponse = Response<HttpBody>;

/// An SSE response body fed by a channel; it ends when every sender is gone.
struct SseBody {
    rx: EventReceiver,
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let first = match self.rx.poll_recv(cx) {
            Poll::Ready(Some(event)) => event,
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        // The events queued already go out as one chunk: a request's stream is mostly ready
        // whole (priming event, response), and one chunk is less framing for hyper to write
        // and for the client to read than one per event.
        let Ok(second) = self.rx.try_recv() else {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        };
        let mut joined = BytesMut::with_capacity(first.len() + second.len());
        joined.extend_from_slice(&first);
        joined.extend_from_slice(&second);
        while let Ok(more) = self.rx.try_recv() {
            joined.extend_from_slice(&more);
        }
        Poll::Ready(Some(Ok(Frame::data(joined.freeze()))))
    }
}

fn response(
    status: StatusCode,
    content_type: Option<&'static str>,
    body: HttpBody,
) -> HttpResponse {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    if let Some(content_type) = content_type {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    response
}

/// A `text/event-stream` response fed by `rx`.
pub(crate) fn sse_response(mut rx: EventReceiver) -> HttpResponse {
    let body = if rx.is_closed() {
        // Nothing more will come (a request answered while it was handled, a finished stream
        // replayed): the events queued are the whole body, sent with its length rather than
        // as a stream.
        let mut events = BytesMut::new();
        while let Ok(event) = rx.try_recv() {
            events.extend_from_slice(&event);
        }
        UnsyncBoxBody::new(Full::new(events.freeze()))
    } else {
        UnsyncBoxBody::new(SseBody { rx })
    };
    let mut response = response(StatusCode::OK, Some("text/event-stream"), body);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// An `application/json` response.
pub(crate) fn json_response(status: StatusCode, json: String) -> HttpResponse {
    response(
        status,
        Some("application/json"),
        UnsyncBoxBody::new(Full::new(Bytes::from(json))),
    )
}

/// A response without body.
pub(crate) fn empty_response(status: StatusCode) -> HttpResponse {
    response(status, None, UnsyncBoxBody::new(Empty::new()))
}

/// An HTTP error whose body is a JSON-RPC error without id.
pub(crate) fn error_response(status: StatusCode, message: &str) -> HttpResponse {
    rpc_error_response(status, &RpcError::new(HTTP_ERROR_CODE, message))
}

/// An HTTP error whose body is the given JSON-RPC error, without id.
pub(crate) fn rpc_error_response(status: StatusCode, error: &RpcError) -> HttpResponse {
    json_response(status, jsonrpc::error_line(None, error))
}

/// A refused HTTP request: the status and the JSON-RPC error (without id) of the body.
pub(crate) struct Reject {
    status: StatusCode,
    error: RpcError,
}

impl Reject {
    /// A rejection with a `-32000` error carrying `message`.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self::rpc(status, RpcError::new(HTTP_ERROR_CODE, message))
    }

    /// A rejection with the given JSON-RPC error.
    pub(crate) fn rpc(status: StatusCode, error: RpcError) -> Self {
        Self { status, error }
    }

    /// The HTTP response.
    pub(crate) fn response(&self) -> HttpResponse {
        rpc_error_response(self.status, &self.error)
    }
}

/// 405 with an `Allow` header.
pub(crate) fn method_not_allowed(allow: &'static str) -> HttpResponse {
    let mut response = error_response(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// Reads a request body of at most [`MAX_LINE_BYTES`].
pub(crate) async fn read_body(body: Incoming) -> Result<Bytes, Reject> {
    match Limited::new(body, MAX_LINE_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(Reject::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body exceeds {MAX_LINE_BYTES} bytes"),
        )),
        Err(e) => Err(Reject::new(
            StatusCode::BAD_REQUEST,
            format!("failed to read the request body: {e}"),
        )),
    }
}

/// Whether the `Accept` headers cover `wanted` (`type/subtype`; wildcards count).
pub(crate) fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    let kind = wanted.split('/').next().unwrap_or(wanted);
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|range| {
            let range = range.split(';').next().unwrap_or("").trim();
            range.eq_ignore_ascii_case(wanted)
                || range == "*/*"
                || range
                    .strip_suffix("/*")
                    .is_some_and(|t| t.eq_ignore_ascii_case(kind))
        })
}

/// Whether `Content-Type` is `application/json` (parameters ignored).
pub(crate) fn is_json_content(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// A header's value as text, if present and visible ASCII.
pub(crate) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// 128 random bits as 32 hex digits (session ids).
pub(crate) fn random_hex() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut out = String::with_capacity(32);
    for _ in 0..2 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_u128(nanos);
        out.push_str(&format!("{:016x}", hasher.finish()));
    }
    out
}

/// Locks a mutex, ignoring poisoning (the state stays usable for a test fixture).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `tools/call` params call the tool `name`.
pub(crate) fn calls_tool(params: Option<&serde_json::Value>, name: &str) -> bool {
    params.and_then(|p| p.get("name")).and_then(|n| n.as_str()) == Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_matching() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;q=0.9, Text/Event-Stream"),
        );
        assert!(accepts(&headers, "application/json"));
        assert!(accepts(&headers, "text/event-stream"));
        assert!(!accepts(&headers, "text/html"));
        headers.insert(header::ACCEPT, HeaderValue::from_static("text/*"));
        assert!(accepts(&headers, "text/event-stream"));
        assert!(!accepts(&headers, "application/json"));
        assert!(!accepts(&HeaderMap::new(), "application/json"));
    }

    #[test]
    fn session_ids_are_distinct_hex() {
        let a = random_hex();
        let b = random_hex();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn loopback_authorities() {
        for ok in [
            "localhost",
            "LOCALHOST:3000",
            "127.0.0.1",
            "127.0.0.1:8080",
            "127.1.2.3:1",
            "[::1]",
            "[::1]:9000",
            "localhost:80/path",
        ] {
            assert!(is_loopback_authority(ok), "{ok}");
        }
        for bad in [
            "",
            "evil.example.com",
            "evil.example.com:3000",
            "localhost.evil.com",
            "10.0.0.1:80",
            "[::2]:80",
            "[::1",
            "[::1]x",
            "null",
        ] {
            assert!(!is_loopback_authority(bad), "{bad}");
        }
    }

    #[test]
    fn foreign_host_or_origin_is_refused() {
        let headers = |pairs: &[(header::HeaderName, &'static str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.append(name.clone(), HeaderValue::from_static(value));
            }
            map
        };
        assert!(refuse_foreign_host(&headers(&[])).is_none());
        assert!(refuse_foreign_host(&headers(&[
            (header::HOST, "127.0.0.1:4000"),
            (header::ORIGIN, "http://localhost:4000"),
        ]))
        .is_none());
        let refused = |pairs| {
            refuse_foreign_host(&headers(pairs))
                .map(|r| r.status())
                .expect("refused")
        };
        assert_eq!(
            refused(&[(header::HOST, "evil.example.com")]),
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            refused(&[
                (header::HOST, "127.0.0.1:4000"),
                (header::ORIGIN, "http://evil.example.com")
            ]),
            StatusCode::FORBIDDEN
        );
        assert_eq!(refused(&[(header::ORIGIN, "null")]), StatusCode::FORBIDDEN);
    }

    #[tokio::test]
    async fn refuses_non_loopback() {
        let err = serve_http(ServerOptions::default(), "0.0.0.0:0".parse().expect("addr"))
            .await
            .expect_err("refused");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
