//! [`GrpcServerConfig`]: what the gRPC transport needs to reach a server, and the checks that
//! turn it into a tonic endpoint (scheme, no path or user info, header names and values).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_core::{TransportError, TransportErrorKind};
use mcp_wire::AuthProvider;
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue, MetadataMap};
use tonic::transport::{Endpoint, Uri};

use crate::SESSION_PATH;

/// The default largest message, either way: 16 MiB (tonic's own default is 4 MiB).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// Room for the protobuf framing around a line (field tags, lengths, and whatever a peer puts
/// in the two compatibility fields), on top of the message-size cap, in tonic's limits.
pub(crate) const FRAMING_ALLOWANCE: usize = 64 * 1024;

/// How to reach an MCP server over gRPC (`mcp.transport.v1.Mcp/Session`). Header values and
/// credentials never appear in `Debug`; the endpoint is shown without user info or query.
#[derive(Clone)]
pub struct GrpcServerConfig {
    /// The endpoint: `http://host:port` (plaintext HTTP/2) or `https://host:port` (TLS);
    /// `grpc://` and `grpcs://` are read as `http://` and `https://`. No path.
    pub endpoint: String,
    /// Metadata sent with the call (API keys from the configuration). Values are secret.
    pub headers: Vec<(String, String)>,
    /// Supplies the `authorization` (and `dpop`) metadata and hears refusals.
    pub auth: Option<Arc<dyn AuthProvider>>,
    /// Deadline for the TCP (and TLS) connection and the HTTP/2 handshake. Default: 10 s.
    pub connect_timeout: Duration,
    /// Largest JSON-RPC message either way, in bytes. Default: 16 MiB.
    pub max_message_size: usize,
    /// An HTTP/2 PING is sent when the connection was quiet this long. Default: 30 s.
    pub keepalive_interval: Duration,
    /// The connection is given up when a PING is not answered within this. Default: 10 s.
    pub keepalive_timeout: Duration,
    /// How long `close` waits for the server to end the call after the client half-closed.
    /// Default: 5 s.
    pub close_timeout: Duration,
    /// Messages queued for sending before `send` waits. Default: 256.
    pub outgoing_queue: usize,
    /// Extra trusted root certificates (PEM) for `https` endpoints, besides the system's (the
    /// only ones on a machine without system roots).
    pub root_certificates: Vec<Vec<u8>>,
}

impl GrpcServerConfig {
    /// Reaches `endpoint` with the defaults.
    pub fn new(endpoint: impl Into<String>) -> Self {
        GrpcServerConfig {
            endpoint: endpoint.into(),
            headers: Vec::new(),
            auth: None,
            connect_timeout: Duration::from_secs(10),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            keepalive_interval: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(10),
            close_timeout: Duration::from_secs(5),
            outgoing_queue: 256,
            root_certificates: Vec::new(),
        }
    }

    /// Adds metadata sent with the call.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the credentials provider.
    pub fn auth(mut self, provider: Arc<dyn AuthProvider>) -> Self {
        self.auth = Some(provider);
        self
    }

    /// Sets the connect deadline.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the largest message either way.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// Sets the HTTP/2 keepalive: a PING after `interval` of quiet, answered within `timeout`.
    pub fn keepalive(mut self, interval: Duration, timeout: Duration) -> Self {
        self.keepalive_interval = interval;
        self.keepalive_timeout = timeout;
        self
    }

    /// Sets how long `close` waits for the server to end the call.
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// Sets how many messages may wait to be sent.
    pub fn outgoing_queue(mut self, messages: usize) -> Self {
        self.outgoing_queue = messages.max(1);
        self
    }

