//! Opening one HTTP connection to a server: TCP (connect timeout, keepalive probes, no Nagle
//! delay), through a proxy from the environment when one applies (`HTTPS_PROXY`, `HTTP_PROXY`,
//! `ALL_PROXY`, `NO_PROXY`, read as curl reads them: requests to an `http://` server are
//! forwarded by the proxy, an `https://` server is reached through a `CONNECT` tunnel), TLS with
//! rustls for `https://` (the platform's certificate verifier; ALPN offers HTTP/2 and HTTP/1.1),
//! and the HTTP/1.1 or HTTP/2 handshake. The returned [`Connection`] owns the task that drives
//! the connection and aborts it when dropped.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::HeaderValue;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2, TrySendError};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::proxy::matcher::{Intercept, Matcher};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::OnceCell;
use tokio::task::AbortHandle;
use tower_service::Service;

use crate::client::{error_chain, HttpError, Target};

/// A connection idle this long gets TCP keepalive probes…
const TCP_KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
/// …this far apart…
const TCP_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// …and is given up after this many unanswered ones.
const TCP_KEEPALIVE_RETRIES: u32 = 3;

/// The body of every request: the whole message, already encoded.
pub(crate) type RequestBody = Full<Bytes>;

/// What sending a request on a connection gives: the response head, or the error — with the
/// request handed back when it never left (the connection was closing).
pub(crate) type ResponseFuture = Pin<
    Box<dyn Future<Output = Result<Response<Incoming>, TrySendError<Request<RequestBody>>>> + Send>,
>;

/// Opens connections; one per HTTP client.
pub(crate) struct SocketConnector {
    tcp: HttpConnector,
    connect_timeout: Duration,
    proxies: Matcher,
}

/// One open connection and the task driving it (aborted on drop).
pub(crate) struct Connection {
    pub(crate) sender: Sender,
    pub(crate) route: Route,
    task: AbortHandle,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
impl Connection {
    /// An HTTP/1.1 connection over an in-memory pipe, ready for a request, and the pipe's
    /// other end (the server's side; dropping it closes the connection). For the pool's tests.
    pub(crate) async fn in_memory() -> (Connection, tokio::io::DuplexStream) {
        let (ours, theirs) = tokio::io::duplex(4096);
        let (mut sender, connection) = http1::handshake::<_, RequestBody>(TokioIo::new(ours))
            .await
            .expect("an HTTP/1.1 handshake needs no bytes from the server");
        let task = tokio::spawn(drive(connection));
        tokio::time::timeout(Duration::from_secs(5), sender.ready())
            .await
            .expect("the connection is ready in time")
            .expect("the connection is ready");
        let connection = Connection {
            sender: Sender::Http1(sender),
            route: Route::Direct,
            task: task.abort_handle(),
        };
        (connection, theirs)
    }
}

/// How requests travel on a connection.
#[derive(Clone)]
pub(crate) enum Route {
    /// Straight to the server (or through a `CONNECT` tunnel, which is the same to HTTP).
    Direct,
    /// To a forwarding proxy: the request line carries the absolute URL, and the proxy's
    /// credentials go in `Proxy-Authorization`.
    Forward { auth: Option<HeaderValue> },
}

/// The request half of a connection.
pub(crate) enum Sender {
    Http1(http1::SendRequest<RequestBody>),
    Http2(http2::SendRequest<RequestBody>),
}

impl Sender {
    /// Whether a request sent now goes out at once: an idle HTTP/1.1 connection, or an open
    /// HTTP/2 one.
    pub(crate) fn is_ready(&self) -> bool {
        match self {
            Sender::Http1(s) => s.is_ready(),
            Sender::Http2(s) => s.is_ready(),
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        match self {
            Sender::Http1(s) => s.is_closed(),
            Sender::Http2(s) => s.is_closed(),
        }
    }

    pub(crate) fn is_http2(&self) -> bool {
        matches!(self, Sender::Http2(_))
    }

    /// Queues `request` on the connection (synchronously: the returned future only waits for
    /// the answer and borrows nothing).
    pub(crate) fn send(&mut self, request: Request<RequestBody>) -> ResponseFuture {
        match self {
            Sender::Http1(s) => Box::pin(s.try_send_request(request)),
            Sender::Http2(s) => Box::pin(s.try_send_request(request)),
        }
    }
}

/// Any byte stream a connection runs on (TCP, TLS, a proxy tunnel).
trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}
type BoxIo = Box<dyn Io>;

impl SocketConnector {
    pub(crate) fn new(connect_timeout: Duration) -> SocketConnector {
        let mut tcp = HttpConnector::new();
        // The scheme is handled here (TLS on top), not by the TCP connector.
        tcp.enforce_http(false);
        // A request is one write: do not hold it back waiting for an acknowledgement.
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(connect_timeout));
        // Long-lived streams (the standalone GET stream, `subscriptions/listen`, a slow SSE
        // answer) may stay silent for hours: TCP keepalive probes notice a peer that vanished
        // without closing (a half-open connection) within about a minute, and the stream fails
        // instead of waiting forever.
        tcp.set_keepalive(Some(TCP_KEEPALIVE_IDLE));
        tcp.set_keepalive_interval(Some(TCP_KEEPALIVE_INTERVAL));
        tcp.set_keepalive_retries(Some(TCP_KEEPALIVE_RETRIES));
        SocketConnector {
            tcp,
            connect_timeout,
            proxies: Matcher::from_system(),
        }
    }

