//! Opening sessions to one server over whichever transport its configuration names, as far as
//! the enabled profile has it: [`ServerConnector`] is the server's [`Connector`], used by its
//! supervisor (first connection, reconnects, probes) and by its pool (more connections).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_core::types::LoggingLevel;
use mcp_core::{
    ClientHandler, ClientSession, Connector, Error, ErrorKind, McpServiceExt, RequestOptions,
    SessionOptions,
};

use crate::config::{ServerConfig, TransportConfig};

/// What the connections to one HTTP server share: the flavor its `url` turned out to speak
/// (Streamable HTTP or legacy SSE) and its tools' `x-mcp-header` annotations (so a reconnected
/// or pooled connection that did not list tools still sends the headers).
#[cfg(feature = "http")]
#[derive(Debug, Default, Clone)]
pub(crate) struct HttpMemo {
    flavor: mcp_transport_http::HttpFlavorMemo,
    tool_headers: Arc<mcp_transport_http::headers::ToolHeaders>,
}
/// Nothing to remember without the HTTP transports.
#[cfg(not(feature = "http"))]
pub(crate) type HttpMemo = ();

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

/// Opens sessions to one configured server.
pub(crate) struct ServerConnector {
    config: ServerConfig,
    handler: Arc<dyn ClientHandler>,
    options: SessionOptions,
    memo: HttpMemo,
    setup: Arc<Mutex<SessionSetup>>,
    auth: ServerAuth,
}

impl ServerConnector {
    pub(crate) fn new(
        config: ServerConfig,
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
        ServerConnector {
            config,
            handler,
            options,
            memo: HttpMemo::default(),
            setup,
            auth,
        }
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

#[async_trait]
impl Connector for ServerConnector {
    async fn connect(&self) -> Result<ClientSession, Error> {
        let session = open(
            &self.config,
            self.handler.clone(),
            self.options.clone(),
            &self.memo,
            &self.auth,
        )
        .await?;
        self.bring_up(&session).await;
        Ok(session)
    }
}

#[cfg(feature = "http")]
fn http_config(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    auth: &ServerAuth,
    memo: &HttpMemo,
) -> mcp_transport_http::HttpServerConfig {
    let mut config = mcp_transport_http::HttpServerConfig::new(url);
    config.tool_headers = memo.tool_headers.clone();
    for (name, value) in headers {
        config = config.header(name, value);
    }
    #[cfg(feature = "oauth")]
    if let Some(provider) = auth {
        config = config.auth(provider.clone());
    }
    #[cfg(not(feature = "oauth"))]
    let () = auth;
    config
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

/// Connects to one server and performs the handshake (bounded by `options.initialize_timeout`).
async fn open(
    server: &ServerConfig,
    handler: Arc<dyn ClientHandler>,
    options: SessionOptions,
    memo: &HttpMemo,
    auth: &ServerAuth,
) -> Result<ClientSession, Error> {
    #[cfg(not(feature = "http"))]
    let _ = memo;
    #[cfg(not(any(feature = "http", feature = "oauth")))]
    let () = auth;
    match &server.transport {
        #[cfg(feature = "stdio")]
        TransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            use mcp_transport_stdio::{StdioServerConfig, StdioTransport};
            let mut config = StdioServerConfig::new(command)
                .args(args)
                .name(&server.name);
            for (key, value) in env {
                config = config.env(key, value);
            }
            if let Some(cwd) = cwd {
                config = config.cwd(cwd);
            }
            #[cfg(feature = "oauth")]
            if let (Some(variable), Some(token)) =
                (&server.oauth.token_env, stdio_token(auth).await?)
            {
                config = config.env(variable, token);
            }
            let transport = StdioTransport::spawn(config)?;
            ClientSession::connect_shared(transport, handler, options).await
        }
        #[cfg(feature = "http")]
        TransportConfig::Http { url, headers } => {
            let transport = mcp_transport_http::StreamableHttpTransport::new(http_config(
                url, headers, auth, memo,
            ))?;
            ClientSession::connect_shared(transport, handler, options).await
        }
        #[cfg(feature = "http")]
        TransportConfig::Sse { url, headers } => {
            let transport = mcp_transport_http::LegacySseTransport::connect(http_config(
                url, headers, auth, memo,
            ))
            .await?;
            ClientSession::connect_shared(transport, handler, options).await
        }
        #[cfg(feature = "http")]
        TransportConfig::Url { url, headers } => {
            let config = http_config(url, headers, auth, memo);
            let transport = mcp_transport_http::HttpTransport::new(config, memo.flavor.clone())?;
            ClientSession::connect_shared(transport, handler, options).await
        }
        #[allow(unreachable_patterns)]
        _ => {
            let _ = (handler, options);
            Err(Error::new(
                ErrorKind::ServerUnavailable,
                unsupported(server)
                    .unwrap_or_else(|| format!("server \"{}\": no transport for it", server.name)),
            ))
        }
    }
}

/// Why this profile cannot reach the server at all (its transport is not compiled in), if so.
pub(crate) fn unsupported(server: &ServerConfig) -> Option<String> {
    let supported = match &server.transport {
        TransportConfig::Stdio { .. } => cfg!(feature = "stdio"),
        TransportConfig::Http { .. }
        | TransportConfig::Sse { .. }
        | TransportConfig::Url { .. } => {
            cfg!(feature = "http")
        }
    };
    (!supported).then(|| {
        format!(
            "server \"{}\": the `{}` transport is not built into this profile of mcp-client (features: {}); it arrives with the `professional` profile",
            server.name,
            server.transport.kind(),
            crate::PROFILE
        )
    })
}

/// The transport's name as in OpenTelemetry's `network.transport`, from the configuration.
pub(crate) fn network_transport(config: &TransportConfig) -> &'static str {
    match config {
        TransportConfig::Stdio { .. } => "pipe",
        TransportConfig::Http { .. }
        | TransportConfig::Sse { .. }
        | TransportConfig::Url { .. } => "tcp",
    }
}
