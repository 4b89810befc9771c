//! The HTTP client both transports send with: requests on pooled connections opened by
//! [`crate::connect`] — HTTP/1.1 keep-alive, one connection per request in flight; or
//! HTTP/2, where requests share an open connection (requests sent at once while none is open
//! each open one, and all of them stay pooled). The most recently used connection is reused
//! first; idle ones expire after [`IDLE_TIMEOUT`], and at most [`MAX_IDLE_PER_ORIGIN`] are kept.
//!
//! Written on hyper's connection API rather than taken from a general-purpose client: MCP
//! sends every message to one endpoint, so the endpoint's URL is parsed once ([`Target`]) and
//! a request costs a pool lookup and hyper's own work — reqwest's layers (URL to URI and back
//! per request, the redirect and retry services, the pool's hashing, a task per request) cost
//! more than all the rest of a call together. Redirects are followed by the exchange
//! (`crate::exchange`, with `crate::redirect`'s rules), which asks for credentials per hop.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue, HOST, PROXY_AUTHORIZATION};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Incoming};
use url::Url;

use crate::connect::{Connection, RequestBody, ResponseFuture, Route, SocketConnector};

/// An idle connection unused this long is closed instead of reused (the server has probably
/// closed it already).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Idle connections kept per origin: more are only left over from a burst of concurrent
/// requests, and the next request closes them.
const MAX_IDLE_PER_ORIGIN: usize = 16;
/// An idle connection beyond [`MAX_IDLE_PER_ORIGIN`] is closed only once unused this long.
const SURPLUS_GRACE: Duration = Duration::from_secs(1);

/// A URL requests are sent to, parsed once into everything a request needs. `Debug` shows
/// only its [`display`](Target::display) form (user info and query may carry secrets).
#[derive(Clone)]
pub(crate) struct Target {
    url: Url,
    /// Absolute form (HTTP/2, proxies, connecting), without user info.
    uri: Uri,
    /// Origin form (`/path?query`), the HTTP/1.1 request target.
    path: Uri,
    /// `host[:port]`, the port only when not the scheme's default.
    authority: String,
    host_header: HeaderValue,
    /// `scheme://host:port`: requests share connections by it (shared, so that the pool
    /// mostly compares pointers).
    origin: Arc<str>,
    https: bool,
    /// `Authorization: Basic …` from the URL's user info, if it has one.
    basic_auth: Option<HeaderValue>,
}

impl Target {
    /// An `http://` or `https://` URL with a host.
    pub(crate) fn new(url: Url) -> Result<Target, String> {
        let https = match url.scheme() {
            "http" => false,
            "https" => true,
            _ => return Err("the scheme must be http or https".to_owned()),
        };
        let host = url.host_str().ok_or("the URL has no host")?;
        let port = url.port_or_known_default().ok_or("the URL has no port")?;
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        let path_and_query = &url[url::Position::BeforePath..url::Position::AfterQuery];
        let path_and_query = if path_and_query.is_empty() {
            "/"
        } else {
            path_and_query
        };
        let invalid = |e: http::Error| format!("the URL is not a valid request target: {e}");
        let uri = Uri::builder()
            .scheme(url.scheme())
            .authority(authority.as_str())
            .path_and_query(path_and_query)
            .build()
            .map_err(invalid)?;
        let path = Uri::builder()
            .path_and_query(path_and_query)
            .build()
            .map_err(invalid)?;
        let host_header = HeaderValue::from_str(&authority)
            .map_err(|_| "the URL's host is not a valid Host header".to_owned())?;
        let basic_auth = basic_auth(&url)?;
        Ok(Target {
            origin: format!("{}://{host}:{port}", url.scheme()).into(),
            url,
            uri,
            path,
            authority,
            host_header,
            https,
            basic_auth,
        })
    }

    /// The URL as shown in errors and logs: scheme, host, port and path; no user info, no
    /// query, no fragment.
    pub(crate) fn display(&self) -> String {
        format!(
            "{}://{}{}",
            self.url.scheme(),
            self.authority,
            self.url.path()
        )
    }