    /// Opens a connection to `target`'s origin; the whole of it (proxy, TCP, TLS, handshake)
    /// within the connect timeout. Every failure here means no request was sent.
    pub(crate) async fn connect(&self, target: &Target) -> Result<Connection, HttpError> {
        match tokio::time::timeout(self.connect_timeout, self.open(target)).await {
            Ok(connection) => connection,
            Err(_) => Err(HttpError::connect(format!(
                "connecting to {} took longer than {:?}",
                target.authority(),
                self.connect_timeout
            ))),
        }
    }

    async fn open(&self, target: &Target) -> Result<Connection, HttpError> {
        let (io, http2, route) = match self.proxies.intercept(target.uri()) {
            None => {
                let tcp = self
                    .tcp_to(target.uri().clone(), target.authority())
                    .await?;
                if target.is_https() {
                    let (io, http2) = tls_handshake(target, tcp).await?;
                    (io, http2, Route::Direct)
                } else {
                    (Box::new(tcp) as BoxIo, false, Route::Direct)
                }
            }
            Some(proxy) if target.is_https() => {
                let tunnel = self.tunnel(&proxy, target).await?;
                let (io, http2) = tls_handshake(target, tunnel).await?;
                (io, http2, Route::Direct)
            }
            Some(proxy) => {
                let io = self.to_proxy(&proxy).await?;
                let auth = proxy.basic_auth().cloned().map(|mut value| {
                    value.set_sensitive(true);
                    value
                });
                (io, false, Route::Forward { auth })
            }
        };
        let io = TokioIo::new(io);
        let handshake_error = |e: hyper::Error| {
            HttpError::connect(format!("{}: {}", target.authority(), error_chain(&e)))
        };
        let (sender, task) = if http2 {
            let (sender, connection) = http2::Builder::new(TokioExecutor::new())
                .handshake(io)
                .await
                .map_err(handshake_error)?;
            (Sender::Http2(sender), tokio::spawn(drive(connection)))
        } else {
            let (sender, connection) = http1::handshake(io).await.map_err(handshake_error)?;
            (Sender::Http1(sender), tokio::spawn(drive(connection)))
        };
        Ok(Connection {
            sender,
            route,
            task: task.abort_handle(),
        })
    }

    async fn tcp_to(
        &self,
        uri: http::Uri,
        shown: &str,
    ) -> Result<tokio::net::TcpStream, HttpError> {
        let tcp = self.tcp.clone().call(uri).await.map_err(|e| {
            HttpError::connect(format!("could not connect to {shown}: {}", error_chain(&e)))
        })?;
        Ok(tcp.into_inner())
    }

    /// A connection to a forwarding proxy (TLS to it for an `https://` proxy).
    async fn to_proxy(&self, proxy: &Intercept) -> Result<BoxIo, HttpError> {
        let proxy_uri = proxy.uri().clone();
        let shown = proxy_shown(&proxy_uri)?;
        if proxy_uri.scheme_str() == Some("https") {
            let configs = tls_configs().await?;
            let mut https =
                hyper_rustls::HttpsConnector::from((self.tcp.clone(), configs.proxy.clone()));
            let stream = https.call(proxy_uri).await.map_err(|e| {
                HttpError::connect(format!(
                    "could not connect to the proxy {shown}: {}",
                    error_chain(&*e)
                ))
            })?;
            Ok(Box::new(TokioIo::new(stream)))
        } else {
            Ok(Box::new(self.tcp_to(proxy_uri, &shown).await?))
        }
    }

