//! Streamable HTTP, server side (`mcph serve --http ADDR`): the gateway at one endpoint
//! (`/mcp`) in both protocol eras.
//!
//! - **2025-11-25, with sessions.** A POST of `initialize` without a session opens one (the
//!   `Mcp-Session-Id` response header) with a connection of its own to the gateway's server;
//!   every later message names it (missing → 400, unknown or ended → 404). DELETE ends it. GET
//!   (`Accept: text/event-stream`) attaches the standalone stream (list changes and what no
//!   request's stream carries; kept while none is attached); with `Last-Event-ID:
//!   <stream>-<seq>` it resumes a stream instead (unknown → 400). Sessions idle for
//!   [`HttpOptions::session_idle`] (no request, none running, no standalone stream attached)
//!   are ended.
//! - **2026-07-28, stateless.** A POST without a session whose `MCP-Protocol-Version` is
//!   2026-07-28 goes to one connection all such clients share (their request ids are made
//!   unique on the way in; their `notifications/cancelled` are dropped, so no client can cancel
//!   another's request), and nothing of a client is kept between its requests but the input
//!   rounds of a call in progress (those live in this process: a replica behind a load
//!   balancer must get the round's next request). There is no GET stream; a request whose
//!   stream the client closes is cancelled.
//! - **Every POST** carries one JSON-RPC message (`Content-Type: application/json`, 415; its
//!   `Accept` must cover `application/json` and `text/event-stream`, 406; at most
//!   [`HttpOptions::max_body_bytes`], 413; not JSON-RPC, 400 with a parse error). A
//!   notification or an answer → 202. A request → a `text/event-stream` that starts at once: a
//!   priming event (its id, `retry`, empty data: what a client resumes from), what the server
//!   sends for the request — progress, logs, requests to the client — and the answer; a
//!   session's `notifications/cancelled` ends the request's stream. In the stateless era a
//!   request whose answer comes first, within half a second, is answered `application/json`. An `MCP-Protocol-Version` header the gateway does not speak → 400.
//! - **Security.** On a loopback address, a `Host` that is not a loopback name, or an
//!   `Origin` that is not a loopback origin, is refused with 403 (DNS rebinding). Every client
//!   uses the servers with the user's credentials, so another address is refused unless
//!   clients must present a bearer token ([`HttpOptions::bearer_token`]; 401 without it) and
//!   the gateway serves TLS ([`HttpOptions::tls`], [`tls_from_pem`]). At most [`HttpOptions::max_in_flight`] requests of one
//!   session (or of the stateless clients together) run at once; more get 429.

// A refusal is a whole response, built once and returned as is.
#![allow(clippy::result_large_err)]

mod body;
mod hub;

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use mcp_core::jsonrpc::Message;
use mcp_core::sync::lock;
use mcp_core::types::methods;
use mcp_core::ProtocolVersion;
use mcp_transport_local::LocalServer;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::serving::{is_loopback_authority, ServerTask};
use crate::Gateway;
use body::EventBody;
use hub::{priming_event, Hub, HubError};

/// The session header.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The protocol version header.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// The resumption header.
const LAST_EVENT_ID: &str = "last-event-id";

/// How long a client may take to send its request headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's body.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// The pause after a failed accept (out of file descriptors, say) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// How often idle sessions are looked for.
const REAP_EVERY: Duration = Duration::from_secs(30);
/// JSON-RPC's parse error.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request.
const INVALID_REQUEST: i64 = -32600;
/// The code of errors about the HTTP exchange itself.
const HTTP_ERROR: i64 = -32000;

type HttpBody = BoxBody<Bytes, Infallible>;

/// The limits of the HTTP server.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The endpoint's path.
    pub path: String,
    /// The largest request body.
    pub max_body_bytes: usize,
    /// Requests of one session (or of all stateless clients together) running at once.
    pub max_in_flight: usize,
    /// Sessions open at once; more `initialize`s get 503.
    pub max_sessions: usize,
    /// A session without a request for this long is ended.
    pub session_idle: Duration,
    /// Connections open at once; more are closed at once.
    pub max_connections: usize,
    /// The token every request must present (`Authorization: Bearer …`); required beyond
    /// loopback.
    pub bearer_token: Option<BearerToken>,
    /// Serve TLS (https) with this configuration; required beyond loopback.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// A bearer token clients must present; never shown (its `Debug` says only that it is set).