    /// The URL as given (credentials are bound to it).
    pub(crate) fn url(&self) -> &Url {
        &self.url
    }

    pub(crate) fn uri(&self) -> &Uri {
        &self.uri
    }

    /// `host[:port]`, for messages.
    pub(crate) fn authority(&self) -> &str {
        &self.authority
    }

    pub(crate) fn host(&self) -> &str {
        self.uri.host().unwrap_or_default()
    }

    pub(crate) fn is_https(&self) -> bool {
        self.https
    }

    /// Same scheme, host and port.
    pub(crate) fn same_origin(&self, other: &Target) -> bool {
        self.origin == other.origin
    }

    /// `Authorization: Basic …` from the URL's user info.
    pub(crate) fn basic_auth(&self) -> Option<&HeaderValue> {
        self.basic_auth.as_ref()
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Target").field(&self.display()).finish()
    }
}

/// User info in a URL is sent as basic authentication (percent-decoded), never in the request
/// line.
fn basic_auth(url: &Url) -> Result<Option<HeaderValue>, String> {
    if url.username().is_empty() && url.password().is_none() {
        return Ok(None);
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let credentials = format!(
        "{}:{}",
        decode(url.username()),
        url.password().map(decode).unwrap_or_default()
    );
    let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
    let mut value = HeaderValue::from_str(&format!("Basic {encoded}"))
        .map_err(|_| "the URL's user info is not a valid header value".to_owned())?;
    value.set_sensitive(true);
    Ok(Some(value))
}

/// Why a request failed; the message never holds the URL (a query string may carry a key),
/// the caller names the server.
#[derive(Debug)]
pub(crate) struct HttpError {
    connect: bool,
    /// The server answered with something that is not HTTP (or over hyper's limits: a head of
    /// more than about 400 KiB, more than 100 headers).
    malformed: bool,
    message: String,
}

impl HttpError {
    /// No connection: nothing was sent.
    pub(crate) fn connect(message: impl Into<String>) -> HttpError {
        HttpError {
            connect: true,
            malformed: false,
            message: message.into(),
        }
    }

    fn exchange(e: &hyper::Error) -> HttpError {
        HttpError {
            connect: false,
            malformed: e.is_parse() || e.is_parse_status(),
            message: error_chain(e),
        }
    }

    /// Whether the server's answer broke HTTP (a head too large, not HTTP at all): the server
    /// is there, and answered wrongly.
    pub(crate) fn is_malformed(&self) -> bool {
        self.malformed
    }

    /// Whether the request never reached a server (the connection could not be made).
    pub(crate) fn is_connect(&self) -> bool {
        self.connect
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HttpError {}

/// An error and its sources, `: `-separated (a source already in the text is not repeated).
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// A response: its head, and its body read chunk by chunk.
pub(crate) struct HttpResponse {
    inner: Response<Incoming>,
    /// Marks its connection busy until the response is dropped.
    _in_flight: Arc<()>,
}

impl HttpResponse {
    pub(crate) fn status(&self) -> StatusCode {
        self.inner.status()
    }

    pub(crate) fn headers(&self) -> &HeaderMap {
        self.inner.headers()
    }

    /// The next piece of the body if it has arrived already (`None` when it has not);
    /// `Some(Ok(None))` at its end.
    pub(crate) fn ready_chunk(&mut self) -> Option<Result<Option<Bytes>, HttpError>> {
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            match Pin::new(self.inner.body_mut()).poll_frame(&mut cx) {
                Poll::Pending => return None,
                Poll::Ready(None) => return Some(Ok(None)),
                Poll::Ready(Some(Err(e))) => return Some(Err(HttpError::exchange(&e))),
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        if !data.is_empty() {
                            return Some(Ok(Some(data)));
                        }
                    }
                }
            }
        }
    }

    /// The next piece of the body; `None` at its end.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, HttpError> {
        loop {
            match self.inner.body_mut().frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(HttpError::exchange(&e)),
                Some(Ok(frame)) => {
                    // Trailers carry nothing for MCP.
                    if let Ok(data) = frame.into_data() {
                        if !data.is_empty() {
                            return Ok(Some(data));
                        }
                    }
                }
            }
        }
    }
}