    /// Trusts `pem` (one or more PEM certificates) as a root for `https` endpoints, e.g. a
    /// private CA.
    pub fn root_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificates.push(pem.into());
        self
    }

    /// The endpoint as shown in errors and logs (no user info, query or fragment).
    pub fn display_endpoint(&self) -> String {
        mcp_wire::redact::redact_url(&self.endpoint)
    }

    /// Checks what can be wrong before any connection: the endpoint (a `grpc`, `grpcs`, `http`
    /// or `https` URL with a host and no user info, path or query) and the metadata headers
    /// (ASCII names and values, no binary or reserved names). The error is the configuration's
    /// fault; [`GrpcConnector::new`](crate::GrpcConnector::new) runs it.
    pub fn check(&self) -> Result<(), TransportError> {
        self.uri()?;
        self.metadata().map(|_| ())
    }

    /// The checked endpoint URI: `http`/`https` (after mapping `grpc`/`grpcs`), a host, no
    /// user info, no path, no query.
    pub(crate) fn uri(&self) -> Result<Uri, TransportError> {
        let shown = self.display_endpoint();
        let invalid = |why: String| {
            TransportError::fatal(
                TransportErrorKind::Connect,
                format!("invalid gRPC endpoint {shown:?}: {why}"),
            )
        };
        let mapped = map_scheme(self.endpoint.trim());
        let uri: Uri = mapped.parse().map_err(|e| invalid(format!("{e}")))?;
        match uri.scheme_str() {
            Some("http") | Some("https") => {}
            _ => {
                return Err(invalid(
                    "the scheme must be http, https, grpc or grpcs".into(),
                ))
            }
        }
        let Some(authority) = uri.authority() else {
            return Err(invalid("it names no host".into()));
        };
        if authority.as_str().contains('@') {
            return Err(invalid(
                "user info in the URL is not sent; give credentials as headers or auth".into(),
            ));
        }
        if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
            return Err(invalid(format!(
                "a gRPC endpoint has no path or query (calls go to {SESSION_PATH})"
            )));
        }
        Ok(uri)
    }

    /// The URL credentials are asked for: the endpoint plus the method's path — the HTTP/2
    /// POST a gRPC call is.
    pub(crate) fn session_url(uri: &Uri) -> String {
        let scheme = uri.scheme_str().unwrap_or("http");
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
        format!("{scheme}://{authority}{SESSION_PATH}")
    }

    /// The tonic endpoint: timeouts, keepalive, message-size independent settings, and TLS
    /// for `https`.
    pub(crate) fn endpoint(&self, uri: &Uri) -> Result<Endpoint, TransportError> {
        let endpoint = Endpoint::from(uri.clone())
            .connect_timeout(self.connect_timeout)
            .http2_keep_alive_interval(self.keepalive_interval)
            .keep_alive_timeout(self.keepalive_timeout)
            // A session may be quiet for hours (waiting on a long tool call): PINGs go on
            // while no stream is active too, so a vanished peer is noticed.
            .keep_alive_while_idle(true)
            .tcp_nodelay(true);
        if uri.scheme_str() == Some("https") {
            return self.with_tls(endpoint);
        }
        Ok(endpoint)
    }

    #[cfg(feature = "tls")]
    fn with_tls(&self, endpoint: Endpoint) -> Result<Endpoint, TransportError> {
        use tonic::transport::{Certificate, ClientTlsConfig};
        let mut tls = ClientTlsConfig::new().timeout(self.connect_timeout);
        for pem in &self.root_certificates {
            tls = tls.ca_certificate(Certificate::from_pem(pem));
        }
        let failed = |e: tonic::transport::Error| {
            TransportError::fatal(
                TransportErrorKind::Connect,
                format!(
                    "cannot set up TLS for {}: {}",
                    self.display_endpoint(),
                    crate::status::error_chain(&e)
                ),
            )
        };
        match endpoint.clone().tls_config(tls.clone().with_native_roots()) {
            Ok(endpoint) => Ok(endpoint),
            // A machine without system roots can still reach a server of a configured CA.
            Err(_) if !self.root_certificates.is_empty() => {
                endpoint.tls_config(tls).map_err(failed)
            }
            Err(e) => Err(failed(e)),
        }
    }

    #[cfg(not(feature = "tls"))]
    fn with_tls(&self, _endpoint: Endpoint) -> Result<Endpoint, TransportError> {
        Err(TransportError::fatal(
            TransportErrorKind::Connect,
            format!(
                "{} is an https endpoint, but mcp-transport-grpc was built without its `tls` \
                 feature",
                self.display_endpoint()
            ),
        ))
    }

    /// The configured headers as call metadata (values marked sensitive), checked: ASCII
    /// names and values, no binary (`-bin`) or reserved (`grpc-*`, `content-type`, `te`)
    /// names. Errors name the header, never its value.
    pub(crate) fn metadata(&self) -> Result<MetadataMap, TransportError> {
        let mut map = MetadataMap::new();
        for (name, value) in &self.headers {
            let bad = |why: &str| {
                TransportError::fatal(
                    TransportErrorKind::Connect,
                    format!(
                        "header {name:?} for {} cannot be sent as gRPC metadata: {why}",
                        self.display_endpoint()
                    ),
                )
            };
            let lower = name.to_ascii_lowercase();
            if lower.ends_with("-bin") {
                return Err(bad("binary metadata is not supported"));
            }
            if lower.starts_with("grpc-") || matches!(lower.as_str(), "content-type" | "te") {
                return Err(bad("the name is reserved by gRPC"));
            }
            let key = AsciiMetadataKey::from_bytes(lower.as_bytes())
                .map_err(|_| bad("not a valid header name"))?;
            let mut value = AsciiMetadataValue::try_from(value.as_str())
                .map_err(|_| bad("the value is not printable ASCII"))?;
            value.set_sensitive(true);
            map.append(key, value);
        }
        Ok(map)
    }

    /// tonic's decode and encode limits: the cap plus the protobuf framing around a line.
    pub(crate) fn tonic_limit(&self) -> usize {
        self.max_message_size.saturating_add(FRAMING_ALLOWANCE)
    }
}