    /// A `CONNECT` tunnel through `proxy` to `target`'s origin.
    async fn tunnel(&self, proxy: &Intercept, target: &Target) -> Result<BoxIo, HttpError> {
        let proxy_uri = proxy.uri().clone();
        let shown = proxy_shown(&proxy_uri)?;
        let tunnel_error = |e: &(dyn std::error::Error + 'static)| {
            HttpError::connect(format!(
                "could not tunnel to {} through the proxy {shown}: {}",
                target.authority(),
                error_chain(e)
            ))
        };
        if proxy_uri.scheme_str() == Some("https") {
            let configs = tls_configs().await?;
            let https =
                hyper_rustls::HttpsConnector::from((self.tcp.clone(), configs.proxy.clone()));
            let mut tunnel = Tunnel::new(proxy_uri, https);
            if let Some(auth) = proxy.basic_auth() {
                tunnel = tunnel.with_auth(auth.clone());
            }
            let stream = tunnel
                .call(target.uri().clone())
                .await
                .map_err(|e| tunnel_error(&e))?;
            Ok(Box::new(TokioIo::new(stream)))
        } else {
            let mut tunnel = Tunnel::new(proxy_uri, self.tcp.clone());
            if let Some(auth) = proxy.basic_auth() {
                tunnel = tunnel.with_auth(auth.clone());
            }
            let stream = tunnel
                .call(target.uri().clone())
                .await
                .map_err(|e| tunnel_error(&e))?;
            Ok(Box::new(stream.into_inner()))
        }
    }
}

/// The proxy as shown in errors (host and port, never its credentials); only HTTP proxies
/// are supported.
fn proxy_shown(uri: &http::Uri) -> Result<String, HttpError> {
    let shown = uri
        .authority()
        .map(|a| a.as_str().rsplit('@').next().unwrap_or_default().to_owned())
        .unwrap_or_default();
    match uri.scheme_str() {
        Some("http" | "https") => Ok(shown),
        other => Err(HttpError::connect(format!(
            "the proxy {shown} uses the scheme {:?}; only http:// and https:// proxies are supported",
            other.unwrap_or_default()
        ))),
    }
}

/// Runs a connection until it closes; a failure ends the requests on it, which report it.
async fn drive(connection: impl Future<Output = Result<(), hyper::Error>>) {
    if let Err(e) = connection.await {
        tracing::debug!(error = %e, "an HTTP connection ended with an error");
    }
}

/// TLS to `target` over `io`; whether the server chose HTTP/2.
async fn tls_handshake(target: &Target, io: impl Io) -> Result<(BoxIo, bool), HttpError> {
    let configs = tls_configs().await?;
    // `Uri::host` keeps an IPv6 address's brackets; a server name has none.
    let host = target.host().trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(host.to_owned())
        .map_err(|_| HttpError::connect(format!("{host:?} is not a valid TLS server name")))?;
    let stream = tokio_rustls::TlsConnector::from(configs.origin.clone())
        .connect(name, io)
        .await
        .map_err(|e| {
            HttpError::connect(format!(
                "the TLS handshake with {} failed: {}",
                target.authority(),
                error_chain(&e)
            ))
        })?;
    let http2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
    Ok((Box::new(stream), http2))
}

/// The TLS client configurations: to servers (ALPN `h2`, `http/1.1`) and to `https://` proxies
/// (`http/1.1`: a tunnel is an HTTP/1.1 request).
struct TlsConfigs {
    origin: Arc<ClientConfig>,
    proxy: Arc<ClientConfig>,
}

/// Built once per process, on the first `https://` connection, on a blocking thread: the
/// platform verifier reads and parses every system root certificate (milliseconds of work that
/// an `http://` server never needs and later connections should not repeat).
async fn tls_configs() -> Result<&'static TlsConfigs, HttpError> {
    static CONFIGS: OnceCell<TlsConfigs> = OnceCell::const_new();
    CONFIGS
        .get_or_try_init(|| async {
            tokio::task::spawn_blocking(build_tls_configs)
                .await
                .map_err(|e| format!("setting up TLS failed: {e}"))?
        })
        .await
        .map_err(HttpError::connect)
}

/// rustls with the process's default crypto provider if one is installed, else aws-lc-rs, and
/// the platform's certificate verifier.
fn build_tls_configs() -> Result<TlsConfigs, String> {
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
        .map_err(|e| format!("cannot load the platform's certificate verifier: {e}"))?;
    let mut origin = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    let mut proxy = origin.clone();
    origin.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    proxy.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConfigs {
        origin: Arc::new(origin),
        proxy: Arc::new(proxy),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_tls_configuration_offers_http2_to_servers_and_http1_to_proxies() {
        let configs = tls_configs().await.expect("the platform verifier loads");
        assert_eq!(
            configs.origin.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert_eq!(configs.proxy.alpn_protocols, vec![b"http/1.1".to_vec()]);
        // Built once per process.
        assert!(std::ptr::eq(configs, tls_configs().await.unwrap()));
    }

    #[test]
    fn only_http_proxies_are_supported_and_their_credentials_are_not_shown() {
        let shown = proxy_shown(&"http://user:secret@proxy.example:3128".parse().unwrap());
        assert_eq!(shown.unwrap(), "proxy.example:3128");
        let socks = proxy_shown(&"socks5://proxy.example:1080".parse().unwrap());
        let error = socks.unwrap_err().to_string();
        assert!(
            error.contains("only http:// and https:// proxies"),
            "{error}"
        );
    }
}