#[derive(Clone)]
pub struct BearerToken(Arc<str>);

impl BearerToken {
    /// The token (say, from an environment variable). An empty token is refused.
    pub fn new(token: impl Into<String>) -> Option<BearerToken> {
        let token = token.into();
        (!token.is_empty()).then(|| BearerToken(Arc::from(token)))
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// A TLS configuration from a PEM certificate chain and its PEM private key (what
/// `mcph serve --tls-cert --tls-key` reads); the error names what is wrong.
pub fn tls_from_pem(cert_chain: &[u8], key: &[u8]) -> Result<Arc<rustls::ServerConfig>, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_slice_iter(cert_chain)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the TLS certificate chain is not PEM: {e}"))?;
    if chain.is_empty() {
        return Err("the TLS certificate file holds no certificate".to_owned());
    }
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|e| format!("the TLS private key is not a PEM private key: {e}"))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("the TLS certificate and key do not make a server identity: {e}"))?;
    Ok(Arc::new(config))
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".to_owned(),
            max_body_bytes: 4 * 1024 * 1024,
            max_in_flight: 64,
            max_sessions: 1024,
            session_idle: Duration::from_secs(30 * 60),
            max_connections: 512,
            bearer_token: None,
            tls: None,
        }
    }
}

/// Why serving could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpServeError {
    /// The address is beyond loopback, and clients would not need a token over TLS.
    #[error(
        "refusing to serve MCP on {addr}, which is beyond loopback: every client would use the \
         servers with your credentials; add {missing}, or listen on 127.0.0.1"
    )]
    Exposed {
        /// The address.
        addr: SocketAddr,
        /// What is missing (a bearer token, TLS).
        missing: String,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
}

/// A running HTTP server; dropping it (or [`shutdown`](Self::shutdown)) stops it and closes
/// every connection and session.
#[derive(Debug)]
#[must_use = "dropping the handle stops the server"]
pub struct HttpHandle {
    local_addr: SocketAddr,
    server: ServerTask,
}

impl HttpHandle {
    /// The address it listens on (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting, ends every session and connection, and waits (boundedly) for the
    /// server task to end.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}

/// Serves `gateway` over Streamable HTTP on `addr` (loopback only; port 0 picks one) until
/// the handle is dropped or shut down.
pub async fn serve_http(
    gateway: &Gateway,
    addr: SocketAddr,
    options: HttpOptions,
) -> Result<HttpHandle, HttpServeError> {
    let loopback = addr.ip().is_loopback();
    if !loopback {
        let mut missing = Vec::new();
        if options.bearer_token.is_none() {
            missing.push("a bearer token clients must present");
        }
        if options.tls.is_none() {
            missing.push("TLS (so the token is not sent in cleartext)");
        }
        if !missing.is_empty() {
            return Err(HttpServeError::Exposed {
                addr,
                missing: missing.join(" and "),
            });
        }
    }
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| HttpServeError::Bind { addr, source })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| HttpServeError::Bind { addr, source })?;
    let shared = Arc::new(Shared {
        server: gateway.server().clone(),
        tls: options.tls.clone().map(tokio_rustls::TlsAcceptor::from),
        loopback,
        options,
        sessions: Mutex::new(HashMap::new()),
        stateless: tokio::sync::Mutex::new(None),
    });
    let server = ServerTask::spawn(|stopped| accept_loop(listener, shared, stopped));
    Ok(HttpHandle { local_addr, server })
}

