//! What the WebSocket transport needs to reach a server, and the URL it is given, checked.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_core::{TransportError, TransportErrorKind};
use mcp_wire::AuthProvider;
use tokio_tungstenite::tungstenite::http::header::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::http::Uri;

/// How to reach an MCP server over WebSocket. Header values and credentials never appear in
/// `Debug`; the URL is shown without user info or query.
///
/// ```
/// use std::time::Duration;
/// use mcp_transport_ws::WebSocketServerConfig;
///
/// let config = WebSocketServerConfig::new("wss://mcp.example.com/ws")
///     .header("X-Api-Key", "s3cret")
///     .ping_interval(Duration::from_secs(15));
/// assert!(!format!("{config:?}").contains("s3cret"));
/// ```
#[derive(Clone)]
pub struct WebSocketServerConfig {
    /// The endpoint (`ws://` or `wss://`).
    pub url: String,
    /// Extra headers sent on the upgrade request (e.g. API keys from the configuration).
    pub headers: Vec<(String, String)>,
    /// Supplies the upgrade request's `Authorization` (and `DPoP`) header and hears 401/403
    /// challenges.
    pub auth: Option<Arc<dyn AuthProvider>>,
    /// Deadline for one connection attempt: TCP connect, TLS and the upgrade. Default: 10 s.
    pub connect_timeout: Duration,
    /// Largest message (and frame) accepted from the server, in bytes; a larger one fails the
    /// connection (close code 1009) without being buffered. Default: 16 MiB.
    pub max_message_size: usize,
    /// After this long without a frame from the server, a ping is sent; `Duration::ZERO`
    /// sends none. Default: 30 s.
    pub ping_interval: Duration,
    /// How long after a ping the server has to send anything (its pong, any frame) before the
    /// connection is declared dead. Default: 20 s.
    pub dead_peer_timeout: Duration,
    /// How long `close` waits for queued messages to go out and for the server to answer the
    /// close frame (each); past it the connection is dropped. Default: 2 s.
    pub close_timeout: Duration,
    /// Messages queued for the writer before `send` waits. Default: 64.
    pub outgoing_queue: usize,
    /// Extra trusted root certificates (DER) for `wss://`, beside the platform's.
    pub root_certificates: Vec<Vec<u8>>,
}

impl WebSocketServerConfig {
    /// Reaches `url` with the defaults.
    pub fn new(url: impl Into<String>) -> Self {
        WebSocketServerConfig {
            url: url.into(),
            headers: Vec::new(),
            auth: None,
            connect_timeout: Duration::from_secs(10),
            max_message_size: 16 * 1024 * 1024,
            ping_interval: Duration::from_secs(30),
            dead_peer_timeout: Duration::from_secs(20),
            close_timeout: Duration::from_secs(2),
            outgoing_queue: 64,
            root_certificates: Vec::new(),
        }
    }

    /// Adds a header sent on the upgrade request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the credentials provider.
    pub fn auth(mut self, provider: Arc<dyn AuthProvider>) -> Self {
        self.auth = Some(provider);
        self
    }

    /// Sets the deadline of one connection attempt.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the largest accepted message.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// Sets the idle time after which a ping is sent (`Duration::ZERO`: never).
    pub fn ping_interval(mut self, interval: Duration) -> Self {
        self.ping_interval = interval;
        self
    }

    /// Sets how long a ping may go unanswered.
    pub fn dead_peer_timeout(mut self, timeout: Duration) -> Self {
        self.dead_peer_timeout = timeout;
        self
    }

    /// Sets how long each step of `close` may take.
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// Sets the outgoing queue's capacity.
    pub fn outgoing_queue(mut self, messages: usize) -> Self {
        self.outgoing_queue = messages;
        self
    }

    /// Trusts `der` (an X.509 certificate, DER) as a root for `wss://`, beside the platform's
    /// roots: for private CAs and self-signed test servers.
    pub fn root_certificate(mut self, der: impl Into<Vec<u8>>) -> Self {
        self.root_certificates.push(der.into());
        self
    }

    /// The URL as shown in errors and logs: no user info, no query (either may carry a key).
    pub fn display_url(&self) -> String {
        mcp_wire::redact::redact_url(&self.url)
    }

    /// The URL, checked: `ws://` or `wss://` with a host.
    pub(crate) fn target(&self) -> Result<Target, TransportError> {
        Target::parse(&self.url)
    }

    /// The configured headers, checked; values are marked sensitive.
    pub(crate) fn header_values(&self) -> Result<Vec<(HeaderName, HeaderValue)>, TransportError> {
        let mut headers = Vec::with_capacity(self.headers.len());
        for (name, value) in &self.headers {
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                connect_error(format!("invalid header name {name:?} in the configuration"))
            })?;
            if is_handshake_header(&header) {
                return Err(connect_error(format!(
                    "the header {name:?} is part of the WebSocket handshake and cannot be configured"
                )));
            }
            // The value may be a secret: the error names the header only.
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                connect_error(format!(
                    "invalid value for header {name:?} in the configuration"
                ))
            })?;
            value.set_sensitive(true);
            headers.push((header, value));
        }
        Ok(headers)
    }
}

