//! The HTTP client every OAuth request goes through: https only (http only to a loopback
//! address), no redirects followed, a timeout on each request and a cap on each body — for
//! metadata discovery, registration and the token endpoint alike. The client of one MCP server
//! ([`AuthHttp::for_config`]) also refuses addresses outside the server's network
//! ([`address_policy`](crate::address_policy)).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_wire::redact::redact_url;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde::de::DeserializeOwned;
use url::Url;

use crate::address_policy::{AddressGuard, AddressPolicy, HostResolver, SystemResolver};
use crate::config::{Grant, OAuthConfig};
use crate::error::AuthError;

/// Each OAuth request gets this long, connecting and reading included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Metadata, registration and token bodies larger than this are refused.
pub const BODY_LIMIT: usize = 1 << 20;

/// Whether `url` may carry OAuth traffic: https anywhere, http only to a loopback address.
pub fn check_url(url: &Url) -> Result<(), AuthError> {
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(url) => Ok(()),
        _ => Err(AuthError::InsecureUrl {
            url: redact_url(url.as_str()),
        }),
    }
}

/// How much of a text that is not a URL an error shows (a server's metadata may hold a
/// megabyte where a URL belongs).
const SHOWN_URL_CHARS: usize = 200;

/// Parses `text` as a URL and applies [`check_url`]; `what` names it in errors, which show
/// the text redacted and at most 200 characters of it.
pub fn parse_url(text: &str, what: &str) -> Result<Url, AuthError> {
    let url = Url::parse(text).map_err(|e| {
        let shown =
            mcp_wire::redact::excerpt_of_start(redact_url(text).as_bytes(), SHOWN_URL_CHARS);
        AuthError::InvalidUrl(format!("{what} {shown:?} is not a URL: {e}"))
    })?;
    check_url(&url)?;
    Ok(url)
}

/// Whether the URL's host is `localhost` or a loopback IP address.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// A response that was read whole (under [`BODY_LIMIT`]). `Debug` shows only the status: the
/// body may hold tokens.
pub struct Fetched {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Vec<u8>,
}

impl std::fmt::Debug for Fetched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetched")
            .field("status", &self.status)
            .field("body_bytes", &self.body.len())
            .finish_non_exhaustive()
    }
}

impl Fetched {
    /// The body as JSON of type `T`; `what` names it in errors.
    pub fn json<T: DeserializeOwned>(&self, what: &str, url: &Url) -> Result<T, AuthError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            AuthError::Metadata(format!(
                "{what} at {} is not valid: {e}",
                redact_url(url.as_str())
            ))
        })
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The start of the body, for error messages (metadata, errors): an
    /// [`excerpt`](mcp_wire::redact::excerpt) of 200 characters, so that a server echoing a
    /// client secret or a token back never puts it into an error or a log.
    pub fn snippet(&self) -> String {
        mcp_wire::redact::excerpt(&self.body, 200)
    }
}

/// The OAuth HTTP client (cheap to clone).
#[derive(Clone, Debug)]
pub struct AuthHttp {
    client: reqwest::Client,
    /// The address check of the MCP server this client works for; `None` for a user agent.
    guard: Option<Arc<AddressGuard>>,
    /// Origins besides the MCP server's that its 401 may send metadata discovery to.
    resource_metadata_origins: Vec<url::Origin>,
}

impl AuthHttp {
    /// A client that follows no redirects and bounds every request by [`REQUEST_TIMEOUT`],
    /// with no address check: it stands in for the user's browser (e.g.
    /// [`approved_callback`](crate::login::approved_callback)), which goes wherever the
    /// authorization URL says. The requests of an MCP server's OAuth client go through
    /// [`for_config`](Self::for_config).
    pub fn new() -> Result<AuthHttp, AuthError> {
        Ok(AuthHttp {
            client: Self::builder().build().map_err(Self::build_error)?,
            guard: None,
            resource_metadata_origins: Vec::new(),
        })
    }

    /// The client of `config`'s MCP server: as [`new`](Self::new), and every request to an
    /// origin the configuration does not name (the server's own, a cross-app access identity
    /// provider's token endpoint) goes only to addresses the server's
    /// [`AddressPolicy`] allows, resolved with the system resolver and connected to as
    /// checked.
    pub fn for_config(config: &OAuthConfig) -> Result<AuthHttp, AuthError> {
        Self::with_resolver(config, Arc::new(SystemResolver), None)
    }