/// The HTTP client of one transport. Dropping it closes its connections.
pub(crate) struct HttpClient {
    connector: SocketConnector,
    /// Every open connection, least recently used first.
    pool: Mutex<Vec<Pooled>>,
}

struct Pooled {
    origin: Arc<str>,
    connection: Connection,
    last_used: Instant,
    /// Held by every request on the connection until its response is dropped: the connection
    /// is idle when this is the only holder. (HTTP/2 readiness says nothing about streams in
    /// flight, and dropping a connection aborts them.)
    in_flight: Arc<()>,
}

impl Pooled {
    fn serves(&self, target: &Target) -> bool {
        Arc::ptr_eq(&self.origin, &target.origin) || self.origin == target.origin
    }

    /// No request is in flight on it.
    fn is_idle(&self) -> bool {
        Arc::strong_count(&self.in_flight) == 1
    }

    /// A request can be sent on it now: an HTTP/2 connection takes any number at once, an
    /// HTTP/1.1 one only when idle.
    fn takes_a_request(&self) -> bool {
        self.connection.sender.is_ready() && (self.connection.sender.is_http2() || self.is_idle())
    }
}

impl HttpClient {
    pub(crate) fn new(connect_timeout: Duration) -> HttpClient {
        HttpClient {
            connector: SocketConnector::new(connect_timeout),
            pool: Mutex::new(Vec::new()),
        }
    }

    /// Sends one request (redirects are the caller's) and waits for the response head. An
    /// idle pooled connection is used if there is one; a pooled connection found closing
    /// before the request left is replaced by a new one.
    pub(crate) async fn send(
        &self,
        method: Method,
        target: &Target,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<HttpResponse, HttpError> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.headers_mut() = headers;
        let mut request = Some(request);
        if let Some((pending, in_flight)) = self.send_pooled(target, &mut request) {
            match pending.await {
                Ok(response) => {
                    return Ok(HttpResponse {
                        inner: response,
                        _in_flight: in_flight,
                    })
                }
                Err(mut e) => match e.take_message() {
                    Some(returned) => request = Some(returned),
                    None => return Err(HttpError::exchange(e.error())),
                },
            }
        }
        let Some(request) = request else {
            return Err(HttpError::connect(
                "the request was lost before it was sent",
            ));
        };
        // Boxed: connecting is rare (the pool has a connection), and its future is the larger
        // part of this one, which every request's future carries.
        let mut connection = Box::pin(self.connector.connect(target)).await?;
        let pending = send_on(&mut connection, target, request);
        let in_flight = Arc::new(());
        mcp_core::sync::lock(&self.pool).push(Pooled {
            origin: target.origin.clone(),
            connection,
            last_used: Instant::now(),
            in_flight: in_flight.clone(),
        });
        match pending.await {
            Ok(response) => Ok(HttpResponse {
                inner: response,
                _in_flight: in_flight,
            }),
            Err(e) => Err(HttpError::exchange(e.error())),
        }
    }

    /// Queues the request (taken out of `request`) on an idle connection to the target's
    /// origin, if there is one; with the connection's in-flight token for the response.
    fn send_pooled(
        &self,
        target: &Target,
        request: &mut Option<Request<RequestBody>>,
    ) -> Option<(ResponseFuture, Arc<()>)> {
        let mut pool = mcp_core::sync::lock(&self.pool);
        let pooled = idle_connection(&mut pool, Instant::now(), target)?;
        let request = request.take()?;
        let in_flight = pooled.in_flight.clone();
        Some((send_on(&mut pooled.connection, target, request), in_flight))
    }
}

