//! Opening a session over whichever transport a server's configuration names, as far as the
//! enabled profile has it.

use mcp_core::{ClientHandler, ClientSession, Error, ErrorKind, SessionOptions};

use crate::config::{ServerConfig, TransportConfig};

/// What a server's `url` turned out to speak (Streamable HTTP or legacy SSE), kept for the
/// server's later connections.
#[cfg(feature = "http")]
pub(crate) type HttpMemo = mcp_transport_http::HttpFlavorMemo;
/// Nothing to remember without the HTTP transports.
#[cfg(not(feature = "http"))]
pub(crate) type HttpMemo = ();

#[cfg(feature = "http")]
fn http_config(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> mcp_transport_http::HttpServerConfig {
    let mut config = mcp_transport_http::HttpServerConfig::new(url);
    for (name, value) in headers {
        config = config.header(name, value);
    }
    config
}

/// Connects to one server and performs the handshake (bounded by `options.initialize_timeout`).
pub(crate) async fn connect(
    server: &ServerConfig,
    handler: impl ClientHandler,
    options: SessionOptions,
    memo: &HttpMemo,
) -> Result<ClientSession, Error> {
    #[cfg(not(feature = "http"))]
    let _ = memo;
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
            let transport = StdioTransport::spawn(config)?;
            ClientSession::connect(transport, handler, options).await
        }
        #[cfg(feature = "http")]
        TransportConfig::Http { url, headers } => {
            let transport =
                mcp_transport_http::StreamableHttpTransport::new(http_config(url, headers))?;
            ClientSession::connect(transport, handler, options).await
        }
        #[cfg(feature = "http")]
        TransportConfig::Sse { url, headers } => {
            let transport =
                mcp_transport_http::LegacySseTransport::connect(http_config(url, headers)).await?;
            ClientSession::connect(transport, handler, options).await
        }
        #[cfg(feature = "http")]
        TransportConfig::Url { url, headers } => {
            let memo = memo.clone();
            let transport =
                mcp_transport_http::HttpTransport::new(http_config(url, headers), memo)?;
            ClientSession::connect(transport, handler, options).await
        }
        #[allow(unreachable_patterns)]
        other => {
            let _ = (handler, options);
            Err(Error::new(
                ErrorKind::ServerUnavailable,
                format!(
                    "server \"{}\": the `{}` transport is not built into this profile of mcp-client (features: {}); it arrives with the `professional` profile",
                    server.name,
                    other.kind(),
                    crate::PROFILE
                ),
            ))
        }
    }
}
