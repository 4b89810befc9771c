//! Opening sessions to one server over whichever transport its configuration names.
//!
//! [`TransportRegistry`] maps each configuration `type` (and each URL scheme of an entry with a
//! bare `url`) to the [`TransportFactory`] of the transport crate that serves it — the profile's
//! built-ins, plus any a harness registers — and holds the in-process servers registered in code.
//! [`ServerConnector`] is one server's [`Connector`], used by its supervisor (first connection,
//! reconnects, probes) and by its pool (more connections): the transport's connector, then the
//! session, then the state every new session is brought to.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_core::types::LoggingLevel;
use mcp_core::{
    AuthProvider, ClientHandler, ClientSession, Connector, Endpoint, Error, ErrorKind,
    McpServiceExt, RequestOptions, SessionConnector, SessionOptions, TransportConnector,
    TransportFactory, TransportSpec,
};

use crate::config::{ServerConfig, TransportConfig};

/// The OAuth provider of a server that uses OAuth.
#[cfg(feature = "oauth")]
pub(crate) type ServerAuth = Option<Arc<mcp_auth::OAuthProvider>>;
/// Nothing without OAuth.
#[cfg(not(feature = "oauth"))]
pub(crate) type ServerAuth = ();

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
    /// legacy SSE and detection (`http`); WebSocket (`ws`); gRPC (`grpc`). In-process servers
    /// are registered by name ([`register_in_process`](Self::register_in_process)).
    pub fn with_profile() -> TransportRegistry {
        #[allow(unused_mut)]
        let mut registry = TransportRegistry::empty();
        #[cfg(feature = "stdio")]
        registry.register(Arc::new(mcp_transport_stdio::StdioFactory));
        #[cfg(feature = "http")]
        registry.register(Arc::new(mcp_transport_http::HttpFactory));
        #[cfg(feature = "ws")]
        registry.register(Arc::new(mcp_transport_ws::WebSocketFactory));
        #[cfg(feature = "grpc")]
        registry.register(Arc::new(mcp_transport_grpc::GrpcFactory));
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
    fn resolve(
        &self,
        server: &ServerConfig,
    ) -> Result<(Arc<dyn TransportFactory>, TransportSpec), String> {
        let (kind, endpoint) = match &server.transport {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => (
                "stdio".to_owned(),
                Endpoint::Command {
                    command: command.clone(),
                    args: args.clone(),
                    env: env.clone(),
                    cwd: cwd.clone(),
                },
            ),
            TransportConfig::InProcess => {
                return Err(format!(
                    "server \"{}\": no in-process server is registered under this name",
                    server.name
                ))
            }
            other => {
                let url = other.url().unwrap_or_default();
                let endpoint = Endpoint::Url {
                    url: url.to_owned(),
                    headers: other.headers().cloned().unwrap_or_default(),
                };
                let kind = match other {
                    // A bare URL: http(s) is detected by the HTTP transport; another scheme
                    // picks the transport that serves it.
                    TransportConfig::Url { .. } => {
                        let scheme = url.split("://").next().unwrap_or_default();
                        let http = scheme.eq_ignore_ascii_case("http")
                            || scheme.eq_ignore_ascii_case("https");
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
                (kind, endpoint)
            }
        };
        let factory = self
            .by_kind(&kind)
            .ok_or_else(|| unreachable_reason(self, server, &kind))?;
        let spec = TransportSpec {
            server: server.name.clone(),
            kind,
            endpoint,
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
    fn stdio_with_token(
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

/// State every new session of a server is brought to before anyone uses it.
#[derive(Debug, Default)]
pub(crate) struct SessionSetup {
    /// The harness's `logging/setLevel`, sent to every new session of a server that has logging.
    pub(crate) logging_level: Option<LoggingLevel>,
}

/// How one server's connections are opened.
enum Opening {
    /// Through one transport connector.
    Connector(SessionConnector),
    /// A stdio server that gets a token in its environment: a connector per connection.
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    WithToken {
        factory: Arc<dyn TransportFactory>,
        spec: TransportSpec,
        handler: Arc<dyn ClientHandler>,
        options: SessionOptions,
    },
    /// Not at all: why.
    Unreachable(String),
}

/// Opens sessions to one configured server.
pub(crate) struct ServerConnector {
    config: ServerConfig,
    opening: Opening,
    setup: Arc<Mutex<SessionSetup>>,
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    auth: ServerAuth,
    transport_name: &'static str,
}

impl ServerConnector {
    pub(crate) fn new(
        config: ServerConfig,
        registry: &TransportRegistry,
        handler: Arc<dyn ClientHandler>,
        options: SessionOptions,
        setup: Arc<Mutex<SessionSetup>>,
        auth: ServerAuth,
    ) -> ServerConnector {
        // Every session of this server shares what the first found about its era; the
        // configuration may pin it.
        let mut options = options.with_era_memo(mcp_core::EraMemo::default());
        if let Some(era) = config.era {
            options = options.with_era(era);
        }
        let opening = match Self::token_opening(&config, registry, &auth) {
            Some((factory, spec)) => Opening::WithToken {
                factory,
                spec,
                handler,
                options,
            },
            None => match registry.transport_connector(&config, provider(&auth)) {
                Ok(transport) => {
                    Opening::Connector(SessionConnector::new(transport, handler, options))
                }
                Err(e) => Opening::Unreachable(e.message().to_owned()),
            },
        };
        let transport_name = match &opening {
            Opening::Connector(c) => c.transport().transport_name(),
            Opening::WithToken { .. } => "pipe",
            Opening::Unreachable(_) => network_transport(&config.transport),
        };
        ServerConnector {
            config,
            opening,
            setup,
            auth,
            transport_name,
        }
    }

    /// A stdio server with `oauth.token_env`: its factory and description.
    #[allow(unused_variables)]
    fn token_opening(
        config: &ServerConfig,
        registry: &TransportRegistry,
        auth: &ServerAuth,
    ) -> Option<(Arc<dyn TransportFactory>, TransportSpec)> {
        #[cfg(feature = "oauth")]
        if config.oauth.token_env.is_some() && auth.is_some() {
            return registry.stdio_with_token(config);
        }
        None
    }

    /// Why this server cannot be reached at all, if so.
    pub(crate) fn unreachable(&self) -> Option<&str> {
        match &self.opening {
            Opening::Unreachable(reason) => Some(reason),
            _ => None,
        }
    }

    /// The transport's name as in OpenTelemetry's `network.transport`.
    pub(crate) fn transport_name(&self) -> &'static str {
        self.transport_name
    }

    async fn bring_up(&self, session: &ClientSession) {
        let level = mcp_core::sync::lock(&self.setup).logging_level;
        if let Some(level) = level {
            if session.server_info().capabilities.logging.is_some() {
                if let Err(e) = session
                    .set_logging_level(level, RequestOptions::new())
                    .await
                {
                    tracing::warn!(server = %self.config.name, error = %e, "could not set the logging level on a new session");
                }
            }
        }
    }
}

/// The provider as the transports' seam sees it.
fn provider(auth: &ServerAuth) -> Option<Arc<dyn AuthProvider>> {
    #[cfg(feature = "oauth")]
    return auth.clone().map(|p| p as Arc<dyn AuthProvider>);
    #[cfg(not(feature = "oauth"))]
    {
        let () = auth;
        None
    }
}

#[async_trait]
impl Connector for ServerConnector {
    async fn connect(&self) -> Result<ClientSession, Error> {
        let session = match &self.opening {
            Opening::Connector(connector) => connector.connect().await?,
            Opening::WithToken {
                factory,
                spec,
                handler,
                options,
            } => {
                #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
                let mut spec = spec.clone();
                #[cfg(feature = "oauth")]
                if let (Some(variable), Some(token), Endpoint::Command { env, .. }) = (
                    &self.config.oauth.token_env,
                    stdio_token(&self.auth).await?,
                    &mut spec.endpoint,
                ) {
                    env.insert(variable.clone(), token);
                }
                let transport = factory.connector(&spec)?;
                SessionConnector::new(transport, handler.clone(), options.clone())
                    .connect()
                    .await?
            }
            Opening::Unreachable(reason) => {
                return Err(Error::new(ErrorKind::ServerUnavailable, reason.clone()))
            }
        };
        self.bring_up(&session).await;
        Ok(session)
    }
}

/// The token a stdio server with `oauth: { resource, token_env }` gets in its environment: a
/// valid one for that resource (refreshed if need be), or an auth error naming the login.
#[cfg(feature = "oauth")]
async fn stdio_token(auth: &ServerAuth) -> Result<Option<String>, Error> {
    let Some(provider) = auth else {
        return Ok(None);
    };
    let client = provider.client();
    // A DPoP-bound token (from a login through a remote server entry with the same URL) is
    // useless without the key, which never leaves this process: refused before it is
    // refreshed, so its refresh token is not rotated for nothing.
    let bound = client
        .tokens()
        .await
        .map_err(Error::from)?
        .is_some_and(|t| t.token_type == mcp_auth::TokenType::Dpop);
    if bound {
        return Err(Error::new(
            ErrorKind::Auth,
            format!(
                "the stored token for {} is DPoP-bound (it came from a login through a remote \
                 server entry with that URL) and cannot be handed to a child process; set \
                 `\"oauth\": {{ \"dpop\": \"never\" }}` on that entry and log in again",
                mcp_core::auth::redact_url(client.config().server_url.as_str())
            ),
        ));
    }
    let token = client.get_valid_token().await.map_err(Error::from)?;
    Ok(Some(token.expose().to_owned()))
}

/// The transport's name as in OpenTelemetry's `network.transport`, from the configuration
/// alone (a server no transport reaches).
pub(crate) fn network_transport(config: &TransportConfig) -> &'static str {
    match config {
        TransportConfig::Stdio { .. } => "pipe",
        TransportConfig::InProcess => "inproc",
        TransportConfig::Http { .. }
        | TransportConfig::Sse { .. }
        | TransportConfig::Url { .. }
        | TransportConfig::Remote { .. } => "tcp",
    }
}
