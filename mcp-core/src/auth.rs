//! The seam through which HTTP-based transports (Streamable HTTP, legacy SSE, WebSocket, gRPC)
//! get an `Authorization` value and report the server's challenges, without depending on an
//! OAuth implementation: the auth crate implements [`AuthProvider`]; configs with a static token
//! use [`StaticBearer`].

use std::fmt;

use async_trait::async_trait;

use crate::error::Error;

/// An `Authorization` header value. Its `Debug` and `Display` never show the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthorizationValue(String);

impl AuthorizationValue {
    /// Wraps a complete header value (e.g. `Bearer abc…`).
    pub fn new(value: impl Into<String>) -> Self {
        AuthorizationValue(value.into())
    }

    /// `Bearer <token>`.
    pub fn bearer(token: &str) -> Self {
        AuthorizationValue(format!("Bearer {token}"))
    }

    /// The value to put on the wire — the only way to read the secret.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AuthorizationValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = self.0.split_whitespace().next().unwrap_or("");
        write!(f, "AuthorizationValue({scheme} <redacted>)")
    }
}

impl fmt::Display for AuthorizationValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A URL as it may be shown in errors, logs and `Debug` output: without user info
/// (`user:password@`), query string and fragment, any of which may carry a key. Works on text
/// that is not a valid URL too (it never fails, and never shows more than it should).
///
/// ```
/// assert_eq!(
///     mcp_core::auth::redact_url("https://me:pw@api.example.com/mcp?key=s3cret#x"),
///     "https://<redacted>@api.example.com/mcp"
/// );
/// ```
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(at) => (&url[..at + 3], &url[at + 3..]),
        None => ("", url),
    };
    // A password may hold an unencoded `/`, `?` or `#`: any `@` at all means everything before
    // the last one may be user info. Showing too little is safe; showing too much is not.
    let (hidden, rest) = match rest.rfind('@') {
        Some(at) => ("<redacted>@", &rest[at + 1..]),
        None => ("", rest),
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    format!("{scheme}{hidden}{}", &rest[..end])
}

/// What the server answered when it refused a request's credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthChallenge {
    /// 401 (missing or invalid credentials) or 403 (e.g. `insufficient_scope`).
    pub status: u16,
    /// The `WWW-Authenticate` header, if any (carries `resource_metadata`, `scope`, `error`).
    pub www_authenticate: Option<String>,
}

/// Supplies credentials to a transport and hears the server's challenges.
#[async_trait]
pub trait AuthProvider: Send + Sync + 'static {
    /// The `Authorization` value for the next request, or `None` to send none. Called before
    /// every request, so a provider can refresh tokens ahead of expiry.
    async fn authorization(&self) -> Result<Option<AuthorizationValue>, Error>;

    /// The server refused the credentials. Returns `Ok(true)` when new credentials were
    /// obtained and the request should be retried once; `Ok(false)` to give up (the request
    /// fails with an `Auth` error).
    async fn on_challenge(&self, challenge: &AuthChallenge) -> Result<bool, Error>;
}

/// A fixed bearer token (from configuration or the environment). Challenges are final.
#[derive(Clone, Debug)]
pub struct StaticBearer {
    value: AuthorizationValue,
}

impl StaticBearer {
    /// Sends `Authorization: Bearer <token>`.
    pub fn new(token: &str) -> Self {
        StaticBearer {
            value: AuthorizationValue::bearer(token),
        }
    }
}

#[async_trait]
impl AuthProvider for StaticBearer {
    async fn authorization(&self) -> Result<Option<AuthorizationValue>, Error> {
        Ok(Some(self.value.clone()))
    }

    async fn on_challenge(&self, _challenge: &AuthChallenge) -> Result<bool, Error> {
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_user_info_query_and_fragment() {
        for (raw, shown) in [
            ("https://api.example.com/mcp", "https://api.example.com/mcp"),
            (
                "http://u:p@127.0.0.1:8080/mcp?token=abc",
                "http://<redacted>@127.0.0.1:8080/mcp",
            ),
            ("https://h/mcp#frag", "https://h/mcp"),
            ("https://u@h?k=v", "https://<redacted>@h"),
            ("not a url?secret=1", "not a url"),
            ("user:pw@host/path", "<redacted>@host/path"),
            (
                "https://user:abc/def+g==@host/mcp",
                "https://<redacted>@host/mcp",
            ),
            (
                "https://user:pa?ss#x@host/mcp",
                "https://<redacted>@host/mcp",
            ),
        ] {
            assert_eq!(redact_url(raw), shown, "{raw}");
        }
    }

    #[test]
    fn secrets_never_show_in_debug_or_display() {
        let v = AuthorizationValue::bearer("s3cr3t-token");
        assert_eq!(v.expose(), "Bearer s3cr3t-token");
        for shown in [
            format!("{v:?}"),
            format!("{v}"),
            format!("{:?}", StaticBearer::new("s3cr3t-token")),
        ] {
            assert!(!shown.contains("s3cr3t"), "{shown}");
            assert!(shown.contains("Bearer"), "{shown}");
        }
    }

    #[tokio::test]
    async fn a_static_bearer_gives_its_token_and_never_retries() {
        let auth = StaticBearer::new("t");
        assert_eq!(
            auth.authorization().await.unwrap().unwrap().expose(),
            "Bearer t"
        );
        let challenge = AuthChallenge {
            status: 401,
            www_authenticate: Some("Bearer".into()),
        };
        assert!(!auth.on_challenge(&challenge).await.unwrap());
    }
}
