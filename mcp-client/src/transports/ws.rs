//! [`WebSocketFactory`]: `type: "ws"` (or `"websocket"`) entries and bare `ws://` / `wss://`
//! URLs as WebSocket servers — every connection a new WebSocket.

use std::sync::Arc;

use mcp_core::{Error, TransportConnector};
use mcp_transport_ws::{WebSocketConnector, WebSocketServerConfig};

use super::{TransportFactory, TransportSpec};

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
        // A bad URL or header is a configuration error, reported before any connection.
        let connector = WebSocketConnector::new(config).map_err(|e| spec.invalid(e.message()))?;
        Ok(Arc::new(connector))
    }
}
