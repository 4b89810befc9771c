//! [`HttpFactory`]: `type: "http"` (also `"streamable-http"`, `"streamableHttp"`), `"sse"` and
//! bare http(s) URLs as the HTTP transports. The connections of one server share what the first
//! ones learned (the flavor a bare URL speaks, the tools' `x-mcp-header` annotations).

use std::sync::Arc;

use mcp_core::{Error, TransportConnector};
use mcp_transport_http::{HttpConnector, HttpKind, HttpServerConfig};

use super::{TransportFactory, TransportSpec};

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
            "sse" => HttpKind::HttpSse,
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
