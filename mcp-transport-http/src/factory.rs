//! [`HttpFactory`] and [`HttpConnector`]: the HTTP transports as a
//! [`TransportFactory`](mcp_core::TransportFactory). The connections of one server share what
//! the first ones learned: the flavor its URL speaks (Streamable HTTP or legacy SSE) and its
//! tools' `x-mcp-header` annotations (so a reconnected or pooled connection that did not list
//! tools still sends the headers).

use std::sync::Arc;

use async_trait::async_trait;
use mcp_core::{BoxTransport, Error, TransportConnector, TransportFactory, TransportSpec};

use crate::{
    HttpFlavorMemo, HttpServerConfig, HttpTransport, LegacySseTransport, StreamableHttpTransport,
};

/// Which HTTP transport a connector opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpKind {
    /// Streamable HTTP (`type: "http"`).
    Streamable,
    /// The 2024-11-05 HTTP+SSE transport (`type: "sse"`).
    LegacySse,
    /// Either, detected on the first connection and remembered (a `url` without a `type`).
    Detect,
}

/// Serves configuration entries of `type: "http"` (also `"streamable-http"`,
/// `"streamableHttp"`), `"sse"`, and `"url"` (an http(s) URL without a type: detected).
#[derive(Clone, Copy, Debug, Default)]
pub struct HttpFactory;

impl TransportFactory for HttpFactory {
    fn kinds(&self) -> &'static [&'static str] {
        &["http", "streamable-http", "streamableHttp", "sse", "url"]
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["http", "https"]
    }

    fn connector(&self, spec: &TransportSpec) -> Result<Arc<dyn TransportConnector>, Error> {
        let (url, headers) = spec.url()?;
        let kind = match spec.kind.as_str() {
            "sse" => HttpKind::LegacySse,
            "url" => HttpKind::Detect,
            _ => HttpKind::Streamable,
        };
        let mut config = HttpServerConfig::new(url);
        for (name, value) in headers {
            config = config.header(name, value);
        }
        if let Some(auth) = &spec.auth {
            config = config.auth(auth.clone());
        }
        Ok(Arc::new(HttpConnector::new(config, kind)))
    }
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
            HttpKind::LegacySse => BoxTransport::new(LegacySseTransport::connect(config).await?),
            HttpKind::Detect => BoxTransport::new(HttpTransport::new(config, self.flavor.clone())?),
        })
    }

    fn transport_name(&self) -> &'static str {
        "tcp"
    }
}