impl fmt::Debug for WebSocketServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|(k, _)| format!("{k}: <redacted>"))
            .collect();
        f.debug_struct("WebSocketServerConfig")
            .field("url", &self.display_url())
            .field("headers", &headers)
            .field("auth", &self.auth.as_ref().map(|_| "<provider>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("max_message_size", &self.max_message_size)
            .field("ping_interval", &self.ping_interval)
            .field("dead_peer_timeout", &self.dead_peer_timeout)
            .field("close_timeout", &self.close_timeout)
            .field("outgoing_queue", &self.outgoing_queue)
            .field("root_certificates", &self.root_certificates.len())
            .finish()
    }
}

/// Headers the handshake itself writes; a configured one would duplicate or contradict them.
/// (`Authorization` may be configured: a static token; a provider's credentials replace it.)
fn is_handshake_header(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host"
            | "connection"
            | "upgrade"
            | "sec-websocket-version"
            | "sec-websocket-key"
            | "sec-websocket-protocol"
            | "sec-websocket-extensions"
    )
}

fn connect_error(message: String) -> TransportError {
    TransportError::fatal(TransportErrorKind::Connect, message)
}

/// A checked `ws://` or `wss://` URL. `Debug` shows it redacted (the query may carry a key).
#[derive(Clone)]
pub(crate) struct Target {
    /// Whether the connection is TLS (`wss://`).
    pub(crate) tls: bool,
    /// The host name or IP address (IPv6 without brackets), for connecting and TLS.
    pub(crate) host: String,
    pub(crate) port: u16,
    /// The `Host` header: the URL's authority without user info.
    pub(crate) host_header: String,
    /// The request target: path and query (`/` when the URL has no path).
    pub(crate) path_and_query: String,
    /// The URL as shown in errors and logs.
    pub(crate) display: String,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Target").field(&self.display).finish()
    }
}

impl Target {
    pub(crate) fn parse(url: &str) -> Result<Target, TransportError> {
        let display = mcp_wire::redact::redact_url(url);
        let invalid =
            |why: &str| connect_error(format!("invalid WebSocket URL {display:?}: {why}"));
        let uri: Uri = url
            .parse()
            .map_err(|_| invalid("not a URL (expected ws://host[:port]/path or wss://…)"))?;
        let tls = match uri.scheme_str() {
            Some("ws") => false,
            Some("wss") => true,
            Some(_) => return Err(invalid("the scheme must be ws or wss")),
            None => return Err(invalid("it has no scheme (expected ws:// or wss://)")),
        };
        let authority = uri.authority().ok_or_else(|| invalid("it has no host"))?;
        let host = authority.host();
        if host.is_empty() {
            return Err(invalid("it has no host"));
        }
        let host_header = match authority.as_str().rsplit_once('@') {
            Some((_, host_and_port)) => host_and_port.to_owned(),
            None => authority.as_str().to_owned(),
        };
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
            .to_owned();
        let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let path_and_query = match uri.path_and_query().map(|p| p.as_str()) {
            None | Some("") => "/".to_owned(),
            Some(p) if p.starts_with('/') => p.to_owned(),
            Some(p) => format!("/{p}"),
        };
        Ok(Target {
            tls,
            host,
            port,
            host_header,
            path_and_query,
            display,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_split() {
        let t = Target::parse("ws://127.0.0.1:8080/mcp?key=abc").unwrap();
        assert!(!t.tls);
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 8080));
        assert_eq!(t.host_header, "127.0.0.1:8080");
        assert_eq!(t.path_and_query, "/mcp?key=abc");
        assert_eq!(t.display, "ws://127.0.0.1:8080/mcp");

        let t = Target::parse("wss://user:pw@example.com").unwrap();
        assert!(t.tls);
        assert_eq!((t.host.as_str(), t.port), ("example.com", 443));
        assert_eq!(t.host_header, "example.com");
        assert_eq!(t.path_and_query, "/");
        assert!(!t.display.contains("pw"));

        let t = Target::parse("ws://[::1]:9000/x").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 9000));
        assert_eq!(t.host_header, "[::1]:9000");

        for (bad, why) in [
            ("http://example.com/mcp", "scheme must be ws or wss"),
            ("example.com:80", "no scheme"),
            ("example.com/mcp", "expected ws://host"),
            ("ws://", "not a URL"),
            ("ws:// spaces /", "not a URL"),
        ] {
            let e = Target::parse(bad).unwrap_err();
            assert_eq!(e.kind(), TransportErrorKind::Connect);
            assert!(e.message().contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn headers_are_checked_and_never_shown() {
        let config = WebSocketServerConfig::new("ws://h/mcp")
            .header("X-Api-Key", "s3cret")
            .header("X-Other", "v");
        let headers = config.header_values().unwrap();
        assert_eq!(headers.len(), 2);
        assert!(headers.iter().all(|(_, v)| v.is_sensitive()));
        assert!(!format!("{config:?}").contains("s3cret"));

        let e = WebSocketServerConfig::new("ws://h/mcp")
            .header("X-Key", "line\nbreak s3cret")
            .header_values()
            .unwrap_err();
        assert!(e.message().contains("X-Key") && !e.message().contains("s3cret"));
        for reserved in ["Sec-WebSocket-Protocol", "Sec-WebSocket-Key", "Host"] {
            let e = WebSocketServerConfig::new("ws://h/mcp")
                .header(reserved, "x")
                .header_values()
                .unwrap_err();
            assert!(e.message().contains(reserved), "{e}");
        }
    }
}