/// The most recently used connection to `target`'s origin that takes a request now, moved to
/// the back of the pool and marked used — the most recently used one is the likeliest to be
/// still open at the server (servers close idle connections after as little as 5 seconds), and
/// reusing it lets the others grow idle and expire. On the way, this drops closed connections,
/// idle ones unused for longer than [`IDLE_TIMEOUT`], and the idle ones to `target`'s origin
/// beyond the [`MAX_IDLE_PER_ORIGIN`] most recently used (left over from a burst, once unused
/// for [`SURPLUS_GRACE`]).
fn idle_connection<'p>(
    pool: &'p mut Vec<Pooled>,
    now: Instant,
    target: &Target,
) -> Option<&'p mut Pooled> {
    let mut idle_kept = 0;
    for index in (0..pool.len()).rev() {
        let pooled = &pool[index];
        let idle = pooled.is_idle();
        let expired = idle && now.saturating_duration_since(pooled.last_used) > IDLE_TIMEOUT;
        // Only connections idle for a while are surplus: while a burst goes on, connections
        // are idle for moments between its requests, and closing them would only open others.
        let surplus = idle
            && !expired
            && pooled.serves(target)
            && {
                idle_kept += 1;
                idle_kept > MAX_IDLE_PER_ORIGIN
            }
            && now.saturating_duration_since(pooled.last_used) > SURPLUS_GRACE;
        if pooled.connection.sender.is_closed() || expired || surplus {
            pool.remove(index);
        }
    }
    let index = pool
        .iter()
        .rposition(|pooled| pooled.serves(target) && pooled.takes_a_request())?;
    let mut pooled = pool.remove(index);
    pooled.last_used = now;
    pool.push(pooled);
    pool.last_mut()
}

