//! What an HTTP transport needs to reach a server.

use crate::headers::ToolHeaders;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use mcp_core::{TransportError, TransportErrorKind};
use mcp_wire::AuthProvider;

use crate::client::Target;

/// How to reach an MCP server over HTTP. Header values and credentials never appear in `Debug`.
#[derive(Clone)]
pub struct HttpServerConfig {
    /// The endpoint (`http://` or `https://`).
    pub url: String,
    /// Extra headers sent with every request (e.g. API keys from the configuration).
    pub headers: Vec<(String, String)>,
    /// Supplies the `Authorization` value and hears 401/403 challenges.
    pub auth: Option<Arc<dyn AuthProvider>>,
    /// Deadline for establishing a connection. Default: 10 s.
    pub connect_timeout: Duration,
    /// Largest message accepted from the server, in bytes. Default: 64 MiB.
    pub max_message_size: usize,
    /// The tools' `x-mcp-header` annotations (2026-07-28), learned from `tools/list` answers
    /// and shared by every connection made from clones of this configuration.
    pub tool_headers: Arc<ToolHeaders>,
}

impl HttpServerConfig {
    /// Reaches `url` with the defaults.
    pub fn new(url: impl Into<String>) -> Self {
        HttpServerConfig {
            url: url.into(),
            headers: Vec::new(),
            auth: None,
            connect_timeout: Duration::from_secs(10),
            max_message_size: 64 * 1024 * 1024,
            tool_headers: Arc::default(),
        }
    }

    /// Adds a header sent with every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the credentials provider.
    pub fn auth(mut self, provider: Arc<dyn AuthProvider>) -> Self {
        self.auth = Some(provider);
        self
    }

    /// Sets the largest accepted message.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// The endpoint, checked: an `http://` or `https://` URL with a host.
    pub(crate) fn target(&self) -> Result<Target, TransportError> {
        let shown = mcp_wire::redact::redact_url(&self.url);
        let invalid = |why: String| {
            TransportError::fatal(
                TransportErrorKind::Connect,
                format!("invalid server URL {shown:?}: {why}"),
            )
        };
        let url = url::Url::parse(&self.url).map_err(|e| invalid(e.to_string()))?;
        Target::new(url).map_err(invalid)
    }

    /// The URL as shown in errors and logs: no user info, no query (either may carry a key).
    pub(crate) fn display_url(&self) -> String {
        match url::Url::parse(&self.url) {
            Ok(mut url) => {
                let _ = url.set_username("");
                let _ = url.set_password(None);
                url.set_query(None);
                url.set_fragment(None);
                url.to_string()
            }
            Err(_) => mcp_wire::redact::redact_url(&self.url),
        }
    }

    /// The configured headers, validated.
    pub(crate) fn header_map(&self) -> Result<HeaderMap, TransportError> {
        let mut map = HeaderMap::new();
        for (name, value) in &self.headers {
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                TransportError::fatal(
                    TransportErrorKind::Connect,
                    format!("invalid header name {name:?}"),
                )
            })?;
            // The value may be a secret: the error names the header only.
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                TransportError::fatal(
                    TransportErrorKind::Connect,
                    format!("invalid value for header {name:?}"),
                )
            })?;
            value.set_sensitive(true);
            map.append(header, value);
        }
        Ok(map)
    }
}

impl fmt::Debug for HttpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|(k, _)| format!("{k}: <redacted>"))
            .collect();
        f.debug_struct("HttpServerConfig")
            .field("url", &self.display_url())
            .field("headers", &headers)
            .field("auth", &self.auth.as_ref().map(|_| "<provider>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("max_message_size", &self.max_message_size)
            .finish()
    }
}