    /// [`for_config`](Self::for_config) with another resolver, and with `policy` in place of
    /// `config.address_policy` or the one the server's addresses give (tests, and embedders
    /// that know the network).
    pub fn with_resolver(
        config: &OAuthConfig,
        resolver: Arc<dyn HostResolver>,
        policy: Option<AddressPolicy>,
    ) -> Result<AuthHttp, AuthError> {
        let mut configured = Vec::new();
        if let Grant::CrossAppAccess(xaa) = &config.grant {
            configured.push(xaa.idp_token_endpoint.origin());
        }
        let policy = policy.or(config.address_policy);
        let guard = AddressGuard::new(&config.server_url, configured, resolver, policy);
        let client = Self::builder()
            .dns_resolver(guard.pinned_addresses())
            .build()
            .map_err(Self::build_error)?;
        Ok(AuthHttp {
            client,
            guard: Some(Arc::new(guard)),
            resource_metadata_origins: config
                .resource_metadata_origins
                .iter()
                .map(Url::origin)
                .collect(),
        })
    }

    fn builder() -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
    }

    fn build_error(e: reqwest::Error) -> AuthError {
        AuthError::Http(format!("cannot create the OAuth HTTP client: {e}"))
    }

    /// Whether the configuration allows protected resource metadata at `url`'s origin besides
    /// the MCP server's own (`OAuthConfig::resource_metadata_origins`).
    pub fn allows_resource_metadata_at(&self, url: &Url) -> bool {
        self.resource_metadata_origins.contains(&url.origin())
    }

    /// GET `url` asking for JSON.
    pub async fn get_json(&self, url: &Url) -> Result<Fetched, AuthError> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        self.execute(reqwest::Method::GET, url, headers, None).await
    }

    /// POST a JSON body.
    pub async fn post_json(
        &self,
        url: &Url,
        body: &serde_json::Value,
    ) -> Result<Fetched, AuthError> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let body = serde_json::to_vec(body)
            .map_err(|e| AuthError::Http(format!("cannot encode a request: {e}")))?;
        self.execute(reqwest::Method::POST, url, headers, Some(body))
            .await
    }

    /// Sends one request (after [`check_url`] and, for an MCP server's client, the address
    /// check) and reads the whole answer under [`BODY_LIMIT`].
    pub async fn execute(
        &self,
        method: reqwest::Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<Vec<u8>>,
    ) -> Result<Fetched, AuthError> {
        check_url(url)?;
        if let Some(guard) = &self.guard {
            guard.admit(url).await?;
        }
        let shown = redact_url(url.as_str());
        let mut request = self.client.request(method, url.clone()).headers(headers);
        if let Some(body) = body {
            request = request.body(body);
        }
        let mut response = request.send().await.map_err(|e| {
            AuthError::Http(format!("request to {shown} failed: {}", e.without_url()))
        })?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            AuthError::Http(format!("reading from {shown} failed: {}", e.without_url()))
        })? {
            if body.len() + chunk.len() > BODY_LIMIT {
                return Err(AuthError::Http(format!(
                    "the answer from {shown} is larger than {BODY_LIMIT} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched {
            status,
            headers,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snippet_never_shows_a_secret_the_server_echoed() {
        let fetched = Fetched {
            status: 400,
            headers: HeaderMap::new(),
            body: br#"{"error":"invalid_client","client_secret":"SECRET-1","note":"Bearer SECRET-TOKEN-2"}"#
                .to_vec(),
        };
        let snippet = fetched.snippet();
        assert!(snippet.contains("invalid_client"), "{snippet}");
        assert!(!snippet.contains("SECRET"), "a secret leaked: {snippet}");
    }

    #[test]
    fn only_https_or_loopback_http() {
        for ok in [
            "https://auth.example.com/token",
            "http://127.0.0.1:8080/x",
            "http://[::1]:9/x",
            "http://localhost/x",
            "http://127.9.9.9/x",
        ] {
            assert!(parse_url(ok, "u").is_ok(), "{ok}");
        }
        for bad in [
            "http://auth.example.com/token",
            "http://10.0.0.1/x",
            "http://localhost.evil.com/x",
            "ftp://127.0.0.1/x",
            "file:///etc/passwd",
        ] {
            let e = parse_url(bad, "u").unwrap_err();
            assert!(matches!(e, AuthError::InsecureUrl { .. }), "{bad}: {e}");
            assert!(e.to_string().contains("https"), "{e}");
        }
    }

    #[test]
    fn a_text_that_is_not_a_url_is_named_as_such() {
        let e = parse_url("not a url", "token_endpoint").unwrap_err();
        assert!(matches!(e, AuthError::InvalidUrl(_)), "{e}");
        let text = e.to_string();
        assert!(
            text.starts_with("invalid OAuth URL: token_endpoint"),
            "{text}"
        );
        assert!(!text.contains("metadata"), "not a metadata failure: {text}");

        let huge = format!("https://x y/{}?token=secret", "a".repeat(1 << 20));
        let text = parse_url(&huge, "token_endpoint").unwrap_err().to_string();
        assert!(text.len() < 1_000, "{} bytes", text.len());
        assert!(!text.contains("secret"), "{text}");
    }
}
