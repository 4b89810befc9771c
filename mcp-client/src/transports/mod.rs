//! Where a server is and which transport reaches it: the facade's registry of transports.
//!
//! [`TransportRegistry`] maps each configuration `type` (and each URL scheme of an entry with a
//! bare `url`) to the [`TransportFactory`] that serves it — the profile's built-ins (one file
//! each: `stdio.rs`, `http.rs`, `ws.rs`, `grpc.rs`, mapping a [`TransportConfig`] to the
//! transport crate's own configuration and connector), plus any a harness registers — and holds
//! the in-process servers registered in code. A factory is handed the server's
//! [`TransportConfig`] itself: one description of where a server is.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_core::{Error, ErrorKind, TransportConnector};
/// The credentials seam a factory hands its transport ([`TransportSpec::auth`]).
pub use mcp_wire::AuthProvider;

use crate::config::{ServerConfig, TransportConfig};

#[cfg(feature = "grpc")]
mod grpc;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "stdio")]
mod stdio;
#[cfg(feature = "ws")]
mod ws;

#[cfg(feature = "grpc")]
pub use grpc::GrpcFactory;
#[cfg(feature = "http")]
pub use http::HttpFactory;
#[cfg(feature = "stdio")]
pub use stdio::StdioFactory;
#[cfg(feature = "ws")]
pub use ws::WebSocketFactory;

/// Makes [`TransportConnector`]s for the configured servers of the kinds it serves: how a
/// transport plugs into the registry (a downstream crate's too, with
/// [`McpClientBuilder::transport`](crate::McpClientBuilder::transport)).
pub trait TransportFactory: Send + Sync + 'static {
    /// The configuration `type`s it serves (`["ws", "websocket"]`).
    fn kinds(&self) -> &'static [&'static str];

    /// The URL schemes that select it for an entry with a `url` and no `type`
    /// (`["ws", "wss"]`); none by default.
    fn url_schemes(&self) -> &'static [&'static str] {
        &[]
    }

    /// A connector for one server. Fails (with a clear error naming the server) when the
    /// entry cannot describe a server of this kind.
    fn connector(&self, spec: &TransportSpec) -> Result<Arc<dyn TransportConnector>, Error>;
}

/// One configured server as a [`TransportFactory`] sees it.
#[derive(Clone)]
pub struct TransportSpec {
    /// The server's name (for errors and logs).
    pub server: String,
    /// The transport `type` that chose the factory (`"stdio"`, `"http"`, `"url"`, `"ws"`,
    /// `"grpc"`, …). Read this rather than `transport.kind()`: an entry with a bare `ws://` URL
    /// is `"url"` there and `"ws"` here, the kind its scheme chose.
    pub kind: String,
    /// Where the server is, as its configuration says.
    pub transport: TransportConfig,
    /// Credentials for transports that send them (HTTP, WebSocket, gRPC).
    pub auth: Option<Arc<dyn AuthProvider>>,
}

/// Shows the configuration as its own `Debug` does (values redacted), and whether there are
/// credentials.
impl std::fmt::Debug for TransportSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransportSpec")
            .field("server", &self.server)
            .field("kind", &self.kind)
            .field("transport", &self.transport)
            .field("auth", &self.auth.is_some())
            .finish()
    }
}

impl TransportSpec {
    /// The remote server's URL and extra headers, or an error naming the server and kind for a
    /// transport that needs one.
    pub fn url(&self) -> Result<(&str, &BTreeMap<String, String>), Error> {
        match (self.transport.url(), self.transport.headers()) {
            (Some(url), Some(headers)) => Ok((url, headers)),
            _ => Err(self.invalid(format!("the `{}` transport needs a `url`", self.kind))),
        }
    }

    /// A configuration error about this server.
    pub fn invalid(&self, why: impl std::fmt::Display) -> Error {
        Error::new(
            ErrorKind::InvalidParams,
            format!("server \"{}\": {why}", self.server),
        )
    }
}

/// The transports a client can reach servers over: factories by configuration `type` and URL
/// scheme, and in-process servers by name. Later registrations win.
#[derive(Clone, Default)]
pub struct TransportRegistry {
    factories: Vec<Arc<dyn TransportFactory>>,
    in_process: BTreeMap<String, Arc<dyn TransportConnector>>,
}

