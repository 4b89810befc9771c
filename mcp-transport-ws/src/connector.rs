//! [`WebSocketConnector`]: the WebSocket transport as a [`TransportConnector`] — every
//! connection a new WebSocket.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use mcp_core::{BoxTransport, Error, TransportConnector, TransportError};
use tokio_rustls::rustls::ClientConfig;

use crate::config::{Target, WebSocketServerConfig};
use crate::stream::client_config;
use crate::WebSocketTransport;

/// Opens a new WebSocket to one server for every connection; `wss://` connections share one
/// TLS configuration (built on the first). `Debug` shows the configuration redacted.
pub struct WebSocketConnector {
    config: WebSocketServerConfig,
    target: Target,
    tls: OnceLock<Arc<ClientConfig>>,
}

impl WebSocketConnector {
    /// Connections to the server of `config`. Fails (`Connect`) when its URL is not a `ws://`
    /// or `wss://` URL with a host, or a header cannot be sent (a bad name or value, or one the
    /// handshake sets itself): the configuration's fault, found before any connection.
    pub fn new(config: WebSocketServerConfig) -> Result<WebSocketConnector, TransportError> {
        let target = config.target()?;
        config.header_values()?;
        Ok(WebSocketConnector {
            config,
            target,
            tls: OnceLock::new(),
        })
    }

    /// The configuration every connection is made from.
    pub fn config(&self) -> &WebSocketServerConfig {
        &self.config
    }

    fn tls(&self) -> Result<Option<&Arc<ClientConfig>>, TransportError> {
        if !self.target.tls {
            return Ok(None);
        }
        if let Some(tls) = self.tls.get() {
            return Ok(Some(tls));
        }
        let built = client_config(&self.config.root_certificates)?;
        Ok(Some(self.tls.get_or_init(|| built)))
    }
}

impl std::fmt::Debug for WebSocketConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocketConnector")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl TransportConnector for WebSocketConnector {
    async fn connect(&self) -> Result<BoxTransport, Error> {
        let tls = self.tls()?;
        let transport = WebSocketTransport::connect_to(&self.config, &self.target, tls).await?;
        Ok(BoxTransport::new(transport))
    }

    fn transport_name(&self) -> &'static str {
        "tcp"
    }
}

#[cfg(test)]
mod tests {
    use mcp_wire::StaticBearer;

    use super::*;

    #[test]
    fn a_connector_is_refused_for_a_config_that_cannot_connect() {
        for (config, says) in [
            (
                WebSocketServerConfig::new("https://h/mcp"),
                "scheme must be ws or wss",
            ),
            (
                WebSocketServerConfig::new("ws://h/mcp").header("Sec-WebSocket-Key", "x"),
                "Sec-WebSocket-Key",
            ),
        ] {
            let Err(e) = WebSocketConnector::new(config) else {
                panic!("{says:?}: expected a refusal");
            };
            assert_eq!(e.kind(), mcp_core::TransportErrorKind::Connect, "{e}");
            assert!(e.message().contains(says), "{says:?} in {e}");
        }
    }

    #[test]
    fn a_connector_never_shows_secrets() {
        let config = WebSocketServerConfig::new("wss://u:pw@h/mcp?key=s3cret")
            .header("X-Key", "s3cret")
            .auth(Arc::new(StaticBearer::new("s3cret")));
        let shown = format!("{:?}", WebSocketConnector::new(config).unwrap());
        assert!(
            !shown.contains("s3cret") && !shown.contains("pw"),
            "{shown}"
        );
    }
}