struct Shared {
    server: LocalServer,
    /// Set when serving TLS.
    tls: Option<tokio_rustls::TlsAcceptor>,
    /// Bound to loopback: the Host and Origin are checked.
    loopback: bool,
    options: HttpOptions,
    sessions: Mutex<HashMap<String, Arc<Hub>>>,
    /// The stateless clients' connection, opened on first use (and again if it ended).
    stateless: tokio::sync::Mutex<Option<Arc<Hub>>>,
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    // Owns the connections: they end when this task does.
    let mut connections = JoinSet::new();
    let mut reap = tokio::time::interval(REAP_EVERY);
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = reap.tick() => reap_idle(&shared).await,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    if connections.len() >= shared.options.max_connections {
                        tracing::debug!("gateway HTTP: too many connections; closing a new one");
                        drop(stream);
                        continue;
                    }
                    connections.spawn(serve_connection(stream, shared.clone()));
                }
                Err(error) => {
                    tracing::debug!(%error, "gateway HTTP: accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
    connections.shutdown().await;
    let sessions: Vec<Arc<Hub>> = lock(&shared.sessions).drain().map(|(_, h)| h).collect();
    for hub in sessions {
        hub.close().await;
    }
    let stateless = shared.stateless.lock().await.take();
    if let Some(hub) = stateless {
        hub.close().await;
    }
}

/// Ends the sessions no request came to for `session_idle`.
async fn reap_idle(shared: &Shared) {
    let idle = shared.options.session_idle;
    let expired: Vec<Arc<Hub>> = {
        let mut sessions = lock(&shared.sessions);
        let ids: Vec<String> = sessions
            .iter()
            .filter(|(_, hub)| hub.last_used().elapsed() >= idle && !hub.is_busy())
            .map(|(id, _)| id.clone())
            .collect();
        ids.iter().filter_map(|id| sessions.remove(id)).collect()
    };
    for hub in expired {
        hub.close().await;
    }
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    // A stream's events go out as they come: the priming event, then the answer a moment
    // later, must not wait for an acknowledgement (Nagle's algorithm against delayed ACKs).
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%error, "gateway HTTP: TCP_NODELAY not set");
    }
    match shared.tls.clone() {
        None => serve_io(stream, shared).await,
        Some(acceptor) => {
            match tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => serve_io(tls, shared).await,
                Ok(Err(error)) => tracing::debug!(%error, "gateway HTTP: TLS handshake failed"),
                Err(_) => tracing::debug!("gateway HTTP: TLS handshake too slow; closed"),
            }
        }
    }
}

async fn serve_io<I>(io: I, shared: Arc<Shared>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(handle(&shared, request).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(io), service);
    if let Err(error) = connection.await {
        tracing::debug!(%error, "gateway HTTP: connection failed");
    }
}

async fn handle(shared: &Arc<Shared>, request: Request<Incoming>) -> Response<HttpBody> {
    if request.uri().path() != shared.options.path {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: the MCP endpoint is elsewhere",
        );
    }
    if let Some(token) = &shared.options.bearer_token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes)
            .unwrap_or_default();
        if !mcp_wire::bearer_matches(given, token.0.as_bytes()) {
            let mut refusal = rpc_error(
                StatusCode::UNAUTHORIZED,
                HTTP_ERROR,
                "this gateway needs `Authorization: Bearer <token>`",
            );
            refusal.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"mcph\""),
            );
            return refusal;
        }
    }
    if shared.loopback {
        if let Err(refusal) = check_origin(request.headers()) {
            return refusal;
        }
    }
    match *request.method() {
        Method::POST => post(shared, request).await,
        Method::GET => get(shared, request.headers()),
        Method::DELETE => delete(shared, request.headers()).await,
        _ => {
            let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "use POST, GET or DELETE");
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST, GET, DELETE"));
            response
        }
    }
}