/// `grpc://` → `http://`, `grpcs://` → `https://` (the schemes a configuration may use to say
/// "this URL is a gRPC server").
pub(crate) fn map_scheme(endpoint: &str) -> String {
    let lower = endpoint.get(..8).map(str::to_ascii_lowercase);
    match lower.as_deref() {
        Some("grpcs://") => format!("https://{}", &endpoint[8..]),
        _ if endpoint.len() >= 7 && endpoint[..7].eq_ignore_ascii_case("grpc://") => {
            format!("http://{}", &endpoint[7..])
        }
        _ => endpoint.to_owned(),
    }
}

impl fmt::Debug for GrpcServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcServerConfig")
            .field("endpoint", &self.display_endpoint())
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("auth", &self.auth.is_some())
            .field("connect_timeout", &self.connect_timeout)
            .field("max_message_size", &self.max_message_size)
            .field("keepalive_interval", &self.keepalive_interval)
            .field("keepalive_timeout", &self.keepalive_timeout)
            .field("close_timeout", &self.close_timeout)
            .field("outgoing_queue", &self.outgoing_queue)
            .field("root_certificates", &self.root_certificates.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_schemes_map_to_http_and_https() {
        for (given, mapped) in [
            ("grpc://127.0.0.1:50051", "http://127.0.0.1:50051"),
            ("GRPC://h:1", "http://h:1"),
            ("grpcs://example.com", "https://example.com"),
            ("http://h:1", "http://h:1"),
            ("https://h", "https://h"),
            ("grpc", "grpc"),
        ] {
            assert_eq!(map_scheme(given), mapped, "{given}");
        }
    }

    #[test]
    fn endpoints_are_checked_with_clear_errors() {
        for ok in [
            "http://127.0.0.1:1",
            "grpcs://h.example:443/",
            "grpc://[::1]:9",
        ] {
            GrpcServerConfig::new(ok).uri().expect(ok);
        }
        for (bad, says) in [
            ("ws://h:1", "scheme must be"),
            ("http://h:1/mcp", "no path"),
            ("http://h:1/?key=s3cret", "no path or query"),
            ("http://user:s3cret@h:1", "user info"),
            ("not a url", "invalid gRPC endpoint"),
        ] {
            let err = GrpcServerConfig::new(bad).uri().unwrap_err();
            assert_eq!(err.kind(), TransportErrorKind::Connect);
            assert!(err.message().contains(says), "{bad}: {err}");
            assert!(!err.message().contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn the_session_url_is_the_post_a_call_makes() {
        let uri = GrpcServerConfig::new("grpcs://h.example:8443")
            .uri()
            .unwrap();
        assert_eq!(
            GrpcServerConfig::session_url(&uri),
            "https://h.example:8443/mcp.transport.v1.Mcp/Session"
        );
    }

    #[test]
    fn headers_become_sensitive_metadata_and_bad_ones_are_named() {
        let config = GrpcServerConfig::new("http://h:1")
            .header("X-Api-Key", "s3cret")
            .header("x-tenant", "blue");
        let map = config.metadata().unwrap();
        assert_eq!(map.get("x-api-key").unwrap(), "s3cret");
        assert!(map.get("x-api-key").unwrap().is_sensitive());
        assert_eq!(map.get("x-tenant").unwrap(), "blue");
        for (name, value, says) in [
            ("trace-bin", "x", "binary"),
            ("grpc-timeout", "1S", "reserved"),
            ("content-type", "x", "reserved"),
            ("bad name", "x", "not a valid header name"),
            ("x-key", "s3cret\u{7f}é", "not printable ASCII"),
        ] {
            let err = GrpcServerConfig::new("http://h:1")
                .header(name, value)
                .metadata()
                .unwrap_err();
            assert!(err.message().contains(says), "{name}: {err}");
            assert!(err.message().contains(name), "{err}");
            assert!(!err.message().contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn debug_shows_no_header_values_or_url_secrets() {
        let config = GrpcServerConfig::new("grpc://h:1/?token=s3cret").header("x-key", "s3cret");
        let shown = format!("{config:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("x-key"), "{shown}");
    }
}