/// Addresses the request for the connection's protocol and route, and queues it.
fn send_on(
    connection: &mut Connection,
    target: &Target,
    mut request: Request<RequestBody>,
) -> ResponseFuture {
    let headers = request.headers_mut();
    if connection.sender.is_http2() {
        // HTTP/2 names the server in `:authority`, from the absolute URI.
        headers.remove(HOST);
        *request.uri_mut() = target.uri.clone();
    } else {
        headers.insert(HOST, target.host_header.clone());
        match &connection.route {
            Route::Direct => {
                headers.remove(PROXY_AUTHORIZATION);
                *request.uri_mut() = target.path.clone();
            }
            Route::Forward { auth } => {
                match auth {
                    Some(auth) => headers.insert(PROXY_AUTHORIZATION, auth.clone()),
                    None => headers.remove(PROXY_AUTHORIZATION),
                };
                *request.uri_mut() = target.uri.clone();
            }
        }
    }
    connection.sender.send(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Target {
        Target::new(Url::parse(url).unwrap()).unwrap()
    }

    #[test]
    fn a_target_keeps_path_and_query_and_drops_the_fragment() {
        let t = target("http://127.0.0.1:8080/mcp/x?key=1#frag");
        assert_eq!(t.uri().to_string(), "http://127.0.0.1:8080/mcp/x?key=1");
        assert_eq!(t.path.to_string(), "/mcp/x?key=1");
        assert_eq!(t.authority(), "127.0.0.1:8080");
        assert_eq!(t.host_header, "127.0.0.1:8080");
        assert!(!t.is_https());
        assert!(t.basic_auth().is_none());
    }

    #[test]
    fn a_default_port_is_left_out_of_the_host_header_but_not_the_origin() {
        let a = target("https://Example.COM/mcp");
        let b = target("https://example.com:443/other");
        assert_eq!(a.host_header, "example.com");
        assert_eq!(a.path.to_string(), "/mcp");
        assert!(a.same_origin(&b));
        assert!(!a.same_origin(&target("http://example.com/mcp")));
        assert!(!a.same_origin(&target("https://example.com:8443/mcp")));
    }

    #[test]
    fn an_empty_path_is_the_root_and_ipv6_hosts_keep_their_brackets() {
        let t = target("http://[::1]:9000");
        assert_eq!(t.path.to_string(), "/");
        assert_eq!(t.host(), "[::1]");
        assert_eq!(t.host_header, "[::1]:9000");
    }

    #[test]
    fn user_info_becomes_sensitive_basic_auth_and_leaves_the_uri() {
        let t = target("http://us%20er:p%40ss@127.0.0.1:1/mcp");
        let auth = t.basic_auth().unwrap();
        assert!(auth.is_sensitive());
        let encoded = auth.to_str().unwrap().strip_prefix("Basic ").unwrap();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        assert_eq!(decoded, b"us er:p@ss");
        assert!(!t.uri().to_string().contains('@'));
        assert_eq!(t.authority(), "127.0.0.1:1");
    }

    #[test]
    fn debug_shows_neither_user_info_nor_query() {
        let t = target("https://alice:hunter2@example.com:8443/mcp/x?key=secret#frag");
        let shown = format!("{t:?}");
        assert_eq!(shown, r#"Target("https://example.com:8443/mcp/x")"#);
        assert_eq!(t.display(), "https://example.com:8443/mcp/x");
    }

    /// Pools an idle in-memory connection to `to`'s origin; returns the server's end.
    async fn add(
        pool: &mut Vec<Pooled>,
        to: &Target,
        last_used: Instant,
    ) -> tokio::io::DuplexStream {
        let (connection, server_end) = Connection::in_memory().await;
        pool.push(Pooled {
            origin: to.origin.clone(),
            connection,
            last_used,
            in_flight: Arc::new(()),
        });
        server_end
    }

    #[tokio::test]
    async fn the_pool_reuses_the_most_recent_connection_and_drops_surplus_and_old_ones() {
        let mcp = target("http://127.0.0.1:1/mcp");
        let elsewhere = target("http://127.0.0.1:2/mcp");
        // "Now" is later than every connection's last use (no clock arithmetic below zero).
        let start = Instant::now();
        let at = |seconds: u64| start + Duration::from_secs(seconds);
        let now = at(200);
        let mut pool = Vec::new();
        let mut server_ends = Vec::new();
        // Unused for longer than the idle timeout.
        server_ends.push(add(&mut pool, &mcp, at(0)).await);
        // Just as old, but a response is still being read from it.
        server_ends.push(add(&mut pool, &mcp, at(0)).await);
        let busy = pool[1].in_flight.clone();
        // Another origin's.
        server_ends.push(add(&mut pool, &elsewhere, at(150)).await);
        // A burst left 20 idle connections, last used at 180 s … 199 s.
        for second in 180..200 {
            server_ends.push(add(&mut pool, &mcp, at(second)).await);
        }
        let chosen = idle_connection(&mut pool, now, &mcp).expect("an idle connection");
        assert_eq!(chosen.last_used, now);
        let mut left: Vec<u64> = pool
            .iter()
            .filter(|p| p.serves(&mcp) && p.is_idle() && p.last_used != now)
            .map(|p| p.last_used.duration_since(start).as_secs())
            .collect();
        left.sort_unstable();
        // The one used at 199 s was chosen; with it, the 16 most recent are kept.
        assert_eq!(left, (184..199).collect::<Vec<_>>());
        assert_eq!(pool.iter().filter(|p| !p.is_idle()).count(), 1, "busy kept");
        assert_eq!(pool.iter().filter(|p| p.serves(&elsewhere)).count(), 1);
        assert_eq!(pool.len(), 16 + 1 + 1);
        // The next request gets the same connection again, not the oldest.
        let later = at(201);
        let chosen = idle_connection(&mut pool, later, &mcp).expect("an idle connection");
        assert_eq!(chosen.last_used, later);
        assert!(pool.iter().all(|p| p.last_used != now));
        assert_eq!(pool.len(), 18);
        // The busy one is not taken even when it is the only one left to the origin.
        pool.retain(|p| !p.is_idle());
        assert!(idle_connection(&mut pool, later, &mcp).is_none());
        assert_eq!(pool.len(), 1);
        drop(busy);
        drop(server_ends);
    }

    #[test]
    fn other_schemes_are_refused() {
        assert!(Target::new(Url::parse("ftp://example.com/x").unwrap()).is_err());
        assert!(Target::new(Url::parse("file:///tmp/x").unwrap()).is_err());
    }
}
