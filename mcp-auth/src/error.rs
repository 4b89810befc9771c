//! [`AuthError`]: what went wrong in an OAuth flow, in words that name the step and the URL and
//! never a secret.

use mcp_core::{Error, ErrorKind};

/// An OAuth failure. Messages name the step, the URL (redacted) and the server's error code;
/// they never contain a token, code, verifier or client secret.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuthError {
    /// A URL that metadata discovery or a flow would follow is not a URL, or has no host.
    #[error("invalid OAuth URL: {0}")]
    InvalidUrl(String),
    /// A URL that metadata discovery or a flow would follow is not https (or http on loopback).
    #[error("refusing {url}: OAuth URLs must be https (or http on a loopback address)")]
    InsecureUrl {
        /// The URL, redacted.
        url: String,
    },
    /// A URL learned from a server resolves to an address its OAuth requests may not go to
    /// (see [`address_policy`](crate::address_policy)).
    #[error("refusing {url}: it resolves to {address}, {reason}")]
    RefusedAddress {
        /// The URL, redacted.
        url: String,
        /// The address that was refused.
        address: std::net::IpAddr,
        /// Its class and the rule that refuses it.
        reason: String,
    },
    /// The 401's `resource_metadata` is on another origin than the MCP server.
    #[error(
        "refusing the protected resource metadata URL {url} of the server's 401: it is not on \
         the server's origin {origin} (other origins can be allowed in the server entry's \
         oauth.resource_metadata_origins)"
    )]
    ForeignResourceMetadata {
        /// The URL, redacted.
        url: String,
        /// The MCP server's origin.
        origin: String,
    },
    /// Metadata could not be found or read.
    #[error("could not get the OAuth metadata: {0}")]
    Metadata(String),
    /// The protected resource metadata names another resource than the server.
    #[error("the protected resource metadata is for {advertised}, not for the server {server}; refusing to authorize")]
    ResourceMismatch {
        /// The `resource` in the metadata.
        advertised: String,
        /// The server's URL.
        server: String,
    },
    /// The authorization server metadata names another issuer than the one it was fetched for.
    #[error(
        "the authorization server metadata at {url} names the issuer {found}, expected {expected}"
    )]
    IssuerMismatch {
        /// Where the metadata was fetched.
        url: String,
        /// The issuer it should name.
        expected: String,
        /// The issuer it names.
        found: String,
    },
    /// The server lacks something the flow requires (e.g. PKCE S256).
    #[error("{0}")]
    Unsupported(String),
    /// Client registration failed.
    #[error("client registration failed: {0}")]
    Registration(String),
    /// The authorization callback does not belong to this flow or reports an error.
    #[error("authorization callback rejected: {0}")]
    Callback(String),
    /// The token endpoint refused a request.
    #[error("the token endpoint {endpoint} refused the {grant} request: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    TokenRefused {
        /// The token endpoint, redacted.
        endpoint: String,
        /// Which grant.
        grant: &'static str,
        /// The OAuth error code (`invalid_grant`, …).
        error: String,
        /// The server's `error_description`, if any.
        description: Option<String>,
    },
    /// A request to an OAuth endpoint failed on the way.
    #[error("{0}")]
    Http(String),
    /// There are no usable tokens and this client cannot start an interactive login.
    #[error("{0}")]
    NeedsLogin(String),
    /// The flow was given up (e.g. the step-up limit was reached).
    #[error("{0}")]
    GaveUp(String),
    /// The token store failed.
    #[error("token store: {0}")]
    Store(String),
    /// Invalid configuration (a key that does not parse, a redirect URI, client credentials
    /// that are not a header); a URL the flow would follow that is not one is
    /// [`AuthError::InvalidUrl`].
    #[error("invalid OAuth configuration: {0}")]
    Config(String),
}

impl AuthError {
    /// Whether the token endpoint asked for a DPoP proof with its nonce (`use_dpop_nonce`).
    pub fn is_use_dpop_nonce(&self) -> bool {
        matches!(self, AuthError::TokenRefused { error, .. } if error == crate::dpop::USE_DPOP_NONCE)
    }

    /// Whether a refused refresh token means "log in again" (`invalid_grant`).
    pub fn is_invalid_grant(&self) -> bool {
        matches!(self, AuthError::TokenRefused { error, .. } if error == "invalid_grant")
    }
}

impl From<crate::store::StoreError> for AuthError {
    fn from(e: crate::store::StoreError) -> Self {
        AuthError::Store(e.0)
    }
}

impl From<AuthError> for Error {
    fn from(e: AuthError) -> Self {
        let kind = match &e {
            AuthError::Http(_) => ErrorKind::Network,
            _ => ErrorKind::Auth,
        };
        Error::new(kind, e.to_string())
    }
}
