//! [`HttpConnector`]: the HTTP transports as a [`TransportConnector`]. The connections of one server share what
//! the first ones learned: the flavor its URL speaks (Streamable HTTP or HTTP+SSE) and its
//! tools' `x-mcp-header` annotations (so a reconnected or pooled connection that did not list
//! tools still sends the headers).

use async_trait::async_trait;
use mcp_core::{BoxTransport, Error, TransportConnector};

use crate::{
    HttpFlavorMemo, HttpServerConfig, HttpSseTransport, HttpTransport, StreamableHttpTransport,
};

/// Which HTTP transport a connector opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpKind {
    /// Streamable HTTP (`type: "http"`).
    Streamable,
    /// The 2024-11-05 HTTP+SSE transport (`type: "sse"`).
    HttpSse,
    /// Either, detected on the first connection and remembered (a `url` without a `type`).
    Detect,
}

/// Opens HTTP connections to one server; they share the server's flavor and tool headers.
#[derive(Debug)]
pub struct HttpConnector {
    config: HttpServerConfig,
    kind: HttpKind,
    flavor: HttpFlavorMemo,
}

impl HttpConnector {
    /// Connections to the server of `config`, of `kind`. Every connection shares `config`'s
    /// tool-header table.
    pub fn new(config: HttpServerConfig, kind: HttpKind) -> HttpConnector {
        HttpConnector {
            config,
            kind,
            flavor: HttpFlavorMemo::default(),
        }
    }

    /// What the connections have learned about the server's flavor.
    pub fn flavor(&self) -> &HttpFlavorMemo {
        &self.flavor
    }
}

#[async_trait]
impl TransportConnector for HttpConnector {
    async fn connect(&self) -> Result<BoxTransport, Error> {
        let config = self.config.clone();
        Ok(match self.kind {
            HttpKind::Streamable => BoxTransport::new(StreamableHttpTransport::new(config)?),
            HttpKind::HttpSse => BoxTransport::new(HttpSseTransport::connect(config).await?),
            HttpKind::Detect => BoxTransport::new(HttpTransport::new(config, self.flavor.clone())?),
        })
    }

    fn transport_name(&self) -> &'static str {
        "tcp"
    }
}