/// Refuses a `Host` that is not a loopback name and an `Origin` that is not a loopback origin:
/// a web page cannot reach the gateway through DNS rebinding.
fn check_origin(headers: &HeaderMap) -> Result<(), Response<HttpBody>> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !is_loopback_authority(host) {
        return Err(rpc_error(
            StatusCode::FORBIDDEN,
            HTTP_ERROR,
            "the Host header must name a loopback address (localhost, 127.0.0.1 or [::1])",
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let authority = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        if !authority.is_some_and(is_loopback_authority) {
            return Err(rpc_error(
                StatusCode::FORBIDDEN,
                HTTP_ERROR,
                "the Origin must be a loopback origin",
            ));
        }
    }
    Ok(())
}

fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    headers.get_all(header::ACCEPT).iter().any(|value| {
        value.to_str().unwrap_or("").split(',').any(|item| {
            let media = item.split(';').next().unwrap_or("").trim();
            media == wanted || media == "*/*"
        })
    })
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

async fn post(shared: &Arc<Shared>, request: Request<Incoming>) -> Response<HttpBody> {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    if !accepts(headers, "application/json") || !accepts(headers, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            HTTP_ERROR,
            "Accept must cover application/json and text/event-stream",
        );
    }
    let json = header_text(headers, header::CONTENT_TYPE.as_str())
        .is_some_and(|t| t.split(';').next().unwrap_or("").trim() == "application/json");
    if !json {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            HTTP_ERROR,
            "Content-Type must be application/json",
        );
    }
    let version = header_text(headers, PROTOCOL_VERSION_HEADER);
    if let Some(version) = version {
        if version.parse::<ProtocolVersion>().is_err() {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                HTTP_ERROR,
                &format!("unsupported MCP-Protocol-Version {version:?}"),
            );
        }
    }
    let reading = Limited::new(body, shared.options.max_body_bytes).collect();
    let Ok(read) = tokio::time::timeout(BODY_TIMEOUT, reading).await else {
        return rpc_error(
            StatusCode::REQUEST_TIMEOUT,
            HTTP_ERROR,
            "the request body did not arrive in time",
        );
    };
    let bytes = match read {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                HTTP_ERROR,
                &format!("the body is over {} bytes", shared.options.max_body_bytes),
            )
        }
        Err(_) => return plain(StatusCode::BAD_REQUEST, "the body could not be read"),
    };
    let message = match Message::from_slice(&bytes) {
        Ok(message) => message,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                &format!("not a JSON-RPC message: {}", e.reason()),
            )
        }
    };
    let session = header_text(headers, SESSION_HEADER);
    let (hub, new_session) = match session {
        Some(id) => match lock(&shared.sessions).get(id) {
            Some(hub) => (hub.clone(), None),
            None => {
                return rpc_error(
                    StatusCode::NOT_FOUND,
                    HTTP_ERROR,
                    "unknown or ended session: initialize again",
                )
            }
        },
        None if message.method() == Some(methods::INITIALIZE) => match open_session(shared) {
            Ok((id, hub)) => (hub, Some(id)),
            Err(refusal) => return refusal,
        },
        None if version == Some(ProtocolVersion::V2026_07_28.as_str())
            || message.method() == Some(methods::SERVER_DISCOVER) =>
        {
            match stateless_hub(shared).await {
                Ok(hub) => (hub, None),
                Err(refusal) => return refusal,
            }
        }
        None => return rpc_error(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "missing Mcp-Session-Id: send initialize first (or MCP-Protocol-Version: 2026-07-28)",
        ),
    };
    let mut response = match message {
        Message::Request(request) => answer(&hub, request).await,
        other => match hub.send(other).await {
            Ok(()) => empty(StatusCode::ACCEPTED),
            Err(_) => rpc_error(StatusCode::NOT_FOUND, HTTP_ERROR, "the session has ended"),
        },
    };
    if let Some(id) = new_session {
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(SESSION_HEADER, value);
        }
    }
    response
}

/// How long a stateless request's answer may take to come first (and go out as
/// `application/json`) before its stream starts.
const JSON_ANSWER_WAIT: Duration = Duration::from_millis(500);

/// A request's answer. In a session (2025-11-25), a stream that opens at once with its
/// priming event, so a client can resume any request whose connection drops. In a 2026-07-28
/// request, JSON when the answer is the first thing the server sends for it within
/// [`JSON_ANSWER_WAIT`], else a stream.
async fn answer(hub: &Arc<Hub>, request: mcp_core::jsonrpc::Request) -> Response<HttpBody> {
    let (stream, mut events, guard) = match hub.request(request).await {
        Ok(opened) => opened,
        Err(HubError::Busy) => {
            return rpc_error(
                StatusCode::TOO_MANY_REQUESTS,
                HTTP_ERROR,
                "too many requests in flight for this client; wait for some to finish",
            )
        }
        Err(HubError::Closed) => {
            return rpc_error(StatusCode::NOT_FOUND, HTTP_ERROR, "the session has ended")
        }
    };
    if !hub.is_stateless() {
        return sse(EventBody::new(priming_event(stream), events, Some(guard)));
    }
    let first = match tokio::time::timeout(JSON_ANSWER_WAIT, events.recv()).await {
        Ok(Some(first)) => first,
        Ok(None) => {
            return rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                HTTP_ERROR,
                "the gateway closed the request before answering it",
            )
        }
        // Still running: its stream starts now.
        Err(_) => return sse(EventBody::new(Bytes::new(), events, Some(guard))),
    };
    if first.last {
        guard.answered();
        let mut response = Response::new(Full::new(first.json).boxed());
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return response;
    }
    sse(EventBody::new(first.event, events, Some(guard)))
}

