//! [`WebSocketFactory`] and [`WebSocketConnector`]: the WebSocket transport as a
//! [`TransportFactory`](mcp_core::TransportFactory) — every connection a new WebSocket.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use mcp_core::{
    BoxTransport, Error, ErrorKind, TransportConnector, TransportError, TransportFactory,
    TransportSpec,
};
use tokio_rustls::rustls::ClientConfig;

use crate::config::{Target, WebSocketServerConfig};
use crate::stream::client_config;
use crate::WebSocketTransport;

/// Serves configuration entries of `type: "ws"` (or `"websocket"`), and entries with a
/// `ws://` or `wss://` URL and no type.
#[derive(Clone, Copy, Debug, Default)]
pub struct WebSocketFactory;

impl TransportFactory for WebSocketFactory {
    fn kinds(&self) -> &'static [&'static str] {
        &["ws", "websocket"]
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["ws", "wss"]
    }

    fn connector(&self, spec: &TransportSpec) -> Result<Arc<dyn TransportConnector>, Error> {
        let (url, headers) = spec.url()?;
        let mut config = WebSocketServerConfig::new(url);
        for (name, value) in headers {
            config = config.header(name, value);
        }
        if let Some(auth) = &spec.auth {
            config = config.auth(auth.clone());
        }
        let invalid = |e: TransportError| {
            Error::new(
                ErrorKind::InvalidParams,
                format!("server \"{}\": {}", spec.server, e.message()),
            )
        };
        // A bad URL or header is a configuration error, reported before any connection.
        config.header_values().map_err(invalid)?;
        WebSocketConnector::new(config)
            .map_err(invalid)
            .map(|c| Arc::new(c) as _)
    }
}

/// Opens a new WebSocket to one server for every connection; `wss://` connections share one
/// TLS configuration (built on the first). `Debug` shows the configuration redacted.
pub struct WebSocketConnector {
    config: WebSocketServerConfig,
    target: Target,
    tls: OnceLock<Arc<ClientConfig>>,
}

impl WebSocketConnector {
    /// Connections to the server of `config`. Fails (`Connect`) when its URL is not a `ws://`
    /// or `wss://` URL with a host.
    pub fn new(config: WebSocketServerConfig) -> Result<WebSocketConnector, TransportError> {
        let target = config.target()?;
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
    use std::collections::BTreeMap;

    use mcp_core::{Endpoint, StaticBearer};

    use super::*;

    fn spec(kind: &str, endpoint: Endpoint) -> TransportSpec {
        TransportSpec {
            server: "remote".into(),
            kind: kind.into(),
            endpoint,
            auth: Some(Arc::new(StaticBearer::new("t0ken"))),
        }
    }

    fn url(url: &str, headers: &[(&str, &str)]) -> Endpoint {
        Endpoint::Url {
            url: url.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn the_factory_serves_ws_kinds_and_schemes() {
        let factory = WebSocketFactory;
        assert_eq!(factory.kinds(), ["ws", "websocket"]);
        assert_eq!(factory.url_schemes(), ["ws", "wss"]);
        let connector = factory
            .connector(&spec(
                "ws",
                url("wss://h.example/mcp?key=s3cret", &[("X-Key", "s3cret")]),
            ))
            .unwrap();
        assert_eq!(connector.transport_name(), "tcp");
    }

    #[test]
    fn entries_that_cannot_be_websocket_servers_are_named_errors() {
        let factory = WebSocketFactory;
        let command = Endpoint::Command {
            command: "server".into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        };
        for (endpoint, expected) in [
            (command, "needs a `url`"),
            (url("https://h/mcp", &[]), "scheme must be ws or wss"),
            (
                url("ws://h/mcp", &[("Sec-WebSocket-Key", "x")]),
                "Sec-WebSocket-Key",
            ),
        ] {
            let Err(e) = factory.connector(&spec("ws", endpoint)) else {
                panic!("{expected:?}: expected an error");
            };
            assert_eq!(e.kind(), ErrorKind::InvalidParams);
            assert!(e.message().contains("remote"), "{e}");
            assert!(e.message().contains(expected), "{expected:?} in {e}");
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
