//! Opening sessions to one server over whichever transport its configuration names (found in
//! the [`TransportRegistry`]).
//!
//! [`ServerConnector`] is one server's [`SessionConnector`], used by its supervisor (first connection,
//! reconnects, probes) and by its pool (more connections): the transport's connector, then the
//! session, then the state every new session is brought to.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_core::types::LoggingLevel;
use mcp_core::{Error, ErrorKind, McpServiceExt, RequestOptions};
use mcp_session::{
    ClientHandler, ClientSession, HandshakeConnector, SessionConnector, SessionOptions,
};
use mcp_wire::AuthProvider;

use crate::config::{ServerConfig, TransportConfig};
use crate::transports::{TransportFactory, TransportRegistry, TransportSpec};

/// The OAuth provider of a server that uses OAuth.
#[cfg(feature = "oauth")]
pub(crate) type ServerAuth = Option<Arc<mcp_auth::OAuthProvider>>;
/// Nothing without OAuth.
#[cfg(not(feature = "oauth"))]
pub(crate) type ServerAuth = ();

/// State every new session of a server is brought to before anyone uses it.
#[derive(Debug, Default)]
pub(crate) struct SessionSetup {
    /// The harness's `logging/setLevel`, sent to every new session of a server that has logging.
    pub(crate) logging_level: Option<LoggingLevel>,
}

/// How one server's connections are opened.
enum Opening {
    /// Through one transport connector.
    Handshake(HandshakeConnector),
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
        let mut options = options.with_era_memo(mcp_session::EraMemo::default());
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
                    Opening::Handshake(HandshakeConnector::new(transport, handler, options))
                }
                Err(e) => Opening::Unreachable(e.message().to_owned()),
            },
        };
        let transport_name = match &opening {
            Opening::Handshake(c) => c.transport().transport_name(),
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
impl SessionConnector for ServerConnector {
    async fn connect(&self) -> Result<ClientSession, Error> {
        let session = match &self.opening {
            Opening::Handshake(connector) => connector.connect().await?,
            Opening::WithToken {
                factory,
                spec,
                handler,
                options,
            } => {
                #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
                let mut spec = spec.clone();
                #[cfg(feature = "oauth")]
                if let (Some(variable), Some(token), TransportConfig::Stdio { env, .. }) = (
                    &self.config.oauth.token_env,
                    stdio_token(&self.auth).await?,
                    &mut spec.transport,
                ) {
                    env.insert(variable.clone(), token);
                }
                let transport = factory.connector(&spec)?;
                HandshakeConnector::new(transport, handler.clone(), options.clone())
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
                mcp_wire::redact::redact_url(client.config().server_url.as_str())
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