impl std::fmt::Debug for TransportRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransportRegistry")
            .field("kinds", &self.kinds())
            .field("in_process", &self.in_process.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl TransportRegistry {
    /// No transports at all.
    pub fn empty() -> TransportRegistry {
        TransportRegistry::default()
    }

    /// The transports compiled into this profile: stdio (`stdio` feature); Streamable HTTP,
    /// HTTP+SSE and detection (`http`); WebSocket (`ws`); gRPC (`grpc`). In-process servers
    /// are registered by name ([`register_in_process`](Self::register_in_process)).
    pub fn with_profile() -> TransportRegistry {
        #[allow(unused_mut)]
        let mut registry = TransportRegistry::empty();
        #[cfg(feature = "stdio")]
        registry.register(Arc::new(StdioFactory));
        #[cfg(feature = "http")]
        registry.register(Arc::new(HttpFactory));
        #[cfg(feature = "ws")]
        registry.register(Arc::new(WebSocketFactory));
        #[cfg(feature = "grpc")]
        registry.register(Arc::new(GrpcFactory));
        registry
    }

    /// Adds a transport (a downstream crate's, or one of ours in place of the built-in).
    pub fn register(&mut self, factory: Arc<dyn TransportFactory>) {
        self.factories.push(factory);
    }

    /// Serves the server called `name` (configured as [`TransportConfig::InProcess`]) through
    /// `connector`.
    pub fn register_in_process(&mut self, name: &str, connector: Arc<dyn TransportConnector>) {
        self.in_process.insert(name.to_owned(), connector);
    }

    /// The configuration `type`s served, in registration order, without repeats.
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut kinds: Vec<&'static str> = Vec::new();
        for kind in self
            .factories
            .iter()
            .flat_map(|f| f.kinds().iter().copied())
        {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        kinds
    }

    fn by_kind(&self, kind: &str) -> Option<&Arc<dyn TransportFactory>> {
        self.factories
            .iter()
            .rev()
            .find(|f| f.kinds().contains(&kind))
    }

    fn by_scheme(&self, scheme: &str) -> Option<&Arc<dyn TransportFactory>> {
        self.factories.iter().rev().find(|f| {
            f.url_schemes()
                .iter()
                .any(|s| s.eq_ignore_ascii_case(scheme))
        })
    }

    /// The factory and the transport-neutral description of `server`, or why no transport of
    /// this client reaches it.
    pub(crate) fn resolve(
        &self,
        server: &ServerConfig,
    ) -> Result<(Arc<dyn TransportFactory>, TransportSpec), String> {
        let kind = match &server.transport {
            TransportConfig::InProcess => {
                return Err(format!(
                    "server \"{}\": no in-process server is registered under this name",
                    server.name
                ))
            }
            // A bare URL: http(s) is detected by the HTTP transport; another scheme picks the
            // transport that serves it.
            TransportConfig::Url { url, .. } => {
                let scheme = url.split("://").next().unwrap_or_default();
                let http =
                    scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
                match (http, self.by_scheme(scheme)) {
                    (true, _) => "url".to_owned(),
                    (false, Some(factory)) => factory
                        .kinds()
                        .first()
                        .map_or_else(|| scheme.to_owned(), |kind| (*kind).to_owned()),
                    // Not served here: named as the transport that would serve it.
                    (false, None) => match scheme.to_ascii_lowercase().as_str() {
                        "ws" | "wss" => "ws".to_owned(),
                        "grpc" | "grpcs" => "grpc".to_owned(),
                        other => other.to_owned(),
                    },
                }
            }
            other => other.kind().to_owned(),
        };
        let factory = self
            .by_kind(&kind)
            .ok_or_else(|| unreachable_reason(self, server, &kind))?;
        let spec = TransportSpec {
            server: server.name.clone(),
            kind,
            transport: server.transport.clone(),
            auth: None,
        };
        Ok((factory.clone(), spec))
    }

    /// The connector of `server`'s connections (with `auth` for transports that send
    /// credentials): what a bridge or a harness of its own needs to open connections to a
    /// configured server. Fails (naming the server) when no transport of this registry
    /// reaches it.
    pub fn transport_connector(
        &self,
        server: &ServerConfig,
        auth: Option<Arc<dyn AuthProvider>>,
    ) -> Result<Arc<dyn TransportConnector>, Error> {
        if let TransportConfig::InProcess = server.transport {
            if let Some(connector) = self.in_process.get(&server.name) {
                return Ok(connector.clone());
            }
        }
        let (factory, mut spec) = self
            .resolve(server)
            .map_err(|reason| Error::new(ErrorKind::ServerUnavailable, reason))?;
        spec.auth = auth;
        factory.connector(&spec)
    }

    /// The factory and description of a stdio server whose child gets a token in its
    /// environment (a new connector per connection, with the token of the moment).
    #[cfg(feature = "oauth")]
    pub(crate) fn stdio_with_token(
        &self,
        server: &ServerConfig,
    ) -> Option<(Arc<dyn TransportFactory>, TransportSpec)> {
        matches!(server.transport, TransportConfig::Stdio { .. })
            .then(|| self.resolve(server).ok())
            .flatten()
    }
}

/// The reason no transport reaches `server` as configured with `kind`.
fn unreachable_reason(registry: &TransportRegistry, server: &ServerConfig, kind: &str) -> String {
    // The built-in transports: compiled in, and the smallest profile that has them.
    let built_in = match kind {
        "stdio" => Some((cfg!(feature = "stdio"), "minimal")),
        "http" | "streamable-http" | "streamableHttp" | "sse" | "url" => {
            Some((cfg!(feature = "http"), "professional"))
        }
        "ws" | "websocket" => Some((cfg!(feature = "ws"), "enterprise")),
        "grpc" => Some((cfg!(feature = "grpc"), "enterprise")),
        _ => None,
    };
    match built_in {
        Some((false, profile)) => format!(
            "server \"{}\": the `{}` transport is not built into this profile of mcp-client \
             (features: {}); it arrives with the `{profile}` profile",
            server.name,
            server.transport.kind(),
            crate::PROFILE
        ),
        _ => format!(
            "server \"{}\": no transport for `type: \"{kind}\"` in this client (it knows: {})",
            server.name,
            registry.kinds().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use mcp_wire::StaticBearer;

    use super::*;

    fn spec(kind: &str, transport: TransportConfig) -> TransportSpec {
        TransportSpec {
            server: "remote".into(),
            kind: kind.into(),
            transport,
            auth: Some(Arc::new(StaticBearer::new("t0ken"))),
        }
    }

    fn remote(kind: &str, url: &str, headers: &[(&str, &str)]) -> TransportConfig {
        TransportConfig::Remote {
            kind: kind.into(),
            url: url.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn command() -> TransportConfig {
        TransportConfig::Stdio {
            command: "server".into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        }
    }

    /// The factory's error for `spec`: a configuration error naming the server and `expected`.
    fn refused(factory: &dyn TransportFactory, spec: &TransportSpec, expected: &str) {
        let Err(e) = factory.connector(spec) else {
            panic!("{expected:?}: expected an error for {spec:?}");
        };
        assert_eq!(e.kind(), ErrorKind::InvalidParams, "{e}");
        assert!(e.message().contains("server \"remote\""), "{e}");
        assert!(e.message().contains(expected), "{expected:?} in {e}");
        assert!(!e.message().contains("t0ken"), "{e}");
    }

    #[cfg(feature = "stdio")]
    #[test]
    fn the_stdio_factory_needs_a_command() {
        assert_eq!(StdioFactory.kinds(), ["stdio"]);
        let connector = StdioFactory.connector(&spec("stdio", command())).unwrap();
        assert_eq!(connector.transport_name(), "pipe");
        refused(
            &StdioFactory,
            &spec("stdio", remote("stdio", "http://h/mcp", &[])),
            "needs a `command`",
        );
    }

    #[cfg(feature = "http")]
    #[test]
    fn the_http_factory_serves_http_kinds_and_schemes() {
        assert_eq!(HttpFactory.url_schemes(), ["http", "https"]);
        for kind in ["http", "sse", "url"] {
            assert!(HttpFactory.kinds().contains(&kind), "{kind}");
            let connector = HttpFactory
                .connector(&spec(kind, remote(kind, "https://h.example/mcp", &[])))
                .unwrap();
            assert_eq!(connector.transport_name(), "tcp");
        }
        refused(&HttpFactory, &spec("http", command()), "needs a `url`");
    }

    #[cfg(feature = "ws")]
    #[test]
    fn the_websocket_factory_serves_ws_kinds_and_schemes_and_names_bad_entries() {
        assert_eq!(WebSocketFactory.kinds(), ["ws", "websocket"]);
        assert_eq!(WebSocketFactory.url_schemes(), ["ws", "wss"]);
        let entry = remote(
            "ws",
            "wss://h.example/mcp?key=s3cret",
            &[("X-Key", "s3cret")],
        );
        let connector = WebSocketFactory.connector(&spec("ws", entry)).unwrap();
        assert_eq!(connector.transport_name(), "tcp");
        for (entry, expected) in [
            (command(), "needs a `url`"),
            (
                remote("ws", "https://h/mcp", &[]),
                "scheme must be ws or wss",
            ),
            (
                remote("ws", "ws://h/mcp", &[("Sec-WebSocket-Key", "x")]),
                "Sec-WebSocket-Key",
            ),
        ] {
            refused(&WebSocketFactory, &spec("ws", entry), expected);
        }
    }

    #[cfg(feature = "grpc")]
    #[test]
    fn the_grpc_factory_serves_grpc_entries_and_urls_and_names_bad_entries() {
        assert_eq!(GrpcFactory.kinds(), ["grpc"]);
        assert_eq!(GrpcFactory.url_schemes(), ["grpc", "grpcs"]);
        let entry = remote("grpc", "grpcs://mcp.example:443", &[("x-api-key", "k")]);
        let connector = GrpcFactory.connector(&spec("grpc", entry)).unwrap();
        assert_eq!(connector.transport_name(), "tcp");
        for (entry, expected) in [
            (remote("grpc", "grpc://h:1/mcp", &[]), "no path"),
            (
                remote("grpc", "grpc://h:1", &[("grpc-status", "0")]),
                "reserved",
            ),
            (command(), "needs a `url`"),
        ] {
            refused(&GrpcFactory, &spec("grpc", entry), expected);
        }
    }

    #[test]
    fn a_spec_never_shows_secrets() {
        let entry = remote("ws", "wss://u:pw@h/mcp?key=s3cret", &[("X-Key", "s3cret")]);
        let shown = format!("{:?}", spec("ws", entry));
        assert!(
            !shown.contains("s3cret") && !shown.contains("pw"),
            "{shown}"
        );
    }
}