fn open_session(shared: &Shared) -> Result<(String, Arc<Hub>), Response<HttpBody>> {
    let mut sessions = lock(&shared.sessions);
    if sessions.len() >= shared.options.max_sessions {
        return Err(rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            HTTP_ERROR,
            "too many sessions open; end one (DELETE) or wait",
        ));
    }
    let hub = Hub::open(&shared.server, false, shared.options.max_in_flight)
        .map_err(|e| rpc_error(StatusCode::SERVICE_UNAVAILABLE, HTTP_ERROR, &e))?;
    let id = session_id();
    sessions.insert(id.clone(), hub.clone());
    Ok((id, hub))
}

async fn stateless_hub(shared: &Shared) -> Result<Arc<Hub>, Response<HttpBody>> {
    let mut slot = shared.stateless.lock().await;
    if let Some(hub) = slot.as_ref().filter(|hub| !hub.is_closed()) {
        return Ok(hub.clone());
    }
    let hub = Hub::open(&shared.server, true, shared.options.max_in_flight)
        .map_err(|e| rpc_error(StatusCode::SERVICE_UNAVAILABLE, HTTP_ERROR, &e))?;
    *slot = Some(hub.clone());
    Ok(hub)
}

/// 128 random bits, hex: a session id no client can guess.
fn session_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: std's per-process random hash keys, still unpredictable outside.
        use std::hash::BuildHasher;
        let state = std::collections::hash_map::RandomState::new();
        let a = state.hash_one(std::time::SystemTime::now());
        let b = state.hash_one(std::process::id());
        bytes[..8].copy_from_slice(&a.to_le_bytes());
        bytes[8..].copy_from_slice(&b.to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn get(shared: &Arc<Shared>, headers: &HeaderMap) -> Response<HttpBody> {
    if !accepts(headers, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            HTTP_ERROR,
            "Accept must cover text/event-stream",
        );
    }
    let Some(id) = header_text(headers, SESSION_HEADER) else {
        let mut response = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "no standalone stream without a session (the 2026-07-28 era has none)",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    };
    let Some(hub) = lock(&shared.sessions).get(id).cloned() else {
        return rpc_error(
            StatusCode::NOT_FOUND,
            HTTP_ERROR,
            "unknown or ended session",
        );
    };
    if let Some(last) = header_text(headers, LAST_EVENT_ID) {
        let parsed = last
            .split_once('-')
            .and_then(|(stream, seq)| Some((stream.parse().ok()?, seq.parse().ok()?)));
        let resumed = parsed.and_then(|(stream, seq)| hub.resume(stream, seq));
        return match resumed {
            Some(events) => sse(EventBody::new(Bytes::new(), events, None)),
            None => rpc_error(
                StatusCode::BAD_REQUEST,
                HTTP_ERROR,
                &format!("Last-Event-ID {last:?} names no stream kept for resumption"),
            ),
        };
    }
    match hub.attach_standalone() {
        Ok((stream, events)) => sse(EventBody::new(priming_event(stream), events, None)),
        Err(_) => rpc_error(StatusCode::NOT_FOUND, HTTP_ERROR, "the session has ended"),
    }
}

async fn delete(shared: &Arc<Shared>, headers: &HeaderMap) -> Response<HttpBody> {
    let Some(id) = header_text(headers, SESSION_HEADER) else {
        let mut response = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "only a session can be deleted (the 2026-07-28 era has none)",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    };
    let hub = lock(&shared.sessions).remove(id);
    match hub {
        Some(hub) => {
            hub.close().await;
            empty(StatusCode::OK)
        }
        None => rpc_error(
            StatusCode::NOT_FOUND,
            HTTP_ERROR,
            "unknown or ended session",
        ),
    }
}

fn sse(body: EventBody) -> Response<HttpBody> {
    let mut response = Response::new(body.boxed());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn empty(status: StatusCode) -> Response<HttpBody> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    response
}

fn plain(status: StatusCode, text: &str) -> Response<HttpBody> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// An HTTP-level refusal with a JSON-RPC error body (`id: null`).
fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<HttpBody> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_authorities() {
        for fine in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:9",
            "[::1]",
            "127.0.0.2",
        ] {
            assert!(is_loopback_authority(fine), "{fine}");
        }
        for refused in [
            "evil.example",
            "evil.example:80",
            "10.0.0.1",
            "",
            "[::2]:1",
            "localhost.evil.example",
        ] {
            assert!(!is_loopback_authority(refused), "{refused}");
        }
    }

    #[test]
    fn session_ids_are_long_and_distinct() {
        let (a, b) = (session_id(), session_id());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
