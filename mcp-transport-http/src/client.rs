//! The HTTP client both transports send with: one request at a time on pooled connections
//! (HTTP/1.1 keep-alive, one connection per request in flight; or one shared HTTP/2
//! connection), opened by [`crate::connect`].
//!
//! Written on hyper's connection API rather than taken from a general-purpose client: MCP
//! sends every message to one endpoint, so the endpoint's URL is parsed once ([`Target`]) and
//! a request costs a pool lookup and hyper's own work — reqwest's layers (URL to URI and back
//! per request, the redirect and retry services, the pool's hashing, a task per request) cost
//! more than all the rest of a call together. Redirects are followed by the exchange
//! (`crate::exchange`, with `crate::redirect`'s rules), which asks for credentials per hop.

use std::collections::VecDeque;
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

use crate::connect::{Connection, Connector, RequestBody, ResponseFuture, Route};

/// An idle connection unused this long is closed instead of reused (the server has probably
/// closed it already).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// A URL requests are sent to, parsed once into everything a request needs.
#[derive(Debug, Clone)]
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
    message: String,
}

impl HttpError {
    /// No connection: nothing was sent.
    pub(crate) fn connect(message: impl Into<String>) -> HttpError {
        HttpError {
            connect: true,
            message: message.into(),
        }
    }

    fn exchange(e: &hyper::Error) -> HttpError {
        HttpError {
            connect: false,
            message: error_chain(e),
        }
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
    connector: Connector,
    /// Every open connection, in the order requests were last sent on them: the front ones
    /// have waited longest for their answers, so they are the likeliest to be idle again.
    pool: Mutex<VecDeque<Pooled>>,
}

struct Pooled {
    origin: Arc<str>,
    connection: Connection,
    last_used: Instant,
}

impl Pooled {
    fn serves(&self, target: &Target) -> bool {
        Arc::ptr_eq(&self.origin, &target.origin) || self.origin == target.origin
    }
}

impl HttpClient {
    pub(crate) fn new(connect_timeout: Duration) -> HttpClient {
        HttpClient {
            connector: Connector::new(connect_timeout),
            pool: Mutex::new(VecDeque::new()),
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
        if let Some(pending) = self.send_pooled(target, &mut request) {
            match pending.await {
                Ok(response) => return Ok(HttpResponse { inner: response }),
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
        let mut connection = self.connector.connect(target).await?;
        let pending = send_on(&mut connection, target, request);
        mcp_core::sync::lock(&self.pool).push_back(Pooled {
            origin: target.origin.clone(),
            connection,
            last_used: Instant::now(),
        });
        match pending.await {
            Ok(response) => Ok(HttpResponse { inner: response }),
            Err(e) => Err(HttpError::exchange(e.error())),
        }
    }

    /// Queues the request (taken out of `request`) on an idle connection to the target's
    /// origin, if there is one. Closed and long-idle connections are dropped on the way.
    fn send_pooled(
        &self,
        target: &Target,
        request: &mut Option<Request<RequestBody>>,
    ) -> Option<ResponseFuture> {
        let mut pool = mcp_core::sync::lock(&self.pool);
        let pooled = idle_connection(&mut pool, target)?;
        let request = request.take()?;
        Some(send_on(&mut pooled.connection, target, request))
    }
}

/// An idle connection to `target`'s origin, moved to the back of the pool (the connection
/// just used is the last to look at next time) and marked used. Closed connections, and
/// HTTP/1.1 ones idle for longer than [`IDLE_TIMEOUT`], are dropped on the way.
fn idle_connection<'p>(pool: &'p mut VecDeque<Pooled>, target: &Target) -> Option<&'p mut Pooled> {
    let now = Instant::now();
    let mut index = 0;
    while index < pool.len() {
        let pooled = &pool[index];
        if pooled.connection.sender.is_closed() {
            pool.remove(index);
            continue;
        }
        if !pooled.serves(target) || !pooled.connection.sender.is_ready() {
            index += 1;
            continue;
        }
        if now.duration_since(pooled.last_used) > IDLE_TIMEOUT
            && !pooled.connection.sender.is_http2()
        {
            pool.remove(index);
            continue;
        }
        let mut pooled = pool.remove(index)?;
        pooled.last_used = now;
        pool.push_back(pooled);
        return pool.back_mut();
    }
    None
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
    fn other_schemes_are_refused() {
        assert!(Target::new(Url::parse("ftp://example.com/x").unwrap()).is_err());
        assert!(Target::new(Url::parse("file:///tmp/x").unwrap()).is_err());
    }
}
